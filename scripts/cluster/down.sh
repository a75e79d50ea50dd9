# Stops the local node and undoes everything it changed on the host, whatever state a crash left it in.
# shellcheck shell=bash

# Whether process $1 still runs. A zombie has exited: the node's processes are orphans once `up` ends,
# and the init that adopts them may reap them only seconds later (kill -0 still succeeds until then).
running() {
  local stat
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# Kills a process and waits up to $2 tenths of a second for it to go, then SIGKILL.
stop_pid() {
  local pid=$1 tenths=${2:-50} i
  running "$pid" || return 0
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < tenths; i++)); do running "$pid" || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

# Every cgroup folder of ours, deepest first.
our_cgroups() { find /sys/fs/cgroup/*/"$CGROUP_PARENT" -depth -type d 2>/dev/null || true; }

# Mount points under our state folder or in the runtime's folders, deepest first.
our_mounts() {
  awk -v s="$S" '{ m = $5; gsub(/\\040/, " ", m); if (index(m, s "/") == 1 || m ~ /^\/run\/netns\/cni-/ || m ~ /^\/var\/run\/netns\/cni-/ || m ~ /^\/run\/containerd\//) print m }' /proc/self/mountinfo \
    | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

cluster_down() {
  local started=$SECONDS name pid
  # 1. The kubelet first, so it restarts nothing; then every container process (they sit in our cgroups).
  [ -f "$S/pids/kubelet" ] && stop_pid "$(cat "$S/pids/kubelet")" 30
  local round cg
  for round in 1 2 3; do
    for cg in $(our_cgroups); do
      # shellcheck disable=SC2046
      [ -f "$cg/cgroup.procs" ] && kill -9 $(cat "$cg/cgroup.procs" 2>/dev/null) 2>/dev/null || true
    done
    sleep 0.2
  done
  # 2. Our own processes by recorded PID, then anything still in the node's namespace (container shims).
  for name in $PROCESSES; do
    [ -f "$S/pids/$name" ] || continue
    pid=$(cat "$S/pids/$name")
    stop_pid "$pid" 30
  done
  if [ -e "$NETNS_PATH" ]; then
    for round in 1 2 3 4 5; do
      pids=$(ip netns pids "$NETNS" 2>/dev/null || true)
      [ -z "$pids" ] && break
      # shellcheck disable=SC2086
      kill -9 $pids 2>/dev/null || true
      sleep 0.2
    done
  fi
  # 3. Mounts the kubelet and containerd made (volumes, rootfs overlays, Pod namespaces).
  local m
  while read -r m; do
    [ -n "$m" ] && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"; }
  done < <(our_mounts)
  # 4. The node's network namespace (its bridge, routes and iptables go with it) and the Pods' namespaces.
  [ -e "$NETNS_PATH" ] && { ip netns del "$NETNS" 2>/dev/null || umount -l "$NETNS_PATH" 2>/dev/null; rm -f "$NETNS_PATH"; }
  local f
  for f in /run/netns/cni-* /var/run/netns/cni-*; do [ -e "$f" ] && { umount -l "$f" 2>/dev/null; rm -f "$f"; }; done
  # 5. Cgroups, deepest first (a cgroup is removable once empty).
  for round in 1 2 3 4 5; do
    for cg in $(our_cgroups); do rmdir "$cg" 2>/dev/null || true; done
    [ -z "$(our_cgroups)" ] && break
    sleep 0.3
  done
  [ -z "$(our_cgroups)" ] || log "cgroups left: $(our_cgroups | tr '\n' ' ')"
  # 6. Kernel settings back to what they were before `up`.
  if [ -f "$S/host/sysctls" ]; then
    local key value
    while read -r key value; do
      [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || sysctl -qw "$key=$value" >/dev/null || log "could not restore $key=$value"
    done < "$S/host/sysctls"
  fi
  # 7. Folders the runtime made outside ours, if they were not there before.
  if [ -f "$S/host/absent-dirs" ]; then
    local d
    # `ip netns add` makes /run/netns a mount point of its own.
    while read -r d; do
      [ -n "$d" ] && [ -e "$d" ] || continue
      [ -L "$d" ] || ! mountpoint -q "$d" || umount "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || true
      rm -rf "$d"
    done < "$S/host/absent-dirs"
  fi
  rm -rf "$S/run" "$S/pids" "$S/host" "$S/kubeconfig" "$S/etc" "$S/pki"
  log "down in $((SECONDS - started)) s"
}
