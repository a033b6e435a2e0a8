#!/usr/bin/env bash
# Goal: the bundled scenario files run on the real pinned-thread backend
# (`lockstep run FILE --backend threads`) and their oracles are checked there.
#   (a) every bundled scenario meaningful on threads (scenarios/*.json
#       without `expect`) holds: exit 0, and the output says plainly that a
#       threads run is not byte-for-byte and has no replay — composed systems
#       (lanes in front of the single-flight table and the shards, checked by
#       every component's oracles and `delivery` over the merged logs)
#       included; every file with `expect` is refused (exit 2, naming
#       /expect), and so is every file with expect_failure;
#   (b) the shard canaries whose planted bug shows on every run whatever the
#       thread timing (one core: its fibers take turns on one thread, the
#       producer's items are all queued before the shard runs, and no key is
#       left to a random draw that could hide the bug) are caught on threads
#       by the oracle they plant a bug for: exit 1, the oracle's name and
#       message, no failure record written;
#   (c) a system that cannot settle within its budget fails liveness: exit 3;
#   (d) what a threads run cannot do is bad input (exit 2, one line saying
#       why): explore, check-determinism and replay with --backend threads,
#       and --seed, --strategy, --trace, --record, a lane canary (router or
#       consumer wrapper), panic_policy abort, a consumer panic that escapes
#       (contain false), expect_failure, --time-scale out of range or without
#       threads.
#
#   threads_scenarios.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

