# Shared by the local node's scripts: where its state lives and how its processes are named.
# shellcheck shell=bash

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }

CLUSTER_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CLUSTER_SCRIPTS/../.." && pwd)
CACHE_ROOT="${KONDUCTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/konductor}"
# Everything the node writes: configs, certificates, data, logs, sockets. Nothing of it outside, but for
# what the kernel keeps (the namespace, cgroups, mounts, sysctls), which `down` undoes.
S="${KONDUCTOR_CLUSTER_DIR:-$CACHE_ROOT/cluster}"
# `down` deletes folders under $S: refuse anything that is not a folder of its own.
case "$S" in
  /*/*) ;;
  *) printf '[cluster] error: KONDUCTOR_CLUSTER_DIR=%s must be an absolute path at least two levels deep (a folder for the node alone)\n' "$S" >&2; exit 1 ;;
esac
S="${S%/}"
# The node lives in this network namespace: its bridge, Pod and Service addresses exist nowhere else.
NETNS=konductor-node
NETNS_PATH=/run/netns/$NETNS
NODE_NAME=konductor-node
NODE_IP=10.244.0.1
POD_SUBNET=10.244.0.0/24
SERVICE_SUBNET=10.0.0.0/24
API_SERVICE_IP=10.0.0.1
BRIDGE=knode0
# The one host address the node uses: the forward to its API server, on loopback.
HOST_PORT="${KONDUCTOR_CLUSTER_PORT:-16443}"
# Pods' cgroups live under this parent in every hierarchy, so `down` finds and removes exactly ours.
CGROUP_PARENT=konductor-node
# Kernel-wide settings the kubelet changes at start (the rest of its settings are per namespace).
KERNEL_SYSCTLS="kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
# Folders the runtime or CNI write outside the state folder; removed at `down` only if `up` created them.
OUTSIDE_DIRS="/run/containerd /var/lib/cni /var/lib/kubelet /run/netns /var/run/netns /etc/cni"
# Processes, in the order `down` stops them (node first, API server and its store last).
PROCESSES="sysctl-guard dns-sync dnsmasq kubelet kube-proxy kube-scheduler kube-controller-manager forward-host forward-node kube-apiserver etcd containerd"

in_node() { nsenter --net="$NETNS_PATH" -- "$@"; }

binary() {
  local key=$1 record="$CACHE_ROOT/binaries.json" value
  [ -f "$record" ] || die "no $record: run scripts/provision.sh (as root) first"
  value=$(sed -n "s/.*\"$key\": *\"\\([^\"]*\\)\".*/\\1/p" "$record")
  if [ -z "$value" ] || [ ! -x "$value" ]; then
    # Not recorded (the record was rewritten by a provisioning that did not want it): the newest cached build.
    local name
    name=$(printf '%s' "$key" | sed -E 's/([A-Z])/-\1/g' | tr '[:upper:]' '[:lower:]')
    value=$(ls -1d "$CACHE_ROOT/$name"/*/"$name" 2>/dev/null | sort -V | tail -n1 || true)
  fi
  [ -n "$value" ] && [ -x "$value" ] || die "$record names no $key binary: run scripts/provision.sh (as root), which builds it"
  printf '%s\n' "$value"
}

kubectl_admin() { "$(binary kubectl)" --kubeconfig "$S/kubeconfig" "$@"; }
