#!/usr/bin/env bash
# Provisions everything Konductor's tests and demo need on a Debian bookworm machine:
#   - etcd (Debian's etcd-server / etcd-client), wget (restore Pods download backups with it) and curl
#   - kube-apiserver and kube-controller-manager, built together from Debian's `kubernetes` source package
#     (one unpacked tree, one Go build cache) and cached per user and version
#   - kubectl from Debian's `kubernetes-client` (same source and version as the kube-apiserver), extracted
#     from its .deb into the per-user cache, never installed: a kubectl already on the machine is left alone
# Idempotent: a second run with the cache present only checks and prints paths.
# As root it installs missing apt packages; as non-root it prints what to install and stops.
#
# Overrides (checked before building anything):
#   KUBEBUILDER_ASSETS        a folder holding `kube-apiserver` and `etcd` (envtest layout), and
#                             `kube-controller-manager` if wanted
#   KONDUCTOR_KUBE_APISERVER  path to a kube-apiserver binary
#   KONDUCTOR_KUBE_CONTROLLER_MANAGER  path to a kube-controller-manager binary (1.20, or one minor older
#                             than the kube-apiserver; never newer)
#   KONDUCTOR_WITH_CONTROLLER_MANAGER  1: provide kube-controller-manager (the test control plane's
#                             `controllerManager: true` option runs it); 0: skip it. Default: 1 in
#                             Konductor's own repository (its tests use it), 0 from an installed package
#   KONDUCTOR_ETCD            path to an etcd binary
#   KONDUCTOR_KUBECTL         path to a kubectl binary
#   KONDUCTOR_CACHE_DIR       cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/konductor)
#   KONDUCTOR_REBUILD         non-empty: rebuild the Kubernetes binaries and download kubectl again
set -euo pipefail

log() { printf '[provision] %s\n' "$*" >&2; }
die() { printf '[provision] error: %s\n' "$*" >&2; exit 1; }

CACHE_ROOT="${KONDUCTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/konductor}"
# promtool checks the bundled Prometheus operator's configs and kubectl applies the compatibility suite's
# manifests in this repository's tests. Run from an installed package (node_modules/konductor/scripts),
# the script provisions the test control plane only.
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WANT_PROMTOOL=1
WANT_KUBECTL=1
WANT_KCM=1
WANT_NODE=1
case "$SCRIPT_DIR" in */node_modules/*) WANT_PROMTOOL=0; WANT_KUBECTL=0; WANT_KCM=0; WANT_NODE=0 ;; esac
case "${KONDUCTOR_WITH_NODE:-}" in
  '') ;;
  1) WANT_NODE=1; WANT_KCM=1; WANT_KUBECTL=1 ;;
  0) WANT_NODE=0 ;;
  *) die "KONDUCTOR_WITH_NODE must be 1 or 0, not '$KONDUCTOR_WITH_NODE'" ;;
esac
case "${KONDUCTOR_WITH_CONTROLLER_MANAGER:-}" in
  '') ;;
  1) WANT_KCM=1 ;;
  0) WANT_KCM=0 ;;
  *) die "KONDUCTOR_WITH_CONTROLLER_MANAGER must be 1 or 0, not '$KONDUCTOR_WITH_CONTROLLER_MANAGER'" ;;
esac
IS_ROOT=0; [ "$(id -u)" = 0 ] && IS_ROOT=1

APT_UPDATED=0
# Only root can refresh apt's lists; as non-root the lists already there are used.
apt_update_once() {
  if [ "$APT_UPDATED" = 0 ] && [ "$IS_ROOT" = 1 ]; then
    log "apt-get update"
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
}

# Installs the packages not yet installed (root) or prints the command to do it (non-root).
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" = 0 ] && return 0
  if [ "$IS_ROOT" = 1 ]; then
    apt_update_once
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    die "missing packages: ${missing[*]}. Run: sudo apt-get update && sudo apt-get install -y ${missing[*]}  (or rerun this script as root)"
  fi
}

# A deb-src entry mirroring the existing deb entries, so `apt-get source` works.
ensure_deb_src() {
  local src=/etc/apt/sources.list.d/konductor-deb-src.sources
  [ -f "$src" ] && return 0
  if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; then
    return 0
  fi
  [ "$IS_ROOT" = 1 ] || die "no deb-src entry for apt; add one mirroring your deb entries (as root), then rerun"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$src"
  else
    grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > /etc/apt/sources.list.d/konductor-deb-src.list
    touch "$src"
  fi
  APT_UPDATED=0
}

# ---- etcd ------------------------------------------------------------------
resolve_etcd() {
  if [ -n "${KONDUCTOR_ETCD:-}" ]; then [ -x "$KONDUCTOR_ETCD" ] || die "KONDUCTOR_ETCD=$KONDUCTOR_ETCD is not executable"; echo "$KONDUCTOR_ETCD"; return; fi
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then echo "$KUBEBUILDER_ASSETS/etcd"; return; fi
  ensure_packages etcd-server etcd-client wget curl
  command -v etcd || die "etcd not found after installing etcd-server"
}

# ---- kube-apiserver and kube-controller-manager -------------------------------------
# Both come from the same Debian source package and are built from one unpacked tree with one Go build
# cache, so the second costs a fraction of the first. The controller manager must never be newer than
# the API server, so they are always taken from the same version.
KUBE_SRC_PKG=kubernetes

# The binary an override names for component $1 (override variable $2), or nothing.
kube_override() {
  local name=$1 var=$2
  local value=${!var:-}
  if [ -n "$value" ]; then [ -x "$value" ] || die "$var=$value is not executable"; echo "$value"; return; fi
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$name" ]; then echo "$KUBEBUILDER_ASSETS/$name"; fi
  return 0
}

# The newest cached build of component $1, or nothing.
kube_cached() { ls -1d "$CACHE_ROOT/$1"/*/"$1" 2>/dev/null | sort -V | tail -n1 || true; }

