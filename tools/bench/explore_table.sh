#!/usr/bin/env bash
# Writes results/explore.md: `lockstep explore` runs/s for every bundled
# scenario at --jobs 1 and --jobs 2, measured back to back so both see the
# same machine, and the simulator step's instruction cost with and without
# the hashed trace (callgrind: exactly repeatable, unlike wall time).
#   [ONLY=REGEX] tools/bench/explore_table.sh [BUILD_DIR [SEEDS [TARGET_S [ROUNDS]]]]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${1:-build-release}
seeds=${2:-2000}
target_s=${3:-0.5}
rounds=${4:-5}
lockstep="$build/tools/lockstep"
out=results/explore.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rate() {  # summary.json -> runs/s (the strategy's own runs plus pct's probe runs: both cost a run)
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["wall"]["seconds"]
print(f'{(d["runs"] + d["probe_runs"]) / s:.0f}' if s > 0 else "inf")
PY
}

# Each row: a first --jobs 1 run over seeds 1..SEEDS sizes the row so that a
# --jobs 1 run lasts about TARGET_S seconds (short runs are dominated by thread
# start-up and scheduler noise, not by exploring); then --jobs 1 and --jobs 2
# alternate ROUNDS times over those seeds and each column is the median.
cpu() {  # out.json -> the process's CPU nanoseconds per run (user + system, both threads)
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
u, s = open(sys.argv[1] + ".cpu").read().split()[-2:]
print(f'{(float(u) + float(s)) * 1e9 / (d["runs"] + d["probe_runs"]):.0f}')
PY
}
median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.0f}")' "$@"; }
rows=""
min_ratio=""
below=0
below_best=0
total=0
for file in scenarios/*.json; do
  # ONLY=REGEX measures only the files whose name matches (a quick look; the table then says so).
  [[ -z "${ONLY:-}" || "$file" =~ ${ONLY:-} ]] || continue
  strategies="random pct"
  grep -q '"expect"' "$file" && strategies=fifo  # exact expectations hold only under fifo
  for strategy in $strategies; do
    explore() {  # jobs seeds out.json: the process's CPU time goes to out.json.cpu
      /usr/bin/time -f "%U %S" -o "$3.cpu" \
        "$lockstep" explore "$file" --strategy "$strategy" --seeds "1..$2" --stop-after 0 --jobs "$1" --json "$3" >/dev/null
    }
    explore 1 "$seeds" "$work/size.json"
    n=$(python3 -c "import math; r=float('$(rate "$work/size.json")'); print(max($seeds, math.ceil(r * $target_s)))")
    r1s=(); r2s=(); c1s=(); c2s=()
    for ((round = 0; round < rounds; ++round)); do
      explore 1 "$n" "$work/j1.json"
      explore 2 "$n" "$work/j2.json"
      cmp -s <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["trace_hashes"], d["failures"])' "$work/j1.json") \
             <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["trace_hashes"], d["failures"])' "$work/j2.json") ||
        { echo "explore_table: --jobs 1 and --jobs 2 disagree on $file ($strategy)" >&2; exit 1; }
      r1s+=("$(rate "$work/j1.json")"); r2s+=("$(rate "$work/j2.json")")
      c1s+=("$(cpu "$work/j1.json")"); c2s+=("$(cpu "$work/j2.json")")
    done
    r1=$(median "${r1s[@]}"); r2=$(median "${r2s[@]}")
    ratio=$(python3 -c "print(f'{$r2 / $r1:.2f}')")
    best=$(python3 -c "import sys; print(f'{max(map(float, sys.argv[2:])) / max(map(float, sys.argv[1].split())):.2f}')" "${r1s[*]}" "${r2s[@]}")
    c1=$(median "${c1s[@]}"); c2=$(median "${c2s[@]}")
    cpu_ratio=$(python3 -c "print(f'{$c2 / $c1:.2f}')")
    min_ratio=$(python3 -c "print(min(float('${min_ratio:-99}'), $ratio))")
    min_best=$(python3 -c "print(min(float('${min_best:-99}'), $best))")
    total=$((total + 1))
    python3 -c "import sys; sys.exit(0 if $ratio >= 1.8 else 1)" || below=$((below + 1))
    python3 -c "import sys; sys.exit(0 if $best >= 1.8 else 1)" || below_best=$((below_best + 1))
    rows+="| $(basename "$file" .json) | $strategy | $n | $r1 | $r2 | $ratio | $best | $cpu_ratio |"$'\n'
  done
done

ir() {  # fibers yields mode -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/tools/sim_step_fixed" "$1" "$2" "$3" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
steps=""
if command -v valgrind >/dev/null && [[ -x "$build/tools/sim_step_fixed" ]]; then
  for n in 2 64 1024; do
    row="| $n |"
    for mode in off hash full; do
      lo=$(ir "$n" 200 "$mode"); hi=$(ir "$n" 400 "$mode")
      row+=" $(python3 -c "print(f'{($hi - $lo) / ($n * 200):.0f}')") |"
    done
    steps+="$row"$'\n'
  done
fi

{
  echo "# Exploration throughput at --jobs 1 and --jobs 2, and the cost of a traced step"
  echo
  echo "Measured $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD) with the"
  echo "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt") build in \`$build\` on $(nproc) CPUs, load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) when it ended, by:"
  echo
  echo '```sh'
  echo "${ONLY:+ONLY='$ONLY' }tools/bench/explore_table.sh $build $seeds $target_s $rounds"
  echo '```'
  echo
  echo "Each row explores seeds 1..N, N sized by a first run of seeds 1..$seeds so that a"
  echo "\`--jobs 1\` run lasts about $target_s s; then \`--jobs 1\` and \`--jobs 2\` alternate $rounds times"
  echo "and each runs/s column is the median. runs/s counts every run, pct's probe runs included,"
  echo "over explore's own wall time (process start-up and reading the file excluded). The script"
  echo "fails if the two columns' trace hashes or failures differ."
  echo
  echo "*best* is the fastest \`--jobs 2\` round over the fastest \`--jobs 1\` round: on a shared"
  echo "machine a disturbance only ever slows a round down, so the fastest round of each is the"
  echo "closest to what the machine can do, and their ratio the least biased by who else ran."
  echo "*CPU/run* is the process's CPU time per run (user + system, \`/usr/bin/time\`) at \`--jobs 2\`"
  echo "over \`--jobs 1\`, medians: what running a second thread costs in work, whatever the wall"
  echo "clock did (1.00: none; a ratio of throughputs can reach 2 only if this stays near 1)."
  echo
  echo "**Medians: smallest ratio $min_ratio, $below of $total rows below the target of 1.8. Fastest rounds: smallest $min_best, $below_best of $total rows below 1.8.**"
  echo
  echo "| scenario | strategy | seeds | runs/s, --jobs 1 | runs/s, --jobs 2 | ratio | best | CPU/run |"
  echo "|----------|----------|------:|-----------------:|-----------------:|------:|-----:|--------:|"
  printf '%s' "$rows"
  if [[ -n "$steps" ]]; then
    echo
    echo "## Instructions per simulator step (callgrind)"
    echo
    echo "\`valgrind --tool=callgrind $build/tools/sim_step_fixed FIBERS YIELDS MODE\` at YIELDS 200"
    echo "and 400; the difference over the extra steps. \`off\`: nothing recorded; \`hash\`: the"
    echo "decision list recorded and the trace hashed (what every \`explore\` run does); \`full\`:"
    echo "the trace also formatted and kept (\`run --trace\`, \`replay\`)."
    echo
    echo "| fibers | off | hash | full |"
    echo "|---:|---:|---:|---:|"
    printf '%s' "$steps"
  fi
} >"$out"
echo "wrote $out"
