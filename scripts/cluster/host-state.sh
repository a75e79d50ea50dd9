#!/usr/bin/env bash
# Prints what the local node could leave behind on the host, in a stable order, so a spec can compare the
# host before `up` and after `down`: processes of the node's programs, mounts, cgroups, network namespaces,
# the host's links, addresses, routes and iptables rules, and the kernel settings the node touches.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
echo "## processes"
# The node's programs all name its state folder in their arguments; the host's own kernel threads do not.
ps -eo pid=,args= | awk -v s="$S" -v me="$$" 'index($0, s) && $1 != me && $0 !~ /host-state/ { $1 = ""; print }' | sort
echo "## mounts"
awk '{ print $5 }' /proc/self/mountinfo | grep -E "^($S|/run/netns|/var/run/netns|/run/containerd|/var/lib/kubelet)" | sort
echo "## cgroups"
find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d -name "$CGROUP_PARENT" 2>/dev/null | sort
find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d -name kubepods 2>/dev/null | sort
echo "## network namespaces"
ip netns list 2>/dev/null | sort
echo "## links"
ip -o link show | awk -F': ' '{ print $2 }' | sort
echo "## addresses"
ip -o addr show | awk '{ print $2, $4 }' | sort
echo "## routes"
ip route show table all 2>/dev/null | sort
echo "## iptables"
for t in filter nat mangle raw; do iptables-save -t "$t" 2>/dev/null | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]/[0:0]/'; done
echo "## sysctls"
for key in $KERNEL_SYSCTLS net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables; do
  echo "$key=$(sysctl -n "$key" 2>/dev/null || echo absent)"
done
echo "## folders"
for d in $OUTSIDE_DIRS; do [ -e "$d" ] && echo "$d"; done
exit 0
