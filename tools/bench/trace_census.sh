#!/usr/bin/env bash
# The trace hash, failure and stop reason of every bundled scenario file at
# seeds 1..N under random and pct (fifo alone for a file with `expect`), one
# line each: diff two censuses to check that a change to the executor or the
# engine kept every sim trace byte for byte (or to list the runs it changed).
#
#   tools/bench/trace_census.sh LOCKSTEP_BINARY [SEEDS] > census.txt
set -euo pipefail
bin=${1:?usage: trace_census.sh LOCKSTEP_BINARY [SEEDS]}
seeds=${2:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "trace_census: $bin: not an executable lockstep binary" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-census.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Run from a scratch folder that sees the scenarios under their usual names:
# every failure's record lands in its results/failures/, not in the checkout.
ln -s "$root/scenarios" "$work/scenarios"
cd "$work"
for file in scenarios/*.json scenarios/canaries/*.json scenarios/harness/*.json scenarios/swarm/*.json; do
  case $file in *crash_*) continue ;; esac  # crashes the process by design
  strategies="random pct"
  # A file with exact expectations runs under fifo only (explore refuses the rest).
  grep -q '"expect"' "$file" && strategies="fifo"
  for s in $strategies; do
    extra=()
    case $file in scenarios/swarm/*) extra=(--swarm) ;; esac
    rm -f "$work/out.json"
    rc=0
    "$bin" explore "$file" --seeds "1..$seeds" --strategy "$s" --stop-after 0 --jobs 1 "${extra[@]}" \
      --json "$work/out.json" >/dev/null 2>"$work/err" || rc=$?  # a failing seed exits 1 or 3: expected
    if [ ! -s "$work/out.json" ]; then
      echo "trace_census: $file ($s): explore wrote no summary (exit $rc): $(head -c 300 "$work/err")" >&2
      exit 2
    fi
    python3 - "$work/out.json" "$file" "$s" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fails = {f["seed"]: f["reason"] for f in d.get("failing_seeds", [])}
for i, h in enumerate(d["trace_hashes"]):
    print(sys.argv[2], sys.argv[3], i + 1, h, fails.get(i + 1, "ok").replace(" ", "_"))
print(sys.argv[2], sys.argv[3], "failures_by_reason", json.dumps(d.get("failures_by_reason"), sort_keys=True))
PY
  done
done
