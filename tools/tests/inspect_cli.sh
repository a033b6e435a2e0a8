#!/usr/bin/env bash
# Goal: the tools that explain a run work end to end through the binary.
#   (a) `trace --format perfetto` writes Chrome trace-event JSON for a
#       scenario run and for a failing canary's record: python3 parses it and
#       checks the events, one track per fiber and per key, every step and
#       component event, the failure instant naming its oracle; two exports
#       are byte for byte equal; `--format jsonl` is the run's own trace;
#   (b) `check-determinism` compares trace bytes, and with --jobs N explore's
#       outcomes on 1 and N threads, failing seeds included;
#   (c) `replay --continue` on a record whose scenario was edited so that its
#       decisions no longer fit: plain replay exits 4; with --continue it
#       names the step where the run departs, judges the new run, and the
#       record it writes for a failure replays (reproduced);
#   (d) bad input: one line on stderr and exit 2.
#
#   inspect_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

check() {  # check NAME EXPORT TRACE [ORACLE]: the export against the run's trace
  name=$1 cases=$((cases + 1))
  shift
  python3 "$here/check_perfetto.py" "$@" >out 2>err || fail "$(head -5 out) $(head -c 300 err)"
}

# --- (a) Perfetto export ----------------------------------------------------
held="$S/shards_backpressure_2cores.json"
expect trace_scenario 0 "trace (perfetto) written to run.json" -- "$L" trace "$held" --seed 3 -o run.json
expect trace_scenario_again 0 "outcome=ok" -- "$L" trace "$held" --seed 3 -o run2.json
expect trace_scenario_jsonl 0 "trace (jsonl) written to run.jsonl" -- "$L" trace "$held" --seed 3 --format jsonl -o run.jsonl
expect run_scenario 0 "outcome=ok" -- "$L" run "$held" --seed 3 --trace ran.jsonl
name=trace_jsonl_is_the_run_trace cases=$((cases + 1))
cmp -s run.jsonl ran.jsonl || fail "trace --format jsonl differs from run --trace"
name=trace_bytes_deterministic cases=$((cases + 1))
cmp -s run.json run2.json || fail "two exports of one seed differ"
check perfetto_scenario run.json run.jsonl

lanes="$S/lanes_per_key_order.json"
expect trace_lanes 0 "outcome=ok" -- "$L" trace "$lanes" --seed 2 --strategy pct -o lanes.json
expect trace_lanes_jsonl 0 "outcome=ok" -- "$L" trace "$lanes" --seed 2 --strategy pct --format jsonl -o lanes.jsonl
check perfetto_lanes lanes.json lanes.jsonl

flight="$S/flight_join_vs_last_leave_2cores.json"
expect trace_flight 0 "outcome=ok" -- "$L" trace "$flight" --seed 5 -o flight.json
expect trace_flight_jsonl 0 "outcome=ok" -- "$L" trace "$flight" --seed 5 --format jsonl -o flight.jsonl
check perfetto_flight flight.json flight.jsonl

canary="$S/canaries/shards_lifo_per_key.json"
expect canary_found 1 "oracle 'per_key_order' failed" -- "$L" explore "$canary" --seeds 50 --record canary.json
expect trace_record 1 "trace (perfetto) written to failed.json" -- "$L" trace canary.json -o failed.json
expect trace_record_jsonl 1 "reproduced" -- "$L" replay canary.json --trace failed.jsonl
check perfetto_failure failed.json failed.jsonl per_key_order
expect trace_record_again 1 "outcome=oracle" -- "$L" trace canary.json -o failed2.json
name=trace_record_bytes_deterministic cases=$((cases + 1))
cmp -s failed.json failed2.json || fail "two exports of one record differ"
# A run's own trace (as a library test's replay writes it) is converted as it is:
# the same export as tracing the record; bad lines are refused in one line.
expect trace_of_a_trace 0 "trace (perfetto) of failed.jsonl written to converted.json" -- "$L" trace failed.jsonl -o converted.json
name=perfetto_of_a_trace cases=$((cases + 1))
# The same tracks and events as the record's export; the failure instant has
# its kind only (a trace does not carry the message).
grep -q '"cat":"failure".*"kind":"oracle"' converted.json || fail "no oracle failure instant in the converted trace"
[[ $(grep -c '"ph":"X"' converted.json) == $(grep -c '"ph":"X"' failed.json) ]] || fail "the converted trace has other slices than the record's export"
printf '{"ev":"run","seed":1,"cores":1}\n{not json\n' > broken.jsonl
expect trace_of_a_broken_trace 2 "broken.jsonl: trace line 2 is not a trace event" -- "$L" trace broken.jsonl -o x.json
expect trace_of_a_trace_with_a_seed 2 "a run's trace is converted as it is" -- "$L" trace failed.jsonl --seed 2 -o x.json
# Two lanes for one key: its handle slices overlap, so the key gets a second track.
two_lanes="$S/canaries/lanes_replace_lane_one_lane_per_key.json"
expect overlap_found 1 "oracle 'one_lane_per_key' failed" -- "$L" explore "$two_lanes" --seeds 5 --record lanes2.json
expect overlap_trace 1 "written to lanes2.perfetto.json" -- "$L" trace lanes2.json -o lanes2.perfetto.json
expect overlap_trace_jsonl 1 "reproduced" -- "$L" replay lanes2.json --trace lanes2.jsonl
check perfetto_overlap lanes2.perfetto.json lanes2.jsonl one_lane_per_key
name=perfetto_overlap_track cases=$((cases + 1))
grep -qE '"name":"key [0-9]+ \(overlapping, 2\)"' lanes2.perfetto.json || fail "no second track for the overlapping key"

