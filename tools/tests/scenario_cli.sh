#!/usr/bin/env bash
# Goal: scenario files work end to end through the lockstep binary.
#   (a) every bundled scenario (scenarios/*.json) holds over seeds 1..50 with
#       random and pct on its own cores; one with `expect` holds under fifo;
#   (c) the planted-bug scenarios (scenarios/canaries/) are caught by the
#       oracle they plant a bug for (exactly_once, capacity, one_lane_per_key,
#       per_key_order), the failure record lands under
#       results/failures/, and replaying it — from another directory, with
#       nothing but the record — reproduces the failure with the same trace
#       hash and the same trace bytes as rerunning the seed;
#   (d) each class of bad input exits 2 with one line on stderr naming the
#       file, the JSON pointer and what was expected.
#
#   scenario_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
L=$(realpath "$1")
S=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
case_timeout=300
source "$here/expect.sh"

# --- (a) the library holds --------------------------------------------------
library=0
for f in "$S"/*.json; do
  b=$(basename "$f" .json)
  library=$((library + 1))
  if grep -q '"expect"' "$f"; then
    expect "library_${b}_fifo" 0 "outcome=ok" -- "$L" run "$f" --strategy fifo
  else
    for strategy in random pct; do
      expect "library_${b}_${strategy}" 0 "all 50 seeds held" -- "$L" explore "$f" --strategy "$strategy" --seeds 50
    done
  fi
done
[ "$library" -ge 4 ] || { name=library_count; fail "expected at least 4 bundled scenarios, found $library"; }
expect determinism 0 "(twice)" -- "$L" check-determinism "$S/lanes_reap_then_reuse.json" --seeds 5

# --- (c) planted bugs are caught, recorded and replayed ---------------------
canary="$S/canaries/lanes_send_after_unlock.json"
expect canary_send_after_unlock 1 "oracle 'exactly_once' failed" -- "$L" explore "$canary" --seeds 1000
record=$(sed -n 's/^failure record: //p' out)
seed=$(sed -n 's/^seed=\([0-9]*\) steps=.*/\1/p' out)
hash=$(sed -n 's/.*outcome=oracle trace_hash=\([0-9a-f]*\).*/\1/p' out)
name=canary_record_path cases=$((cases + 1))
case "$record" in results/failures/lanes_send_after_unlock-random-*.json) ;; *) fail "record at '$record'" ;; esac
grep -qF "replay with: $L replay 'results/failures/" out || fail "no replay command printed"
mkdir elsewhere && cp "$record" elsewhere/rec.json
cd elsewhere || exit 1  # not a subshell: a failure must reach the count
expect canary_replay 1 "reproduced: the same trace hash $hash" -- "$L" replay rec.json --trace replayed.jsonl
cd .. || exit 1
expect canary_rerun 1 "trace_hash=$hash" -- "$L" run "$canary" --seed "$seed" --trace rerun.jsonl --record rerun.json
name=canary_trace_bytes cases=$((cases + 1))
cmp -s elsewhere/replayed.jsonl rerun.jsonl || fail "the replayed trace differs from the rerun's"
grep -q '"ev":"lanes.lane_closed"' rerun.jsonl || fail "no lane events in the trace"
expect canary_decrement_at_dequeue 1 "oracle 'capacity' failed" -- \
  "$L" explore "$S/canaries/lanes_decrement_at_dequeue.json" --seeds 1000 --record dq.json
for oracle in one_lane_per_key per_key_order; do
  expect "canary_replace_lane_$oracle" 1 "oracle '$oracle' failed" -- \
    "$L" explore "$S/canaries/lanes_replace_lane_$oracle.json" --seeds 1000 --record "rl_$oracle.json"
done
# An oracle left out of the list is not checked: the same planted bug passes.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['oracles']=['per_key_order','exactly_once']; json.dump(d,open('dq_off.json','w'))" \
  "$S/canaries/lanes_decrement_at_dequeue.json"
expect canary_oracle_off 0 "all 50 seeds held" -- "$L" explore dq_off.json --seeds 50