# --- (a) the library holds on real threads -----------------------------------
held=0
composed=0
for f in "$S"/*.json; do
  b=$(basename "$f" .json)
  if grep -q '"expect"' "$f"; then
    expect "refused_expect_$b" 2 "/expect: expected no exact expectations with --backend threads" -- \
      "$L" run "$f" --backend threads
  elif grep -q '"contain": false' "$f" && ! grep -q '"escaped_panic": "ends_lane"' "$f"; then
    # A consumer panic that escapes its lane would end the process there.
    expect "refused_contain_false_$b" 2 "/behaviour/consumer/contain: expected true with --backend threads" -- \
      "$L" run "$f" --backend threads
  elif grep -q '"cancel_lane"' "$f"; then
    # Cancelling a lane's fiber by id is the simulator's alone.
    expect "refused_cancel_lane_$b" 2 "/cancel_lane: expected no cancel_lane step with --backend threads" -- \
      "$L" run "$f" --backend threads
  elif grep -q '"expect_failure"' "$f"; then
    # A threads failure ends the process: there is no verdict to turn round.
    expect "refused_expect_failure_$b" 2 "/expect_failure: expected no expect_failure with --backend threads" -- \
      "$L" run "$f" --backend threads
  else
    held=$((held + 1))
    grep -q '"wiring"' "$f" && composed=$((composed + 1))
    scale=()
    # Its liveness budget, 100 us virtual, would be 100 ms of real time at the
    # default scale: a loaded machine (ctest -j, ASan) can hold a thread off
    # its CPU that long. At 10,000 the budget is a second.
    [ "$b" = lanes_reap_then_reuse ] && scale=(--time-scale 10000)
    expect "threads_$b" 0 "outcome=ok backend=threads" -- "$L" run "$f" --backend threads "${scale[@]}"
    grep -qF "not byte-for-byte and has no replay" out || fail "the run does not say it has no replay"
  fi
done
# Not vacuous: the library's lanes, shards and flights all ran.
[ "$held" -ge 20 ] || { name=library_count; fail "expected at least 20 scenarios meaningful on threads, found $held"; }
[ "$composed" -ge 2 ] || { name=composed_count; fail "expected the bundled composed systems on threads, found $composed"; }

# --- (b) planted bugs caught on threads ------------------------------------------
for pair in skip_final_flush:state keep_expired_request_ids:request_ids lose_expired:conservation \
  ignore_pending_cap:pending_cap lifo_per_key:per_key_order refile_to_front:fairness \
  complete_before_process:one_in_flight; do
  bug=${pair%%:*} oracle=${pair##*:}
  expect "canary_threads_$bug" 1 "FAILED oracle: oracle '$oracle' failed" -- \
    "$L" run "$S/canaries/shards_$bug.json" --backend threads
  grep -qF "no failure record" out || fail "a threads failure must say it has no record"
done
[ ! -e results ] || { name=canary_no_record; fail "a threads run wrote results/"; }

# --- (c) liveness --------------------------------------------------------------------
# Each process() call takes 1 s of real time (1 ms virtual at the default
# scale); the budget for the shard to drain and exit is 1 us.
python3 - "$S/shards_starving_keys_1core.json" slow.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["behaviour"]["processor"]["duration_ns"] = 1000000
d["liveness_ns"] = 1
json.dump(d, open(sys.argv[2], "w"))
EOF
expect threads_liveness 3 "FAILED liveness: oracle 'liveness' failed" -- "$L" run slow.json --backend threads

# --- (d) what a threads run cannot do ------------------------------------------------
f="$S/lanes_per_key_order.json"
expect threads_explore 2 "--backend threads: expected only with \`lockstep run\`" -- \
  "$L" explore "$f" --backend threads --seeds 2
expect threads_check_determinism 2 "not reproducible" -- "$L" check-determinism "$f" --backend threads --seeds 2
"$L" run "$S/canaries/shards_lifo_per_key.json" --record rec.json >/dev/null 2>&1
expect threads_replay 2 "a threads run is not reproducible" -- "$L" replay rec.json --backend threads
expect threads_seed 2 "--seed: expected no simulator-only flag with --backend threads" -- \
  "$L" run "$f" --backend threads --seed 3
expect threads_strategy 2 "--strategy: expected no simulator-only flag" -- "$L" run "$f" --backend threads --strategy fifo
expect threads_trace 2 "--trace: expected no trace" -- "$L" run "$f" --backend threads --trace t.jsonl
expect threads_record 2 "--record: expected no failure record" -- "$L" run "$f" --backend threads --record r.json
expect threads_scale_zero 2 "--time-scale: expected a decimal integer from 1 to 1000000" -- \
  "$L" run "$f" --backend threads --time-scale 0
expect threads_scale_sim 2 "--time-scale: expected only with --backend threads" -- "$L" run "$f" --time-scale 10
expect threads_two_files 2 "--backend threads: expected one scenario FILE" -- "$L" run "$f" "$f" --backend threads
# The lane router's planted bugs are switches in the real router (engine/plant.hpp): they run on
# threads too, the cores taking the bug of the thread that started them; these show on every run.
expect threads_lane_canary_counters 1 "oracle 'counters' failed" -- \
  "$L" run "$S/canaries/lanes_lane_count_only_grows.json" --backend threads
expect threads_lane_canary_holds_map 1 "oracle 'lanes_gone' failed" -- \
  "$L" run "$S/canaries/lanes_lane_holds_map.json" --backend threads
expect threads_consumer_canary 2 "/system/lanes/canary: expected no consumer canary with --backend threads" -- \
  "$L" run "$S/canaries/lanes_consumer_loses_after_panic.json" --backend threads
python3 - "$S/lanes_survives_consumer_panic_2cores.json" escape.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["behaviour"]["consumer"]["contain"] = False
json.dump(d, open(sys.argv[2], "w"))
EOF
expect threads_consumer_escapes 2 "/behaviour/consumer/contain: expected true with --backend threads" -- \
  "$L" run escape.json --backend threads
python3 - "$S/shards_faults_random.json" abort.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["system"]["shards"]["panic_policy"] = "abort"
json.dump(d, open(sys.argv[2], "w"))
EOF
expect threads_panic_abort 2 "/system/shards/panic_policy: expected panic_policy \"contain\"" -- \
  "$L" run abort.json --backend threads
expect threads_backend_name 2 "--backend" -- "$L" run "$f" --backend tokio

echo "threads_scenarios: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
