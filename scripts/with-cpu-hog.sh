#!/usr/bin/env bash
# Runs a command while a CPU hog keeps every core busy, to prove the suite does not depend on an idle
# machine: `bash scripts/with-cpu-hog.sh npm run test:jest`. One busy loop per core (nproc), at the
# same priority as the command, all stopped when the command ends, whatever its exit status.
# HOG_WORKERS overrides the number of loops.
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: bash scripts/with-cpu-hog.sh <command> [args...]" >&2
  exit 2
fi
workers="${HOG_WORKERS:-$(nproc)}"
if ! [[ "$workers" =~ ^[0-9]+$ ]] || ((workers < 1 || workers > 256)); then
  echo "HOG_WORKERS must be a whole number from 1 to 256, got '$workers'" >&2
  exit 2
fi
pids=()
stop_hog() {
  if ((${#pids[@]})); then kill "${pids[@]}" 2>/dev/null || true; fi
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop_hog EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < workers; i++)); do
  bash -c 'while :; do :; done' &
  pids+=("$!")
done
echo "with-cpu-hog: ${workers} busy loop(s) running (pids ${pids[*]}); load rises over the first minute" >&2
status=0
"$@" || status=$?
echo "with-cpu-hog: command exited ${status}; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