# The components (of kube-apiserver, kube-controller-manager) no override provides.
kube_wanted() {
  [ -z "$(kube_override kube-apiserver KONDUCTOR_KUBE_APISERVER)" ] && echo kube-apiserver
  [ "$WANT_KCM" = 1 ] && [ -z "$(kube_override kube-controller-manager KONDUCTOR_KUBE_CONTROLLER_MANAGER)" ] && echo kube-controller-manager
  if [ "$WANT_NODE" = 1 ]; then
    [ -z "$(kube_override kube-scheduler KONDUCTOR_KUBE_SCHEDULER)" ] && echo kube-scheduler
    [ -z "$(kube_override kubelet KONDUCTOR_KUBELET)" ] && echo kubelet
    [ -z "$(kube_override kube-proxy KONDUCTOR_KUBE_PROXY)" ] && echo kube-proxy
  fi
  return 0
}

# True when every wanted component has a cached build of one same version (checked without apt).
kube_cache_complete() {
  [ "$#" = 0 ] && return 0
  [ -z "${KONDUCTOR_REBUILD:-}" ] || return 1
  local versions=() name bin
  for name in "$@"; do
    bin=$(kube_cached "$name")
    [ -n "$bin" ] && [ -x "$bin" ] || return 1
    versions+=("$(basename "$(dirname "$bin")")")
  done
  [ "$(printf '%s\n' "${versions[@]}" | sort -u | wc -l)" = 1 ]
}

