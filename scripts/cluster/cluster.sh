#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine, for the end-to-end specs and for people:
#   up      start it (cleaning up first after a crash or a killed run); prints the kubeconfig path
#   down    stop it and put the host back as it was: no process, mount, cgroup, network namespace, iptables
#           rule or changed kernel setting left
#   load    build an image with scripts/images/images.mjs (same arguments) and load it into the node
#   env     print `export KUBECONFIG=...`
#   status  say whether it runs
# Needs root and what scripts/provision.sh installs and builds; images come from scripts/images/images.mjs.
# The node's addresses exist only inside its own network namespace (konductor-node); the host reaches the
# API server through 127.0.0.1:$KONDUCTOR_CLUSTER_PORT (default 16443). State: $KONDUCTOR_CLUSTER_DIR
# (default ~/.cache/konductor/cluster).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=down.sh
. "$CLUSTER_SCRIPTS/down.sh"
# shellcheck source=config.sh
. "$CLUSTER_SCRIPTS/config.sh"
# shellcheck source=up.sh
. "$CLUSTER_SCRIPTS/up.sh"

# Before touching the state folder, which another user may not reach: say what is wrong instead.
case "${1:-}" in
  up) [ "$(id -u)" = 0 ] || die "the local node needs root (it creates a network namespace, cgroups and mounts); run it as root" ;;
  down) [ "$(id -u)" = 0 ] || die "taking the local node down needs root" ;;
esac

# One `up` or `down` at a time.
mkdir -p "$S"
exec 8>"$S/.lock"

case "${1:-}" in
  up)
    flock 8
    cluster_up
    trap - EXIT
    ;;
  down)
    flock 8
    cluster_down
    ;;
  load)
    # Builds an image and loads it into the running node, e.g. load --project DIR --tag my-operator:0.1.0
    [ -S "$S/run/containerd/containerd.sock" ] || die "no local node is up (npm run cluster -- up)"
    shift
    import_images "$@"
    ;;
  env)
    [ -f "$S/kubeconfig" ] || die "no local node is up (npm run cluster -- up)"
    printf 'export KUBECONFIG=%s\n' "$S/kubeconfig"
    ;;
  status)
    if [ -f "$S/kubeconfig" ] && node_ready; then echo "up: node $NODE_NAME Ready, KUBECONFIG=$S/kubeconfig"; else echo "down"; exit 3; fi
    ;;
  *)
    die "usage: cluster.sh up | down | load [--project DIR --tag NAME:TAG] | env | status"
    ;;
esac
