#!/usr/bin/env bash
# results/generate.md: what explore --generate costs and what it reaches.
#   1. runs/s of `explore --generate C` for each component at --jobs 1 and 2
#      (a Release build), beside the bundled library's own runs/s in the same
#      rounds (rounds alternate, so a noisy spell hits both; the spread is
#      reported);
#   2. engine lines and branch outcomes (gcov, a --coverage build) reached by
#      the bundled library — every file over seeds 1..300 under random and
#      pct, as the engine_coverage test runs it — against as many
#      `--generate any` runs (half random, half pct), and what each reaches
#      that the other does not.
#
#   generate_table.sh RELEASE_BUILD COVERAGE_BUILD SOURCE_DIR OUT.md [SEEDS] [ROUNDS]
set -euo pipefail
rel=$(realpath "$1")
cov=$(realpath "$2")
src=$(realpath "$3")
out=$(realpath -m "$4")
seeds=${5:-20000}
rounds=${6:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
L=$rel/tools/lockstep

# runs/s of a whole command (its start and every file's setup included), as RUNS OUT CMD...
timed() {
  local runs=$1 log=$2
  shift 2
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$log" 2>&1 || { tail -3 "$log"; exit 1; }
  t1=$(date +%s%N)
  echo $((runs * 1000000000 / (t1 - t0)))
}
# The library files without exact counts (those run once, under fifo).
library_files=$(grep -L '"expect"' "$src"/scenarios/*.json)
library_runs=$(($(echo "$library_files" | wc -l) * 300))
: >speed.tsv
for r in $(seq 1 "$rounds"); do
  for j in 1 2; do
    # The library: every file without exact counts, 300 seeds each, one explore.
    # shellcheck disable=SC2086 # one word per file
    echo -e "library\t$j\t$r\t$(timed "$library_runs" lib.out "$L" explore $library_files --seeds 300 --jobs "$j")" >>speed.tsv
    for c in lanes shards flights composed any; do
      echo -e "$c\t$j\t$r\t$(timed "$seeds" gen.out "$L" explore --generate "$c" --seeds "$seeds" --jobs "$j")" >>speed.tsv
    done
  done
done

# Coverage: the library as engine_coverage runs it, then as many generated runs.
find "$cov" -name '*.gcda' -delete
lib_runs=0
for f in "$src"/scenarios/*.json; do
  if grep -q '"expect"' "$f"; then
    "$cov/tools/lockstep" run "$f" --strategy fifo >run.log 2>&1 || { echo "$f failed"; exit 1; }
    lib_runs=$((lib_runs + 1))
  else
    for s in random pct; do
      "$cov/tools/lockstep" explore "$f" --strategy "$s" --seeds 300 --jobs 1 >run.log 2>&1 || { echo "$f failed"; exit 1; }
      lib_runs=$((lib_runs + 300))
    done
  fi
done
python3 "$src/tools/coverage/engine_coverage.py" collect "$cov" "$src" library.json >/dev/null
find "$cov" -name '*.gcda' -delete
half=$((lib_runs / 2))
"$cov/tools/lockstep" explore --generate any --strategy random --seeds "$half" --jobs 1 >g1.log 2>&1 || { tail -3 g1.log; exit 1; }
"$cov/tools/lockstep" explore --generate any --strategy pct --seeds $((lib_runs - half)) --jobs 1 >g2.log 2>&1 || { tail -3 g2.log; exit 1; }
python3 "$src/tools/coverage/engine_coverage.py" collect "$cov" "$src" generated.json >/dev/null
python3 "$src/tools/coverage/engine_coverage.py" beyond library.json generated.json "library ($lib_runs runs)" \
  "--generate any ($lib_runs runs)" >beyond.md

python3 - speed.tsv "$seeds" "$rounds" "$(nproc)" >speed.md <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    what, jobs, rnd, rate = line.split()
    rows[(what, jobs)].append(int(rate))
print(f"| runs | --jobs 1: runs/s (median, min–max) | --jobs 2: runs/s | ratio to the library, --jobs 1 | --jobs 2 |")
print("|---|---:|---:|---:|---:|")
def med(k): return statistics.median(rows[k])
for what in ["library", "lanes", "shards", "flights", "composed", "any"]:
    cells = []
    for j in "12":
        v = rows[(what, j)]
        cells.append(f"{int(med((what, j)))} ({min(v)}–{max(v)})")
    ratios = []
    for j in "12":
        rs = [g / l for g, l in zip(rows[(what, j)], rows[("library", j)])]
        ratios.append(f"{statistics.median(rs):.2f} ({min(rs):.2f}–{max(rs):.2f})")
    name = "the bundled library (300 seeds per file)" if what == "library" else f"`--generate {what}`"
    print(f"| {name} | {cells[0]} | {cells[1]} | {ratios[0]} | {ratios[1]} |")
PY

{
  echo "# explore --generate: speed and reach"
  echo
  echo "Written by \`tools/bench/generate_table.sh $1 $2 $3 $4 $seeds $rounds\` on $(date -u +%Y-%m-%d), $(nproc) cores."
  echo
  echo "## Runs per second"
  echo
  echo "Each round times (whole commands, start-up included) the bundled library (every file without exact"
  echo "\`expect\` counts, seeds 1..300 each, one \`explore\`) and then \`explore --generate C --seeds $seeds\` for each component, at \`--jobs 1\` and \`--jobs 2\`;"
  echo "$rounds rounds, alternating. A ratio is generated runs/s over the library's runs/s in the same round."
  echo "A generated scenario is drawn per seed (and read by the reader's rules), which the rate includes."
  echo
  cat speed.md
  echo
  echo "## Engine branches beyond the library"
  echo
  echo "gcov over \`engine/*.hpp\` (a g++ -O0 \`--coverage\` build; a template's line counts over all its"
  echo "instantiations, exception edges left out: \`tools/coverage/engine_coverage.py\`): the library run as the"
  echo "\`engine_coverage\` test runs it ($lib_runs runs), against the same number of \`--generate any\` runs,"
  echo "seeds 1..$half under random and 1..$((lib_runs - half)) under pct."
  echo
  cat beyond.md
} >"$out"
echo "wrote $out"
