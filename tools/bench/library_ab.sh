#!/usr/bin/env bash
# tools/bench/library_ab.sh BASE_LOCKSTEP NEW_LOCKSTEP FILES_DIR [SEEDS] [ROUNDS]
#
# What a change costs the scenario library, as paired, interleaved runs: for
# each round, each file of FILES_DIR (*.json) and each strategy (random and
# pct; fifo for a file with `expect`), BASE then NEW explore the same file
# with --seeds SEEDS (default 2000) --jobs 1, and the wall time of each comes
# from its --json summary. Give it the base's copy of the files when the new
# binary reads steps the base cannot. Prints one line per round (whole-library
# runs/s of each and their ratio) and, per file and strategy, the median over
# the rounds of new/base.
set -euo pipefail
base=$1 new=$2 dir=$3 seeds=${4:-2000} rounds=${5:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wall() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['wall']['seconds'])" "$1"; }
: >"$work/pairs"
for round in $(seq 1 "$rounds"); do
  bt=0 nt=0 runs=0
  for f in "$dir"/*.json; do
    if grep -q '"expect"' "$f"; then strategies=fifo; else strategies="random pct"; fi
    for st in $strategies; do
      rm -f "$work/a.json" "$work/b.json"
      (cd "$work" && "$base" explore "$f" --strategy "$st" --seeds "$seeds" --jobs 1 --json a.json >/dev/null 2>&1) || true
      (cd "$work" && "$new" explore "$f" --strategy "$st" --seeds "$seeds" --jobs 1 --json b.json >/dev/null 2>&1) || true
      a=$(wall "$work/a.json") b=$(wall "$work/b.json")
      bt=$(python3 -c "print($bt + $a)") nt=$(python3 -c "print($nt + $b)") runs=$((runs + seeds))
      echo "$(basename "$f") $st $a $b" >>"$work/pairs"
    done
  done
  python3 -c "r=$runs; b=$bt; n=$nt; print(f'round $round: base {r/b:,.0f} runs/s ({b:.1f} s), new {r/n:,.0f} runs/s ({n:.1f} s), new/base {b/n:.3f}')"
done
python3 - "$work/pairs" <<'EOF'
import sys, statistics, collections
ratios = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f, st, a, b = line.split()
    ratios[(f, st)].append(float(a) / float(b) if float(b) > 0 else 1.0)  # runs/s ratio new/base
med = sorted((statistics.median(v), k) for k, v in ratios.items())
vals = [m for m, _ in med]
print(f"per file and strategy ({len(vals)}): median of the rounds' new/base — median {statistics.median(vals):.3f}, "
      f"min {vals[0]:.3f} ({med[0][1][0]} {med[0][1][1]}), max {vals[-1]:.3f} ({med[-1][1][0]} {med[-1][1][1]})")
EOF