# Sets APISERVER_BIN and KCM_BIN (empty when not wanted), building what the cache lacks.
resolve_kube() {
  APISERVER_BIN=$(kube_override kube-apiserver KONDUCTOR_KUBE_APISERVER)
  KCM_BIN=
  [ "$WANT_KCM" = 1 ] && KCM_BIN=$(kube_override kube-controller-manager KONDUCTOR_KUBE_CONTROLLER_MANAGER)
  SCHEDULER_BIN= KUBELET_BIN= PROXY_BIN=
  if [ "$WANT_NODE" = 1 ]; then
    SCHEDULER_BIN=$(kube_override kube-scheduler KONDUCTOR_KUBE_SCHEDULER)
    KUBELET_BIN=$(kube_override kubelet KONDUCTOR_KUBELET)
    PROXY_BIN=$(kube_override kube-proxy KONDUCTOR_KUBE_PROXY)
  fi
  local wanted=()
  mapfile -t wanted < <(kube_wanted)
  [ "${#wanted[@]}" = 0 ] && return 0
  # Fast path: cached builds (the version key needs apt metadata, which we avoid when cached).
  local version=
  if ! kube_cache_complete "${wanted[@]}"; then build_kube "${wanted[@]}"; version=$KUBE_VERSION; fi
  # After a build both come from the version just built, even when the cache holds another one.
  local name bin
  for name in "${wanted[@]}"; do
    if [ -n "$version" ]; then bin="$CACHE_ROOT/$name/$version/$name"; else bin=$(kube_cached "$name"); fi
    case "$name" in
      kube-apiserver) APISERVER_BIN=$bin ;;
      kube-controller-manager) KCM_BIN=$bin ;;
      kube-scheduler) SCHEDULER_BIN=$bin ;;
      kubelet) KUBELET_BIN=$bin ;;
      kube-proxy) PROXY_BIN=$bin ;;
    esac
  done
  return 0
}

