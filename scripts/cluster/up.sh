# Starts the local node: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet,
# kube-proxy and a DNS stand-in, all inside one network namespace of their own.
# shellcheck shell=bash

# Starts $2... inside the node's namespace in the background, logging to logs/$1, PID in pids/$1.
start_in_node() {
  local name=$1
  shift
  # 8>&-: the node's processes must not hold cluster.sh's lock, or the next `down` would wait on them forever.
  nohup nsenter --net="$NETNS_PATH" -- "$@" >"$S/logs/$name.log" 2>&1 8>&- &
  echo $! > "$S/pids/$name"
}

# Waits up to $2 seconds for command $3... to succeed; $1 names what is awaited.
await() {
  local what=$1 seconds=$2 i
  shift 2
  for ((i = 0; i < seconds * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  die "$what not ready after $seconds s (logs: $S/logs)"
}

preflight() {
  [ "$(id -u)" = 0 ] || die "the local node needs root (it creates a network namespace, cgroups and mounts); run it as root"
  local missing=() p
  for p in containerd runc containernetworking-plugins dnsmasq-base iptables iproute2 openssl curl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" = 0 ] || die "missing packages: ${missing[*]}. Run scripts/provision.sh as root, or: apt-get install -y --no-install-recommends ${missing[*]}"
  local b
  for b in kubeApiserver kubeControllerManager kubeScheduler kubelet kubeProxy kubectl etcd; do binary "$b" >/dev/null; done
}

# What of the host the node needs free; checked once a crashed node's own port forward is gone.
preflight_host() {
  # The only host address the node uses: say who holds it rather than fail later.
  local holder
  holder=$(ss -Hltnp "sport = :$HOST_PORT" 2>/dev/null | grep -o 'users:.*' || true)
  if [ -n "$holder" ] || ss -Hltn "sport = :$HOST_PORT" 2>/dev/null | grep -q .; then
    die "127.0.0.1:$HOST_PORT is in use (${holder:-held by a process in another namespace}); stop it or set KONDUCTOR_CLUSTER_PORT"
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "a link named $BRIDGE exists in the host's namespace ($(ip -o link show "$BRIDGE" | cut -d' ' -f2-4)); the node makes its bridge only inside its own namespace, so remove that one (ip link del $BRIDGE)"
  fi
}

record_host() {
  mkdir -p "$S/host"
  local key d
  : > "$S/host/sysctls"
  for key in $KERNEL_SYSCTLS; do echo "$key $(sysctl -n "$key")" >> "$S/host/sysctls"; done
  : > "$S/host/absent-dirs"
  for d in $OUTSIDE_DIRS; do [ -e "$d" ] || echo "$d" >> "$S/host/absent-dirs"; done
}

make_namespace() {
  ip netns add "$NETNS" || die "could not create network namespace $NETNS"
  in_node ip link set lo up
  in_node ip link add "$BRIDGE" type bridge
  in_node ip addr add "$NODE_IP/24" dev "$BRIDGE"
  in_node ip link set "$BRIDGE" up
  # Service addresses are on the bridge's side, so the API server's own calls to Services (webhooks) are
  # routed there and kube-proxy's rules translate them; there is no default route.
  in_node ip route add "$SERVICE_SUBNET" dev "$BRIDGE"
}

make_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h" ] || continue
    mkdir -p "$h$CGROUP_PARENT"
    if [ -f "${h}cpuset.cpus" ]; then
      cat "${h}cpuset.cpus" > "$h$CGROUP_PARENT/cpuset.cpus"
      cat "${h}cpuset.mems" > "$h$CGROUP_PARENT/cpuset.mems"
    fi
  done
}

# The kubelet sets kernel-wide panic and memory settings when it starts; they would make an oops panic this
# shared machine. They are put back as soon as they change, for as long as the node runs.
start_sysctl_guard() {
  nohup bash -c '
    while :; do
      while read -r key value; do
        [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || sysctl -qw "$key=$value" >/dev/null 2>&1
      done < "$1"
      sleep 0.5
    done' sysctl-guard "$S/host/sysctls" >"$S/logs/sysctl-guard.log" 2>&1 8>&- &
  echo $! > "$S/pids/sysctl-guard"
}

# Builds (or finds cached) the images scripts/images/images.mjs makes for arguments $@, and imports them.
import_images() {
  local list ctr=(ctr --address "$S/run/containerd/containerd.sock" -n k8s.io)
  list=$(node "$REPO_ROOT/scripts/images/images.mjs" "$@" 2>>"$S/logs/images.log") \
    || die "building images failed: see $S/logs/images.log (scripts/images/images.mjs builds them)"
  await containerd 30 "${ctr[@]}" version
  local archive
  for archive in $(printf '%s' "$list" | sed -n 's/.*"archive": "\(.*\)".*/\1/p'); do
    "${ctr[@]}" images import --no-unpack=false "$archive" >>"$S/logs/images.log" 2>&1 || die "ctr could not import $archive"
  done
}

cluster_up() {
  local started=$SECONDS
  preflight
  if [ -e "$NETNS_PATH" ] || [ -d "$S/pids" ] || [ -d "$S/host" ]; then
    log "a previous node was not taken down; cleaning up first"
    cluster_down
  fi
  preflight_host
  # From here on a failed `up` leaves nothing behind; a refusal above had changed nothing.
  trap 'status=$?; if [ $status != 0 ]; then log "up failed; taking down what started"; cluster_down; fi' EXIT
  rm -rf "$S/logs"
  mkdir -p "$S/logs" "$S/pids"
  record_host
  make_namespace
  make_cgroups
  write_pki
  write_configs
  start_sysctl_guard
  start_in_node etcd "$(binary etcd)" --name=node --data-dir="$S/run/etcd" \
    --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
    --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
    --initial-cluster=node=http://127.0.0.1:2380 --log-level=warn --logger=zap
  start_in_node containerd containerd --config "$S/etc/containerd.toml"
  start_in_node kube-apiserver "$(binary kubeApiserver)" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --advertise-address="$NODE_IP" --secure-port=6443 --insecure-port=0 \
    --tls-cert-file="$S/pki/apiserver.crt" --tls-private-key-file="$S/pki/apiserver.key" --client-ca-file="$S/pki/ca.crt" \
    --token-auth-file="$S/pki/tokens.csv" --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction,ServiceAccount \
    --service-account-key-file="$S/pki/sa.pub" --service-account-signing-key-file="$S/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range="$SERVICE_SUBNET" \
    --allow-privileged=true --profiling=false \
    --kubelet-certificate-authority="$S/pki/ca.crt" --kubelet-preferred-address-types=InternalIP
  # Images import while the API server starts.
  import_images &
  local importer=$!
  await "the API server" 60 in_node curl -sf --cacert "$S/pki/ca.crt" -H "Authorization: Bearer $(cat "$S/pki/admin.token")" "https://$NODE_IP:6443/readyz"
  start_in_node forward-node node "$CLUSTER_SCRIPTS/forward.mjs" --listen "unix:$S/run/apiserver.sock" --connect "tcp:$NODE_IP:6443"
  nohup node "$CLUSTER_SCRIPTS/forward.mjs" --listen "tcp:127.0.0.1:$HOST_PORT" --connect "unix:$S/run/apiserver.sock" >"$S/logs/forward-host.log" 2>&1 8>&- &
  echo $! > "$S/pids/forward-host"
  start_in_node kube-controller-manager "$(binary kubeControllerManager)" --kubeconfig="$S/etc/admin.kubeconfig" \
    --service-account-private-key-file="$S/pki/sa.key" --root-ca-file="$S/pki/ca.crt" \
    --use-service-account-credentials=true --controllers='*' --leader-elect=false --port=0 --secure-port=0 \
    --cluster-cidr=10.244.0.0/16 --allocate-node-cidrs=false
  start_in_node kube-scheduler "$(binary kubeScheduler)" --kubeconfig="$S/etc/admin.kubeconfig" --leader-elect=false --port=0 --secure-port=0
  start_in_node dnsmasq dnsmasq --keep-in-foreground --no-resolv --no-hosts --hostsdir="$S/run/dns" \
    --listen-address="$NODE_IP" --bind-interfaces --port=53 --address=/#/ --domain-needed --user=root \
    --pid-file="$S/run/dnsmasq.pid" --log-facility=-
  start_in_node dns-sync bash "$CLUSTER_SCRIPTS/dns-sync.sh" "$(binary kubectl)" "$S/etc/admin.kubeconfig" "$S/run/dns"
  wait "$importer" || die "importing the node's images failed (logs: $S/logs/images.log)"
  start_in_node kubelet "$(binary kubelet)" --config="$S/etc/kubelet.yaml" --kubeconfig="$S/etc/node.kubeconfig" \
    --container-runtime=remote --container-runtime-endpoint="unix://$S/run/containerd/containerd.sock" \
    --image-service-endpoint="unix://$S/run/containerd/containerd.sock" \
    --root-dir="$S/run/kubelet" --cert-dir="$S/run/kubelet/pki" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
    --pod-infra-container-image=k8s.gcr.io/pause:3.2 --v=1
  start_in_node kube-proxy "$(binary kubeProxy)" --kubeconfig="$S/etc/admin.kubeconfig" --proxy-mode=iptables \
    --cluster-cidr="$POD_SUBNET" --hostname-override="$NODE_NAME" \
    --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 \
    --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256
  await "the node" 90 node_ready
  log "node $NODE_NAME Ready in $((SECONDS - started)) s; kubeconfig: $S/kubeconfig"
  printf '%s\n' "$S/kubeconfig"
}

node_ready() {
  [ "$(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
