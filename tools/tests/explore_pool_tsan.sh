#!/usr/bin/env bash
# Goal: explore's pool (tools/cli/explore_runner.*: several files' seeds on
# one set of worker threads, a file's --stop-after ending only that file,
# --time and a signal stopping all of them, the files prepared on several
# threads) and the dfs tree split among threads (testing/split_search.hpp:
# parts split off to idle threads, a failure dropping later parts, a budget,
# a time stop) are free of data races. Run in the clang TSan build (label tsan),
# where a race report exits 86, never the code a case expects. It once
# reported libstdc++'s lazily filled ctype<char>::narrow cache, read by the
# schema check's std::regex on two preparing threads (prepared.cpp fills it
# first now).
#
#   explore_pool_tsan.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TSAN_OPTIONS="halt_on_error=1:exitcode=86${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

# Four files on three threads: two stop at their second failure, two run out.
expect tsan_pool_stop_after 1 "stopped: stop-after" -- "$L" explore "$S/canaries/lanes_send_after_unlock.json" \
  "$S/lanes_capacity_concurrent.json" "$S/canaries/shards_skip_final_flush.json" "$S/program_velo.json" \
  --seeds 1..60 --stop-after 2 --jobs 3 --record-dir records
# An open range stopped by --time: every thread checks the deadline.
expect tsan_pool_time 0 "stopped: time" -- "$L" explore "$S/lanes_capacity_concurrent.json" \
  "$S/program_velo.json" --seeds 1.. --time 1s --jobs 5
# More jobs than files and seeds: small chunks, the pool running ahead into later files.
expect tsan_pool_small_ranges 0 "all 5 seeds held" -- "$L" explore "$S/lanes_capacity_concurrent.json" \
  "$S/program_velo.json" "$S/program_grommet.json" "$S/flight_faults_random_2cores.json" --seeds 1..5 --jobs 7

# The dfs tree split among threads: verified, a failure deep in the tree, a budget, a time stop.
expect tsan_dfs_split_verified 0 "verified: 9087 schedules" -- "$L" explore "$S/lanes_cancel_lane_2cores.json" \
  --strategy dfs --delay-bound 3 --jobs 3
expect tsan_dfs_split_failure 1 "failed at schedule 4529:" -- "$L" explore \
  "$S/canaries/flight_decrement_outside_lock.json" --strategy dfs --delay-bound 3 --jobs 4 --record-dir records
expect tsan_dfs_split_budget 0 "after 3000 schedules" -- "$L" explore "$S/program_velo.json" --strategy dfs \
  --delay-bound 3 --max-schedules 3000 --jobs 3
expect tsan_dfs_split_time 0 "not verified: stopped (time)" -- "$L" explore "$S/program_velo.json" --strategy dfs \
  --delay-bound 4 --max-schedules 0 --time 1s --jobs 3

echo "explore_pool_tsan: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