# Builds, at the version apt offers (set in KUBE_VERSION), each named component whose build of that
# version is not cached (all of them with KONDUCTOR_REBUILD).
#
# The unpacked tree is kept in the cache ($CACHE_ROOT/build/<version>/src) with its Go build cache: the
# Kubernetes build scripts put GOCACHE inside the tree (hack/lib/golang.sh overrides any GOCACHE given), and
# Go's cache keys hold the tree's absolute path, so a later build of more components reuses what an earlier
# one compiled only when it runs in the same tree at the same path.
KUBE_VERSION=
build_kube() {
  ensure_packages golang-go rsync make dpkg-dev golang-github-modern-go-reflect2-dev ca-certificates
  ensure_deb_src
  apt_update_once
  local version
  version=$(apt-cache showsrc "$KUBE_SRC_PKG" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
  [ -n "$version" ] || die "apt has no source package '$KUBE_SRC_PKG' (is the deb-src entry present?)"
  KUBE_VERSION=$version
  local names=() name
  for name in "$@"; do
    if [ -n "${KONDUCTOR_REBUILD:-}" ] || [ ! -x "$CACHE_ROOT/$name/$version/$name" ]; then names+=("$name"); fi
  done
  [ "${#names[@]}" = 0 ] && return 0
  local root="$CACHE_ROOT/build/$version"
  mkdir -p "$root"
  # One build at a time per version: a second provisioning waits, then finds the binaries cached.
  exec 9>"$root/.lock"
  flock 9
  local tree="$root/src"
  if [ ! -f "$tree/.konductor-unpacked" ]; then
    unpack_kube_source "$root" "$version"
  fi
  local started=$SECONDS
  log "building ${names[*]} from Debian source $KUBE_SRC_PKG $version in $tree (the first build about 25 CPU-minutes, some 15 minutes on 2 idle cores; later ones reuse its compiled packages)"
  mkdir -p "$root/gopath/src/k8s.io"
  ln -sfn "$tree" "$root/gopath/src/k8s.io/kubernetes"
  local what=()
  for name in "${names[@]}"; do what+=("cmd/$name"); done
  # One make: the packages the programs share are compiled once. KUBE_STATIC_OVERRIDES makes the kubelet
  # static like the others (it is cgo by default), so it shares their compiled packages and runs anywhere.
  ( cd "$root/gopath/src/k8s.io/kubernetes" && GOPATH="$root/gopath" GOFLAGS= KUBE_STATIC_OVERRIDES=kubelet \
      make WHAT="${what[*]}" >"$root/build.log" 2>&1 ) \
    || { tail -n 40 "$root/build.log" >&2; die "build of ${names[*]} failed (log: $root/build.log)"; }
  local bin out_dir
  for name in "${names[@]}"; do
    bin=$(find "$tree/_output" -type f -name "$name" -perm -u+x | head -n1)
    [ -n "$bin" ] || die "build finished but no $name binary found"
    out_dir="$CACHE_ROOT/$name/$version"
    mkdir -p "$out_dir"
    cp "$bin" "$out_dir/$name.tmp" && mv "$out_dir/$name.tmp" "$out_dir/$name"
  done
  log "built ${names[*]} in $((SECONDS - started)) s"
  flock -u 9
}

# Unpacks Debian's source for $2 into $1/src, patched to build with Debian's Go.
unpack_kube_source() {
  local root=$1 version=$2 work
  work=$(mktemp -d "$root/unpack.XXXXXX")
  ( cd "$work" && apt-get source -qq --download-only "$KUBE_SRC_PKG=$version" >/dev/null 2>&1 && dpkg-source -x --no-check ./*.dsc src >/dev/null ) \
    || { rm -rf "$work"; die "apt-get source $KUBE_SRC_PKG failed"; }
  # Go >= 1.18 changed map internals; reflect2 1.0.1 crashes the server on custom resources. Use Debian's 1.0.2.
  local r2=/usr/share/gocode/src/github.com/modern-go/reflect2
  [ -d "$r2" ] || { rm -rf "$work"; die "$r2 missing (package golang-github-modern-go-reflect2-dev)"; }
  rm -rf "$work/src/vendor/github.com/modern-go/reflect2"
  cp -r "$r2" "$work/src/vendor/github.com/modern-go/reflect2"
  touch "$work/src/.konductor-unpacked"
  rm -rf "$root/src"
  mv "$work/src" "$root/src"
  rm -rf "$work"
}

# ---- kubectl -------------------------------------------------------------------
# Debian's kubernetes-client is built from the same source package as the kube-apiserver above, so client
# and server agree on version (kubectl supports one minor version of skew; a newer kubectl on PATH would
# validate differently). The .deb is downloaded and unpacked into the cache, which needs no root.
KUBECTL_PKG=kubernetes-client
kubectl_cached() { ls -1d "$CACHE_ROOT"/kubectl/*/kubectl 2>/dev/null | sort -V | tail -n1 || true; }
kubectl_in_apt() { apt-cache show "$KUBECTL_PKG" >/dev/null 2>&1; }

resolve_kubectl() {
  if [ -n "${KONDUCTOR_KUBECTL:-}" ]; then [ -x "$KONDUCTOR_KUBECTL" ] || die "KONDUCTOR_KUBECTL=$KONDUCTOR_KUBECTL is not executable"; echo "$KONDUCTOR_KUBECTL"; return; fi
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kubectl" ]; then echo "$KUBEBUILDER_ASSETS/kubectl"; return; fi
  local cached
  cached=$(kubectl_cached)
  if [ -n "$cached" ] && [ -x "$cached" ] && [ -z "${KONDUCTOR_REBUILD:-}" ]; then echo "$cached"; return; fi
  download_kubectl
}

download_kubectl() {
  command -v dpkg-deb >/dev/null || die "dpkg-deb not found (package dpkg)"
  if ! kubectl_in_apt; then
    [ "$IS_ROOT" = 1 ] || die "apt does not know $KUBECTL_PKG. Run: sudo apt-get update  (then rerun this script)"
    apt_update_once
  fi
  local version
  version=$(apt-cache show "$KUBECTL_PKG" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
  [ -n "$version" ] || die "apt has no package '$KUBECTL_PKG' (Debian bookworm ships it)"
  local out_dir="$CACHE_ROOT/kubectl/$version"
  KUBECTL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/konductor-kubectl.XXXXXX")
  trap 'rm -rf "$KUBECTL_DIR"' EXIT
  log "downloading $KUBECTL_PKG $version (kubectl only; nothing is installed)"
  ( cd "$KUBECTL_DIR" && apt-get download -qq "$KUBECTL_PKG=$version" >/dev/null 2>&1 ) || die "apt-get download $KUBECTL_PKG=$version failed"
  dpkg-deb -x "$KUBECTL_DIR"/"$KUBECTL_PKG"_*.deb "$KUBECTL_DIR/root" || die "dpkg-deb could not unpack the $KUBECTL_PKG package"
  local bin
  bin=$(find "$KUBECTL_DIR/root" -type f -name kubectl -perm -u+x | head -n1)
  [ -n "$bin" ] || die "the $KUBECTL_PKG package holds no kubectl binary"
  mkdir -p "$out_dir"
  cp "$bin" "$out_dir/kubectl.tmp" && mv "$out_dir/kubectl.tmp" "$out_dir/kubectl"
  echo "$out_dir/kubectl"
}

# The local node (scripts/cluster.sh): container runtime, CNI plugins, DNS stand-in, kube-proxy's iptables,
# and what scripts/images builds images from (busybox, gcc for pause, dpkg-deb/apt-get download).
NODE_PACKAGES="containerd runc containernetworking-plugins dnsmasq-base iptables iproute2 busybox-static gcc libc6-dev binutils"

# As non-root nothing can be installed: name everything missing at once, with the exact commands.
preflight_non_root() {
  [ "$IS_ROOT" = 1 ] && return 0
  local wanted=() missing=() steps=()
  [ "$WANT_PROMTOOL" = 1 ] && wanted+=(prometheus)
  if [ -z "${KONDUCTOR_ETCD:-}" ] && ! { [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; }; then
    wanted+=(etcd-server etcd-client wget curl)
  fi
  local needs_build=0 kube=()
  mapfile -t kube < <(kube_wanted)
  kube_cache_complete ${kube[@]+"${kube[@]}"} || needs_build=1
  [ "$WANT_NODE" = 1 ] && wanted+=($NODE_PACKAGES)
  [ "$needs_build" = 1 ] && wanted+=(golang-go rsync make dpkg-dev golang-github-modern-go-reflect2-dev ca-certificates)
  for p in ${wanted[@]+"${wanted[@]}"}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  local needs_src=0
  if [ "$needs_build" = 1 ] && ! { [ -f /etc/apt/sources.list.d/konductor-deb-src.sources ] || grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; }; then
    needs_src=1
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      steps+=("sudo sh -c \"sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > /etc/apt/sources.list.d/konductor-deb-src.sources\"")
    else
      steps+=("sudo sh -c \"grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > /etc/apt/sources.list.d/konductor-deb-src.list\"")
    fi
  fi
  # kubectl needs no package installed, only apt's package lists (apt-get download reads them).
  local needs_lists=0
  if [ "$WANT_KUBECTL" = 1 ] && [ -z "${KONDUCTOR_KUBECTL:-}" ] && ! { [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kubectl" ]; } \
    && { [ -n "${KONDUCTOR_REBUILD:-}" ] || [ -z "$(kubectl_cached)" ]; } && ! kubectl_in_apt; then
    needs_lists=1
  fi
  [ "${#missing[@]}" = 0 ] && [ "${#steps[@]}" = 0 ] && [ "$needs_lists" = 0 ] && return 0
  steps+=("sudo apt-get update")
  [ "${#missing[@]}" -gt 0 ] && steps+=("sudo apt-get install -y --no-install-recommends ${missing[*]}")
  local lacks=()
  [ "${#missing[@]}" -gt 0 ] && lacks+=("packages ${missing[*]}")
  [ "$needs_src" = 1 ] && lacks+=("an apt deb-src entry (to build ${kube[*]} from Debian's source)")
  [ "$needs_lists" = 1 ] && lacks+=("apt package lists naming $KUBECTL_PKG (kubectl is downloaded from them)")
  log "not root, and this machine lacks what the tests need: ${lacks[*]}"
  log "run these, then rerun this script (or rerun it as root, which does the same):"
  for step in "${steps[@]}"; do printf '    %s\n' "$step" >&2; done
  exit 1
}
preflight_non_root

# promtool validates generated Prometheus configs in tests (Debian's build lacks Kubernetes SD).
if [ "$WANT_PROMTOOL" = 1 ]; then
  ensure_packages prometheus
  command -v promtool >/dev/null || die "promtool not found after installing prometheus"
fi

ETCD_BIN=$(resolve_etcd)
[ "$WANT_NODE" = 1 ] && ensure_packages $NODE_PACKAGES
resolve_kube
"$APISERVER_BIN" --version >/dev/null 2>&1 || die "$APISERVER_BIN does not run"
[ -z "$KCM_BIN" ] || "$KCM_BIN" --version >/dev/null 2>&1 || die "$KCM_BIN does not run"
KUBECTL_BIN=
if [ "$WANT_KUBECTL" = 1 ]; then
  KUBECTL_BIN=$(resolve_kubectl)
  "$KUBECTL_BIN" version --client >/dev/null 2>&1 || die "$KUBECTL_BIN does not run"
elif [ -f "$CACHE_ROOT/binaries.json" ]; then
  # Run from an installed package on a machine this repository also provisioned: keep its kubectl record.
  KUBECTL_BIN=$(sed -n 's/.*"kubectl": *"\([^"]*\)".*/\1/p' "$CACHE_ROOT/binaries.json")
  [ -n "$KUBECTL_BIN" ] && [ -x "$KUBECTL_BIN" ] || KUBECTL_BIN=
fi

# Written for the test control plane to find without re-resolving.
# Replaced atomically: a test control plane starting meanwhile reads the old record or the new one.
mkdir -p "$CACHE_ROOT"
# A binary recorded earlier under key $1, if it is still there (empty otherwise).
recorded() {
  local value
  [ -f "$CACHE_ROOT/binaries.json" ] || return 0
  value=$(sed -n 's/.*"'"$1"'": *"\([^"]*\)".*/\1/p' "$CACHE_ROOT/binaries.json")
  [ -n "$value" ] && [ -x "$value" ] && printf '%s\n' "$value"
  return 0
}
# Not wanted this run (an installed package's default): keep what an earlier run recorded, so provisioning
# from a project never takes away the controller manager or the node's binaries this repository uses.
[ -n "$KCM_BIN" ] || KCM_BIN=$(recorded kubeControllerManager)
[ -n "${SCHEDULER_BIN:-}" ] || SCHEDULER_BIN=$(recorded kubeScheduler)
[ -n "${KUBELET_BIN:-}" ] || KUBELET_BIN=$(recorded kubelet)
[ -n "${PROXY_BIN:-}" ] || PROXY_BIN=$(recorded kubeProxy)
record='{ "etcd": "'"$ETCD_BIN"'", "kubeApiserver": "'"$APISERVER_BIN"'"'
[ -n "$KCM_BIN" ] && record+=', "kubeControllerManager": "'"$KCM_BIN"'"'
[ -n "$KUBECTL_BIN" ] && record+=', "kubectl": "'"$KUBECTL_BIN"'"'
[ -n "$SCHEDULER_BIN" ] && record+=', "kubeScheduler": "'"$SCHEDULER_BIN"'"'
[ -n "$KUBELET_BIN" ] && record+=', "kubelet": "'"$KUBELET_BIN"'"'
[ -n "$PROXY_BIN" ] && record+=', "kubeProxy": "'"$PROXY_BIN"'"'
printf '%s }\n' "$record" > "$CACHE_ROOT/binaries.json.$$"
mv -f "$CACHE_ROOT/binaries.json.$$" "$CACHE_ROOT/binaries.json"
log "etcd:           $ETCD_BIN ($("$ETCD_BIN" --version 2>/dev/null | head -n1))"
log "kube-apiserver: $APISERVER_BIN ($("$APISERVER_BIN" --version 2>/dev/null))"
[ -n "$KCM_BIN" ] && log "kube-controller-manager: $KCM_BIN ($("$KCM_BIN" --version 2>/dev/null))"
[ -n "$KUBECTL_BIN" ] && log "kubectl:        $KUBECTL_BIN ($("$KUBECTL_BIN" version --client --short 2>/dev/null || "$KUBECTL_BIN" version --client 2>/dev/null | head -n1))"
[ -n "$KUBELET_BIN" ] && log "kubelet, kube-scheduler, kube-proxy: $(dirname "$(dirname "$KUBELET_BIN")") ($("$KUBELET_BIN" --version 2>/dev/null)); containerd $(containerd --version 2>/dev/null | awk '{print $3}')"
[ "$WANT_PROMTOOL" = 1 ] && log "promtool:       $(command -v promtool) ($(promtool --version 2>&1 | head -n1))"
log "recorded in $CACHE_ROOT/binaries.json"
