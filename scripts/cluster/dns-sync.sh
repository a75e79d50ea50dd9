#!/usr/bin/env bash
# Cluster DNS without CoreDNS (not in Debian bookworm): rewrites the hosts folder dnsmasq answers from,
# every 2 s, from the API: Services <svc>.<ns>.svc.cluster.local -> ClusterIP, and Pods with hostname and
# subdomain <host>.<subdomain>.<ns>.svc.cluster.local -> Pod IP (ready or not, as publishNotReadyAddresses).
# Each name is also published without ".cluster.local": busybox's nslookup ignores the search path.
# Runs inside the node's network namespace; arguments: kubectl path, kubeconfig, hosts folder.
set -u
K=("$1" --kubeconfig "$2" --request-timeout=5s)
D=$3
while :; do
  {
    "${K[@]}" get svc -A -o jsonpath='{range .items[*]}{.spec.clusterIP} {.metadata.name}.{.metadata.namespace}.svc.cluster.local{"\n"}{end}' 2>/dev/null | grep -v '^None ' | grep -E '^[0-9.]+ '
    "${K[@]}" get pods -A -o jsonpath='{range .items[*]}{.status.podIP} {.spec.hostname}.{.spec.subdomain}.{.metadata.namespace}.svc.cluster.local{"\n"}{end}' 2>/dev/null | grep -E '^[0-9.]+ [^. ]+\.[^. ]+\.'
  } | sed -E 's/^([^ ]+) (.+)\.cluster\.local$/\1 \2.cluster.local \2/' > "$D/.hosts.tmp"
  cmp -s "$D/.hosts.tmp" "$D/hosts" || mv "$D/.hosts.tmp" "$D/hosts"
  sleep 2
done
