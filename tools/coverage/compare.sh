#!/usr/bin/env bash
# Engine coverage: the engine's own unit tests against the scenario library.
# In a --coverage build (LOCKSTEP_COVERAGE=ON), runs the engine's unit tests
# (engine/tests) and collects which lines and branch outcomes of engine/*.hpp
# they reach; then `lockstep explore` of every library file (scenarios/*.json)
# over seeds 1..300 under random and pct (a file with `expect` once under
# fifo), and collects the same; then compares (engine_coverage.py compare).
# Fails when the unit tests reach an engine line or branch outcome that the
# library does not and tools/coverage/explained.txt does not explain.
#
#   compare.sh BUILD_DIR SOURCE_DIR [MARKDOWN_OUT]
set -euo pipefail
build=$(realpath "$1")
source_dir=$(realpath "$2")
markdown=${3:+$(realpath -m "$3")}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

find "$build" -name '*.gcda' -delete
for t in test_scheduler test_single_flight test_single_flight_races test_lanes test_lanes_races test_shard test_shard_races; do
  "$build/engine/$t" > "$tmp/$t.log" 2>&1 || { echo "engine unit test $t failed:"; tail -20 "$tmp/$t.log"; exit 1; }
done
python3 "$here/engine_coverage.py" collect "$build" "$source_dir" "$tmp/unit.json"

find "$build" -name '*.gcda' -delete
cd "$tmp"  # a failure's record lands here, not in the caller's folder
files=0
for f in "$source_dir"/scenarios/*.json; do
  files=$((files + 1))
  if grep -q '"expect"' "$f"; then
    "$build/tools/lockstep" run "$f" --strategy fifo > "$tmp/run.log" 2>&1 || { echo "$f failed:"; tail -5 "$tmp/run.log"; exit 1; }
  else
    for strategy in random pct; do
      # One job: gcov's counters are per process, and one thread keeps them exact.
      "$build/tools/lockstep" explore "$f" --strategy "$strategy" --seeds 300 --jobs 1 > "$tmp/run.log" 2>&1 ||
        { echo "$f ($strategy) failed:"; tail -5 "$tmp/run.log"; exit 1; }
    done
  fi
done
[ "$files" -ge 40 ] || { echo "expected the library's files under $source_dir/scenarios, found $files"; exit 1; }
python3 "$here/engine_coverage.py" collect "$build" "$source_dir" "$tmp/library.json"

args=(compare "$tmp/unit.json" "$tmp/library.json" --explained "$here/explained.txt")
[ -n "$markdown" ] && args+=(--markdown "$markdown")
python3 "$here/engine_coverage.py" "${args[@]}"
