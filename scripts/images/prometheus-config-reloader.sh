#!/bin/sh
# A stand-in for prometheus-operator's prometheus-config-reloader (not in Debian), for the local node's
# Prometheus Pods. It takes upstream's flags and does what the StatefulSet relies on: gunzips
# --config-file, replaces each $(VAR) with that environment variable's value, writes the result to
# --config-envsubst-file, and (unless --watch-interval=0) polls that input and every --watched-dir every
# --watch-interval (default 3s; upstream also reacts to inotify) and POSTs --reload-url when anything
# changed, until Prometheus takes it. Unlike upstream it serves no /metrics or /healthz on
# --listen-address, and it expands only $(VAR), not ${VAR}.
set -u
# As a container's first process a shell gets no default action for SIGTERM: without this trap the Pod
# would wait out its whole termination grace period.
trap 'exit 0' TERM INT
config_file='' out_file='' reload_url='' interval=3 watched=''
for arg in "$@"; do
  case "$arg" in
    --config-file=*) config_file=${arg#*=} ;;
    --config-envsubst-file=*) out_file=${arg#*=} ;;
    --reload-url=*) reload_url=${arg#*=} ;;
    --watch-interval=*) interval=${arg#*=} ;;
    --watched-dir=*) watched="$watched ${arg#*=}" ;;
    --listen-address=*|--log-format=*|--log-level=*) ;;
    *) echo "prometheus-config-reloader: ignoring unknown flag $arg" >&2 ;;
  esac
done
[ -n "$config_file" ] && [ -n "$out_file" ] || { echo 'prometheus-config-reloader: --config-file and --config-envsubst-file are required' >&2; exit 2; }
interval=${interval%s}
case "$interval" in 0|0m|0s) interval=0 ;; *[!0-9]*) interval=3 ;; esac

# Writes the configuration Prometheus reads: gunzipped, each $(VAR) replaced by its value.
render() {
  tmp="$out_file.tmp"
  case "$config_file" in
    *.gz) gunzip -c "$config_file" > "$tmp" || return 1 ;;
    *) cat "$config_file" > "$tmp" || return 1 ;;
  esac
  for name in $(grep -o '\$([A-Za-z_][A-Za-z0-9_]*)' "$tmp" | sort -u | sed 's/^\$(\(.*\))$/\1/'); do
    value=$(printenv "$name" || true)
    escaped=$(printf '%s' "$value" | sed 's/[\/&|]/\\&/g')
    sed -i "s|\$($name)|$escaped|g" "$tmp"
  done
  mv "$tmp" "$out_file"
}

# What the inputs hold now: the configuration and every watched file, as one checksum.
inputs() {
  { cat "$config_file"; for dir in $watched; do find "$dir" -type f 2>/dev/null | sort | while read -r f; do printf '%s\n' "$f"; cat "$f"; done; done; } | md5sum
}

until render; do echo "prometheus-config-reloader: cannot read $config_file yet" >&2; sleep 1; done
echo "prometheus-config-reloader: wrote $out_file"
[ "$interval" = 0 ] && exit 0
seen=$(inputs)
while true; do
  sleep "$interval"
  now=$(inputs)
  [ "$now" = "$seen" ] && continue
  render || continue
  until [ -z "$reload_url" ] || wget -q -O /dev/null --post-data='' "$reload_url"; do sleep 1; done
  echo "prometheus-config-reloader: inputs changed, Prometheus reloaded"
  seen=$now
done