# --- (d) bad input ----------------------------------------------------------
base="$S/lanes_reap_then_reuse.json"
mk() {  # mk FILE PYTHON: a copy of $base edited by PYTHON (d is the document)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$base" "$2" "$1"
}
printf '{"lockstep": 1,' >malformed.json
expect bad_malformed 2 "lockstep: malformed.json: byte 16: syntax error" -- "$L" run malformed.json
printf '{"lockstep": 1, "lockstep": 1}' >duplicate.json
expect bad_duplicate_key 2 "duplicate.json: /lockstep: expected each key at most once" -- "$L" run duplicate.json
mk unknown.json 'd["system"]["lanes"]["ttl"]=5'
expect bad_unknown_field 2 "unknown.json: /system/lanes/ttl: expected one of canary, capacity, idle_ttl_ns, placement (unknown field)" -- "$L" run unknown.json
mk shards.json 'd["system"]["shards"]={}'
expect bad_unknown_component 2 "shards.json: /system/shards: expected one of cores, lanes (unknown field)" -- "$L" run shards.json
mk wrongtype.json 'd["system"]["cores"]="two"'
expect bad_wrong_type 2 'wrongtype.json: /system/cores: expected an integer from 1 to 64, found "two"' -- "$L" run wrongtype.json
mk missing.json 'del d["system"]["lanes"]["capacity"]'
expect bad_missing_field 2 "missing.json: /system/lanes/capacity: expected a field holding an integer from 1 to 1048576 or null (uncapped), but it is missing" -- "$L" run missing.json
mk range.json 'd["system"]["lanes"]["idle_ttl_ns"]=0'
expect bad_out_of_range 2 "range.json: /system/lanes/idle_ttl_ns: expected an integer from 1 to 3600000000000 (ns) or null (lanes never reap), found 0" -- "$L" run range.json
mk nested.json 'd["workload"]["actors"][0]["steps"][2]["route"]["key"]={"random_below":0}'
expect bad_out_of_range_nested 2 "nested.json: /workload/actors/0/steps/2/route/key/random_below: expected an integer from 1 to 1048576, found 0" -- "$L" run nested.json
mk oracle.json 'd["oracles"]=["per_key_order","fairness"]'
expect bad_oracle_name 2 'oracle.json: /oracles/1: expected one of "per_key_order", "exactly_once", "one_lane_per_key", "capacity", "lanes_gone", found "fairness"' -- "$L" run oracle.json
mk nolanes.json 'del d["system"]["lanes"]'
expect bad_step_component 2 "nolanes.json: /workload/actors/0/steps/0/route: expected a step on a component present in /system (route needs /system/lanes), found no lanes" -- "$L" run nolanes.json
mk core.json 'd["workload"]["actors"][1]["core"]=2'
expect bad_core 2 "core.json: /workload/actors/1/core: expected a core index below /system/cores (2), found 2" -- "$L" run core.json
expect bad_core_flag 2 "/workload/actors/1/core: expected a core index below the run's 1 cores (--cores), found 1" -- "$L" run "$base" --cores 1
mk range_order.json 'd["behaviour"]["consumer"]["duration_ns"]={"range":[5,1]}'
expect bad_range_order 2 "range_order.json: /behaviour/consumer/duration_ns/range: expected [lo, hi] with lo <= hi, found [5,1]" -- "$L" run range_order.json
mk twosteps.json 'd["workload"]["actors"][0]["steps"][0]["sleep_ns"]=4'
expect bad_two_kinds_in_a_step 2 "twosteps.json: /workload/actors/0/steps/0: expected a step: an object with exactly one of route, sleep_ns, drop_router" -- "$L" run twosteps.json
mk version.json 'd["lockstep"]=2'
expect bad_version 2 "version.json: /lockstep: expected the format version 1, found 2" -- "$L" run version.json
fifo="$S/lanes_capacity_fifo_expect.json"
for strategy in random pct; do
  expect "bad_expect_under_$strategy" 2 "/expect: expected exact expectations only under --strategy fifo (other schedules may differ), found strategy $strategy" -- \
    "$L" explore "$fifo" --strategy "$strategy" --seeds 2
done
expect bad_file_and_program 2 "--program: expected either a scenario FILE or --program/--options, found both" -- "$L" run "$base" --program velo
expect bad_missing_file 2 "nowhere.json" -- "$L" run nowhere.json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['scenario']['system']['cores']=0; json.dump(d,open('badrec.json','w'))" elsewhere/rec.json
expect bad_record_scenario 2 "badrec.json: /scenario/system/cores: expected an integer from 1 to 64, found 0" -- "$L" replay badrec.json
name=bad_record_prints_nothing cases=$((cases + 1))
[ ! -s out ] || fail "a refused record printed on stdout"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['program']='velo'; json.dump(d,open('both.json','w'))" elsewhere/rec.json
expect bad_record_program_and_scenario 2 "both.json: /program: expected no program or options in a scenario record" -- "$L" replay both.json

# --- liveness is its own verdict (exit 3, like a deadlock) --------------------
# A consumer slower than the liveness budget: items are still queued when it ends.
mk slow.json 'd["behaviour"]["consumer"]["duration_ns"]=5000000; d["liveness_ns"]=1000'
expect liveness_exit_3 3 "FAILED liveness: liveness oracle 'liveness' failed" -- "$L" run slow.json --seed 1

echo "scenario_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