# --- (b) check-determinism ----------------------------------------------------
expect determinism_bytes 0 "trace bytes equal" -- "$L" check-determinism "$held" --seeds 3
expect determinism_jobs 0 "explore --jobs 1 and --jobs 2: the same outcome for all 24 seeds" -- \
  "$L" check-determinism "$held" --seeds 24 --jobs 2
expect determinism_jobs_failures 0 "explore --jobs 1 and --jobs 2: the same outcome for all 20 seeds" -- \
  "$L" check-determinism "$canary" --seeds 20 --jobs 2

# --- (c) replay --continue ------------------------------------------------------
# A canary that fails on every seed, its record's scenario given one actor
# more at the front: the fibers are numbered anew, so a recorded decision
# names a fiber that cannot run there.
cont="$S/canaries/lanes_decrement_at_dequeue.json"
expect continue_found 1 "oracle 'capacity' failed" -- "$L" explore "$cont" --seeds 5 --record orig.json
python3 - orig.json edited.json <<'EOF'
import copy, json, sys
rec = json.load(open(sys.argv[1]))
actors = rec["scenario"]["workload"]["actors"]
extra = copy.deepcopy(actors[0])
extra["name"] = "newcomer"
actors.insert(0, extra)
json.dump(rec, open(sys.argv[2], "w"), indent=1)
EOF
expect continue_needed 4 "DIVERGED" -- "$L" replay edited.json
expect continue_departs 1 "the continued run failed" -- "$L" replay edited.json --continue --record continued.json
name=continue_departure cases=$((cases + 1))
grep -qE '^DIVERGED at step [0-9]+: the recorded decision [0-9]+ \(of [0-9]+\) is fiber [0-9]+, but runnable were \[[0-9,]+\]' out ||
  fail "no departure point"
grep -qF "oracle 'capacity' failed" out || fail "no verdict naming the oracle"
grep -qF "failure record: continued.json" out || fail "no record written"
expect continue_record_replays 1 "reproduced: the same trace hash" -- "$L" replay continued.json
# Unchanged, a record still reproduces with --continue.
expect continue_unchanged 1 "reproduced: the same trace hash" -- "$L" replay orig.json --continue
# Decisions that run out: the canary's record with none left.
python3 - canary.json cut.json <<'EOF'
import json, sys
rec = json.load(open(sys.argv[1]))
rec["decisions"] = []
json.dump(rec, open(sys.argv[2], "w"), indent=1)
EOF
expect continue_cut_needed 4 "DIVERGED" -- "$L" replay cut.json
expect continue_cut 1 "the continued run failed" -- "$L" replay cut.json --continue
name=continue_cut_departure cases=$((cases + 1))
grep -qE '^DIVERGED at step [0-9]+: all 0 recorded decisions were used and the run needed more' out ||
  fail "no departure point"
grep -qF "failure record: cut-continued.json" out || fail "the continued run's record is not next to the input"
expect continue_cut_record_replays 1 "reproduced: the same trace hash" -- "$L" replay cut-continued.json

# --- (d) bad input ----------------------------------------------------------
expect bad_trace_missing 2 "missing.json" -- "$L" trace missing.json -o x.json
expect bad_trace_format 2 "--format: expected perfetto or jsonl" -- "$L" trace "$held" --format svg -o x.json
expect bad_trace_output 2 "-o" -- "$L" trace "$held" -o "$tmp/no/such/dir/x.json"
expect bad_trace_no_output 2 "-o" -- "$L" trace "$held"
expect bad_trace_record_seed 2 "a failure record fixes its seed" -- "$L" trace canary.json --seed 4 -o x.json
expect bad_det_jobs 2 "--jobs: expected a decimal integer from 1 to 1024" -- "$L" check-determinism "$held" --jobs 0
expect bad_replay_record 2 "expected --continue with it" -- "$L" replay canary.json --record y.json

echo "inspect_cli: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
