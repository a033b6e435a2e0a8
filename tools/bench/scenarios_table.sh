#!/usr/bin/env bash
# Writes results/scenarios.md: runs/s of `lockstep explore` for every bundled
# scenario (random and pct; fifo for a file with exact `expect` counts), one
# job so the figures are per core, from each run's --json summary.
#   tools/bench/scenarios_table.sh [BUILD_DIR [SEEDS]]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build-release}
seeds=${2:-2000}
lockstep="$build/tools/lockstep"
out=results/scenarios.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rows=""
for file in scenarios/*.json; do
  strategies="random pct"
  grep -q '"expect"' "$file" && strategies=fifo  # exact expectations hold only under fifo
  for strategy in $strategies; do
    "$lockstep" explore "$file" --strategy "$strategy" --seeds "1..$seeds" --jobs 1 --json "$work/s.json" >/dev/null
    rows+=$(python3 - "$work/s.json" "$(basename "$file" .json)" "$strategy" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["wall"]
runs_s = d["runs"] / w["seconds"] if w["seconds"] > 0 else float("inf")
print(f'| {sys.argv[2]} | {sys.argv[3]} | {d["runs"]} | {d["probe_runs"]} | {d["failures"]} | '
      f'{d["distinct_schedules"]} | {runs_s:.0f} |')
EOF
)$'\n'
  done
done

{
  echo "# Scenario throughput"
  echo
  echo "Runs per second of \`lockstep explore\` over seeds 1..$seeds for every bundled scenario, one job"
  echo "(\`--jobs 1\`, so per core), measured $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD)"
  echo "with the $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt") build in \`$build\`,"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) when it ended. pct's runs/s counts only its own runs;"
  echo "\`probe runs\` are the random runs that sized its change points (they cost as much again)."
  echo
  echo '```sh'
  echo "tools/bench/scenarios_table.sh $build $seeds"
  echo '```'
  echo
  echo "| scenario | strategy | runs | probe runs | failures | distinct schedules | runs/s |"
  echo "|----------|----------|-----:|-----------:|---------:|-------------------:|-------:|"
  printf '%s' "$rows"
} >"$out"
echo "wrote $out"
