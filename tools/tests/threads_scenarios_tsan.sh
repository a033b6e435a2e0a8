#!/usr/bin/env bash
# Goal: the CLI's threads path (`lockstep run FILE --backend threads`: the
# scenario drivers, the per-thread event buffers and their merge, the oracles
# over the merged log) is free of data races, not only the primitives the
# unit tests exercise. Run in the clang TSan build (label tsan), a race
# report exits 86 (tools/sanitizer_exit_code.cpp, TSAN_OPTIONS below), which
# is not the 0 each case expects. A few bundled files cover the components
# on two or three threads: lanes (routing and reaping across threads),
# shards, single-flight (the cancel/publish race, workers cancelled mid-call
# from another core), a composed system, and one
# planted shard bug, caught (exit 1) on threads without a race report. Each
# file runs three times: TSan sees only the interleavings that happen, and a
# run takes well under a second even under TSan.
#
# At --time-scale 5000, not the default 1000: TSan makes every wake and switch
# several times slower, and the files' liveness budgets are virtual ns scaled
# to real ones. At 1000, one CI run (2026-12-03) saw a lane of
# lanes_route_meets_reap_2cores still open 100 ms after the router was dropped
# (lanes_gone), where 400 TSan runs and 500 plain ones here closed every lane
# in time; at scale 30 its liveness budget fails one run in eight. A lane
# that never closes still fails at any scale.
#
#   threads_scenarios_tsan.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A sanitizer report must fail the case, whatever the caller's environment.
export TSAN_OPTIONS="halt_on_error=1:exitcode=86${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1:exitcode=86${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
case_timeout=60
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

for b in lanes_per_key_order lanes_route_meets_reap_2cores lanes_survives_consumer_panic_2cores \
  shards_backpressure_2cores shards_faults_random flight_cancel_publish_race_2cores \
  flight_faults_random_2cores flight_cancel_worker_2cores lanes_reap_meets_successor_2cores \
  composed_faults_random_3cores; do
  f="$S/$b.json"
  [ -f "$f" ] || { name=$b; fail "bundled scenario $f is missing"; continue; }
  for round in 1 2 3; do
    expect "tsan_threads_${b}_$round" 0 "outcome=ok backend=threads" -- "$L" run "$f" --backend threads \
      --time-scale 5000
  done
done
expect tsan_threads_canary_lifo_per_key 1 "FAILED oracle: oracle 'per_key_order' failed" -- \
  "$L" run "$S/canaries/shards_lifo_per_key.json" --backend threads --time-scale 5000

echo "threads_scenarios_tsan: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
