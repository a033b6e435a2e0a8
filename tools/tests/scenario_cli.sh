#!/usr/bin/env bash
# Goal: scenario files work end to end through the lockstep binary.
#   (a) every bundled scenario (scenarios/*.json: lanes_*, shards_*, flight_*) holds
#       over seeds 1..50 with random and pct on its own cores; one with
#       `expect` holds under fifo;
#   (c) the planted-bug scenarios (scenarios/canaries/) are caught by the
#       oracle they plant a bug for (exactly_once, capacity, one_lane_per_key,
#       per_key_order; for the shards every shard oracle; for the single-flight
#       table every flight oracle), the failure record lands under
#       results/failures/, and replaying it — from another directory, with
#       nothing but the record — reproduces the failure with the same trace
#       hash and the same trace bytes as rerunning the seed;
#   (d) each class of bad input exits 2 with one line on stderr naming the
#       file, the JSON pointer and what was expected;
#   (e) run and check-determinism take several FILEs (or a directory): each
#       file in turn, the exit code of the first that did not hold; the former
#       programs' scenarios hold on one core more than their own.
#
#   scenario_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=300
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

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
# A harness crash PCT found (seed 3323, beyond the seed ranges below): a waiter
# held back past the liveness phase spawned its worker while the driver was
# joining its tasks, and the join's handle moved under it.
expect regression_join_while_tasks_grow 0 "all 1 seeds held" -- \
  "$L" explore "$S/flight_late_subscriber_2cores.json" --strategy pct --seeds 3323..3323
# The liveness phase judges every waiter spawned, started or not: counted only
# once running, a waiter not yet started when the phase began escaped it (82 of
# 200 random seeds held here before).
for strategy in random pct; do
  expect "liveness_judges_unstarted_waiters_$strategy" 1 "200 failures," -- \
    "$L" explore "$S/harness/flight_unstarted_waiter_hangs.json" --strategy "$strategy" --seeds 200 --stop-after 0
done
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
# The lane router's planted bugs (scenarios/canaries/lanes_*.json), each caught
# by the oracle it plants a bug for: bug:oracle:seeds. The consumer wrapper's
# (consumer_*): after a contained panic it loses the lane's next item, or
# hands it over late.
for triple in decrement_at_dequeue:capacity:1000 replace_lane_one_lane_per_key:one_lane_per_key:1000 \
  replace_lane_per_key_order:per_key_order:1000 consumer_loses_after_panic:exactly_once:200 \
  consumer_reorders_after_panic:per_key_order:200 consumer_loses_after_panic_lane_survives:lane_survives:200 \
  exit_guard_keeps_entry_cancelled:no_black_hole:50; do
  IFS=: read -r bug oracle seeds <<<"$triple"
  expect "canary_lanes_$bug" 1 "oracle '$oracle' failed" -- \
    "$L" explore "$S/canaries/lanes_$bug.json" --seeds "$seeds" --record "lanes_$bug.json"
done
expect canary_decrement_at_dequeue_depth 1 "oracle 'capacity' failed" -- \
  "$L" explore "$S/canaries/lanes_decrement_at_dequeue_depth.json" --seeds 50 --record dqd.json
grep -qF "route() reported depth 0" out || fail "the understated depth is not named"
expect canary_lane_count_only_grows 1 "lane_count() is 2 once the run settled" -- \
  "$L" explore "$S/canaries/lanes_lane_count_only_grows.json" --seeds 50 --record lcg.json
expect canary_send_after_unlock_dropped 1 "oracle 'no_black_hole' failed" -- \
  "$L" explore "$S/canaries/lanes_send_after_unlock_dropped.json" --seeds 200 --record sad.json
grep -qF "no lane of its key ended by an escaped panic or a cancellation" out || fail "the uncaused drop is not named"
expect cancel_lane_holds 0 "all 30 seeds held" -- "$L" explore "$S/lanes_cancel_lane_2cores.json" --seeds 30
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['workload']['actors'][0]['steps'].append({'cancel_lane': {'key': 1}}); json.dump(d,open('cl_shards.json','w'))" \
  "$S/shards_backpressure_1core.json"
expect bad_cancel_lane_on_shards 2 "/cancel_lane: expected a step on a component present in /system (cancel_lane needs /system/lanes), found no lanes" -- \
  "$L" run cl_shards.json --seed 1
expect canary_lane_holds_map 1 "oracle 'lanes_gone' failed" -- \
  "$L" explore "$S/canaries/lanes_lane_holds_map.json" --seeds 50 --record lhm.json
grep -qE "[0-9]+ of [0-9]+ lanes still open after the router was dropped \(keys [0-9]" out ||
  fail "lane_holds_map: lanes_gone does not name the lanes left open"
expect canary_lanes_exit_guard_keeps_entry 1 "oracle 'no_black_hole' failed" -- \
  "$L" explore "$S/canaries/lanes_exit_guard_keeps_entry.json" --seeds 50 --record lanes_exit_guard_keeps_entry.json
grep -qF "a dead lane swallowed it" out || fail "the black hole is not named"
# Shard stats as observables: observe reads the last publication, wait_until
# polls it; a wrong value fails observe by name, one never published is
# liveness, a stat without shards or a shard past the count is bad input.
waited="$S/shards_retry_after_completion_waited_2cores.json"
edit() {  # edit OUT PYTHON: a copy of $waited edited by PYTHON (d is the document)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$waited" "$2" "$1"
}
expect stat_waited_holds 0 "all 20 seeds held" -- "$L" explore "$waited" --seeds 20
edit stat_wrong.json "d['workload']['actors'][0]['steps'][2]['observe']['value']=2"
expect stat_observe_wrong 1 "step 2: stat coalesced summed over the shards is 1 at t=" -- "$L" run stat_wrong.json --seed 1
grep -qF "oracle 'observe' failed" out || fail "a wrong stat is not caught by observe"
edit stat_never.json "d['workload']['actors'][0]['steps'][1]['wait_until']['value']=5; d['liveness_ns']=100000"
expect stat_wait_never 3 "wait_until stat completed of shard 1 5 still 1 after 100000ns" -- "$L" run stat_never.json --seed 1
edit stat_shard_past.json "d['workload']['actors'][0]['steps'][2]['observe']['shard']=2"
expect bad_stat_shard 2 "stat_shard_past.json: /workload/actors/0/steps/2/observe/shard: expected a shard index below /system/shards/count (2), found 2" -- \
  "$L" run stat_shard_past.json --seed 1
edit stat_no_value.json "del d['workload']['actors'][0]['steps'][2]['observe']['value']"
expect bad_stat_no_value 2 "stat_no_value.json: /workload/actors/0/steps/2/observe: expected an object with exactly one of lane_count, in_flight and stat (with value" -- \
  "$L" run stat_no_value.json --seed 1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['workload']['actors'][0]['steps'].append({'observe': {'stat': 'completed', 'value': 1}}); json.dump(d,open('stat_on_lanes.json','w'))" \
  "$S/lanes_reap_then_reuse.json"
expect bad_stat_on_lanes 2 "/observe/stat: expected an observable of a component present in /system (stat needs /system/shards), found no shards" -- \
  "$L" run stat_on_lanes.json --seed 1
# any_order compares a list expectation as a multiset, as a seed that sorts:
# the interleaved producers' order fails the file in order, holds in any order,
# and a wrong multiset still fails, shown sorted; a name not in /expect is bad input.
many="$S/lanes_many_producers_fifo.json"
expect any_order_holds 0 "outcome=ok" -- "$L" run "$many" --strategy fifo
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect'].pop('any_order'); json.dump(d,open('in_order.json','w'))" "$many"
expect any_order_needed 1 "oracle 'expect' failed" -- "$L" run in_order.json --strategy fifo
grep -qF "consumed: expected [0 1 2" out || fail "the in-order report does not name consumed"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect']['consumed'][5]=99; json.dump(d,open('wrong_multiset.json','w'))" "$many"
expect any_order_wrong_multiset 1 "consumed (any order): expected [0 1 2 3 4 6" -- "$L" run wrong_multiset.json --strategy fifo
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect']['any_order']=['answers']; json.dump(d,open('any_order_absent.json','w'))" "$many"
expect bad_any_order_absent 2 'any_order_absent.json: /expect/any_order/0: expected the name of a list expectation present in /expect, found "answers"' -- \
  "$L" run any_order_absent.json --strategy fifo
# An escaped panic that ends the lane needs contain false, and lanes alone.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['behaviour']['consumer']['contain']=True; json.dump(d,open('esc_contained.json','w'))" \
  "$S/lanes_escaped_panic_then_route_1core.json"
expect bad_escaped_panic_contained 2 'esc_contained.json: /behaviour/consumer/escaped_panic: expected "fails_run" unless contain is false' -- \
  "$L" run esc_contained.json --seed 1
# Without the wrapper's bug the same files hold: the catch is the bug's.
for bug in loses reorders; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['system']['lanes']['canary']='none'; json.dump(d,open(sys.argv[2],'w'))" \
    "$S/canaries/lanes_consumer_${bug}_after_panic.json" "cf_$bug.json"
  expect "canary_consumer_${bug}_fixed_holds" 0 "all 50 seeds held" -- "$L" explore "cf_$bug.json" --seeds 50
done
# A consumer that does not contain its panic (contain: false): the router
# does not catch it either, so the run fails as an uncaught exception — which
# expect_failure can assert.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['behaviour']['consumer']['contain']=False; del d['expect']; json.dump(d,open('escape.json','w'))" \
  "$S/lanes_survives_consumer_panic_fifo.json"
expect consumer_panic_escapes 1 "FAILED uncaught_exception" -- "$L" run escape.json --seed 1
grep -qF "deliberate lane consumer panic" out || fail "the failure does not name the consumer's panic"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect_failure']={'kind':'uncaught_exception','contains':'deliberate lane consumer panic'}; json.dump(d,open('escape_expected.json','w'))" \
  escape.json
expect consumer_panic_escapes_expected 0 "all 20 seeds held" -- "$L" explore escape_expected.json --seeds 20
# An oracle left out of the list is not checked: the same planted bug passes.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['oracles']=['per_key_order','exactly_once']; json.dump(d,open('dq_off.json','w'))" \
  "$S/canaries/lanes_decrement_at_dequeue.json"
expect canary_oracle_off 0 "all 50 seeds held" -- "$L" explore dq_off.json --seeds 50

# The shard scheduler's planted bugs (scenarios/canaries/shards_*.json): each
# is caught by the oracle it plants a bug for, with the engine's own
# check_invariants() off (the driver never turns it on).
for pair in skip_final_flush:state keep_expired_request_ids:request_ids lose_expired:conservation \
  ignore_pending_cap:pending_cap lifo_per_key:per_key_order ignore_budget:class_budget \
  refile_to_front:fairness complete_before_process:one_in_flight panic_not_in_doubt:counters \
  evict_ignores_age:eviction submit_never_waits:backpressure try_submit_next_shard:placement \
  full_reported_closed:backpressure clean_error_not_failed:counters panic_uncounted:counters \
  expiry_uncounted:counters started_before_coalescing:counters final_flush_uncounted:counters \
  queue_wait_absolute:counters release_id_at_dispatch:request_ids refile_to_front_budget3:fairness \
  coalesced_uncounted:counters completed_counts_successes:counters evict_busy_keys:eviction \
  publish_before_flushes_end:counters shed_only_past_deadline:deadlines no_publish_on_exit:counters; do
  bug=${pair%%:*} oracle=${pair##*:}
  expect "canary_shards_$bug" 1 "oracle '$oracle' failed" -- \
    "$L" explore "$S/canaries/shards_$bug.json" --seeds 1000 --record "sh_$bug.json"
done
# Each counters rule has its own planted bug, named by the counter it breaks.
for pair in clean_error_not_failed:failed panic_uncounted:panicked expiry_uncounted:expired \
  started_before_coalescing:started final_flush_uncounted:evicted queue_wait_absolute:queue_wait_ns \
  coalesced_uncounted:coalesced completed_counts_successes:completed; do
  bug=${pair%%:*} counter=${pair##*:}
  expect "canary_shards_${bug}_names_$counter" 1 "shard 0 at exit: $counter is" -- \
    "$L" run "$S/canaries/shards_$bug.json" --seed 1
done
expect canary_shards_no_publish_on_exit 1 "shard 0 at exit: it never published its stats" -- \
  "$L" run "$S/canaries/shards_no_publish_on_exit.json" --seed 3
expect canary_shards_no_publish_on_exit_stale 1 "shard 1 at exit: completed is 0, but the log shows 1" -- \
  "$L" run "$S/canaries/shards_no_publish_on_exit.json" --seed 1
expect canary_shards_publish_before_flushes_end_names_gauges 1 "(an exited shard holds nothing)" -- \
  "$L" run "$S/canaries/shards_publish_before_flushes_end.json" --seed 1
expect canary_flight_recycled_outcome 1 "oracle 'same_value' failed" -- \
  "$L" explore "$S/canaries/flight_recycled_outcome.json" --seeds 50 --record fro.json
grep -qF "whose worker had published nothing" out || fail "the stale answer is not named"
expect canary_flight_count_answers_as_abandoned 1 "oracle 'counters' failed" -- \
  "$L" explore "$S/canaries/flight_count_answers_as_abandoned.json" --seeds 200 --record fa.json
grep -qF "abandoned_total() is" out || fail "the flight counters canary is not caught by abandoned_total"
# A shard failure record replays from the record alone, byte for byte.
expect canary_shards_record 1 "oracle 'fairness' failed" -- \
  "$L" run "$S/canaries/shards_refile_to_front.json" --seed 3 --trace sh_run.jsonl --record sh_rec.json
sh_hash=$(sed -n 's/.*outcome=oracle trace_hash=\([0-9a-f]*\).*/\1/p' out)
expect canary_shards_replay 1 "reproduced: the same trace hash $sh_hash" -- "$L" replay sh_rec.json --trace sh_replayed.jsonl
name=canary_shards_trace_bytes cases=$((cases + 1))
cmp -s sh_run.jsonl sh_replayed.jsonl || fail "the replayed shard trace differs from the run's"
grep -q '"ev":"shards.dispatched"' sh_run.jsonl || fail "no shard events in the trace"
# With the oracle left out, the same planted bug passes: the catch is the oracle's.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['oracles']=['conservation','state']; json.dump(d,open('rf_off.json','w'))" \
  "$S/canaries/shards_refile_to_front.json"
expect canary_shards_oracle_off 0 "all 50 seeds held" -- "$L" explore rf_off.json --seeds 50
expect determinism_shards 0 "(twice)" -- "$L" check-determinism "$S/shards_shutdown_races_work_2cores.json" --seeds 5

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
mk cache.json 'd["system"]["cache"]={}'
expect bad_unknown_component 2 "cache.json: /system/cache: expected one of cores, lanes, shards, single_flight, wiring (unknown field)" -- "$L" run cache.json
mk wrongtype.json 'd["system"]["cores"]="two"'
expect bad_wrong_type 2 'wrongtype.json: /system/cores: expected an integer from 1 to 64, found "two"' -- "$L" run wrongtype.json
mk missing.json 'del d["system"]["lanes"]["capacity"]'
expect bad_missing_field 2 "missing.json: /system/lanes/capacity: expected a field holding an integer from 1 to 1048576 or null (uncapped), but it is missing" -- "$L" run missing.json
mk range.json 'd["system"]["lanes"]["idle_ttl_ns"]=0'
expect bad_out_of_range 2 "range.json: /system/lanes/idle_ttl_ns: expected an integer from 1 to 3600000000000 (ns) or null (lanes never reap), found 0" -- "$L" run range.json
mk nested.json 'd["workload"]["actors"][0]["steps"][2]["route"]["key"]={"random_below":0}'
expect bad_out_of_range_nested 2 "nested.json: /workload/actors/0/steps/2/route/key/random_below: expected an integer from 1 to 1048576, found 0" -- "$L" run nested.json
mk oracle.json 'd["oracles"]=["per_key_order","liveliness"]'
expect bad_oracle_name 2 'oracle.json: /oracles/1: expected one of "spec_lanes", "spec_shards", "spec_flights", "per_key_order", "exactly_once", "one_lane_per_key", "capacity", "lanes_gone", "lane_survives", "no_black_hole", "conservation", "state", "one_in_flight", "class_budget", "pending_cap", "fairness", "request_ids", "deadlines", "eviction", "backpressure", "placement", "one_leader", "cancel_publish", "same_value", "servable", "answered", "delivery", "counters", found "liveliness"' -- "$L" run oracle.json
mk oracle_other.json 'd["oracles"]=["per_key_order","fairness"]'
expect bad_oracle_of_absent_component 2 'oracle_other.json: /oracles/1: expected an oracle of the lanes present in /system (spec_lanes, per_key_order, exactly_once, one_lane_per_key, capacity, lanes_gone, lane_survives, no_black_hole, counters), found "fairness"' -- "$L" run oracle_other.json
mk nolanes.json 'del d["system"]["lanes"]'
expect bad_step_component 2 "nolanes.json: /workload/actors/0/steps/0/route: expected a step on a component present in /system (route needs /system/lanes), found no lanes" -- "$L" run nolanes.json
mk core.json 'd["workload"]["actors"][1]["core"]=2'
expect bad_core 2 "core.json: /workload/actors/1/core: expected a core index below /system/cores (2), found 2" -- "$L" run core.json
expect bad_core_flag 2 "/workload/actors/1/core: expected a core index below the run's 1 cores (--cores), found 1" -- "$L" run "$base" --cores 1
mk range_order.json 'd["behaviour"]["consumer"]["duration_ns"]={"range":[5,1]}'
expect bad_range_order 2 "range_order.json: /behaviour/consumer/duration_ns/range: expected [lo, hi] with lo <= hi, found [5,1]" -- "$L" run range_order.json
mk twosteps.json 'd["workload"]["actors"][0]["steps"][0]["sleep_ns"]=4'
expect bad_two_kinds_in_a_step 2 "twosteps.json: /workload/actors/0/steps/0: expected a step: an object with exactly one of route, sleep_ns, drop_router" -- "$L" run twosteps.json
# Lane consumer outcomes (behaviour.consumer.outcomes, contain; expect.consumed).
mk c_outcome.json 'd["behaviour"]["consumer"]["outcomes"]=[{"when":{"key":1},"outcome":"error_clean"}]'
expect bad_consumer_outcome 2 'c_outcome.json: /behaviour/consumer/outcomes/0/outcome: expected one of "ok", "error", "panic", found "error_clean"' -- "$L" run c_outcome.json
mk c_when.json 'd["behaviour"]["consumer"]["outcomes"]=[{"when":{"nth_call":0},"outcome":"panic"}]'
expect bad_consumer_nth_call 2 "c_when.json: /behaviour/consumer/outcomes/0/when/nth_call: expected an integer from 1 to 100000000 (the run's Nth consumer call), found 0" -- "$L" run c_when.json
mk c_when2.json 'd["behaviour"]["consumer"]["outcomes"]=[{"when":{"key":1,"percent":5},"outcome":"panic"}]'
expect bad_consumer_two_whens 2 'c_when2.json: /behaviour/consumer/outcomes/0/when: expected an object with exactly one of key, nth_call, percent, found {"key":1,"percent":5}' -- "$L" run c_when2.json
mk c_nowhen.json 'd["behaviour"]["consumer"]["outcomes"]=[{"outcome":"panic"}]'
expect bad_consumer_rule_missing_when 2 "c_nowhen.json: /behaviour/consumer/outcomes/0/when: expected a field holding an object with exactly one of key, nth_call, percent, but it is missing" -- "$L" run c_nowhen.json
mk c_contain.json 'd["behaviour"]["consumer"]["contain"]="yes"'
expect bad_consumer_contain 2 'c_contain.json: /behaviour/consumer/contain: expected true (the consumer catches its own panic: the lane survives) or false (the panic escapes into the lane), found "yes"' -- "$L" run c_contain.json
mk c_consumed.json 'd["expect"]={"consumed":[0,"one"]}'
expect bad_expect_consumed 2 'c_consumed.json: /expect/consumed/1: expected an integer from 0 to 100000000, found "one"' -- "$L" run c_consumed.json --strategy fifo
mk version.json 'd["lockstep"]=2'
expect bad_version 2 "version.json: /lockstep: expected the format version 1, found 2" -- "$L" run version.json
fifo="$S/lanes_capacity_fifo_expect.json"
for strategy in random pct; do
  expect "bad_expect_under_$strategy" 2 "/expect: expected exact expectations only under --strategy fifo (other schedules may differ), found strategy $strategy" -- \
    "$L" explore "$fifo" --strategy "$strategy" --seeds 2
done
expect bad_missing_file 2 "nowhere.json" -- "$L" run nowhere.json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['scenario']['system']['cores']=0; json.dump(d,open('badrec.json','w'))" elsewhere/rec.json
expect bad_record_scenario 2 "badrec.json: /scenario/system/cores: expected an integer from 1 to 64, found 0" -- "$L" replay badrec.json
name=bad_record_prints_nothing cases=$((cases + 1))
[ ! -s out ] || fail "a refused record printed on stdout"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['program']='velo'; json.dump(d,open('both.json','w'))" elsewhere/rec.json
expect bad_record_program_and_scenario 2 "both.json: /program: expected a scenario record (with /scenario); this is a record of a built-in program" -- "$L" replay both.json

# The shard slice of the format: each class of bad input, one line, exit 2.
sbase="$S/shards_shutdown_races_work_2cores.json"
smk() {  # smk FILE PYTHON: a copy of $sbase edited by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$sbase" "$2" "$1"
}
smk s_unknown.json 'd["system"]["shards"]["budget"]=1'
expect bad_shards_unknown_field 2 "s_unknown.json: /system/shards/budget: expected one of admit_batch, canary, classes, coalesce_duplicates, count, evict_after_ns, mailbox_capacity, max_pending, panic_policy, tick_ns (unknown field)" -- "$L" run s_unknown.json
smk s_missing.json 'del d["system"]["shards"]["classes"]'
expect bad_shards_missing_field 2 "s_missing.json: /system/shards/classes: expected a field holding a list of 1 to 8 classes, but it is missing" -- "$L" run s_missing.json
smk s_type.json 'd["system"]["shards"]["coalesce_duplicates"]="yes"'
expect bad_shards_wrong_type 2 's_type.json: /system/shards/coalesce_duplicates: expected true or false, found "yes"' -- "$L" run s_type.json
smk s_range.json 'd["system"]["shards"]["classes"][1]["max_inflight"]=0'
expect bad_shards_out_of_range 2 "s_range.json: /system/shards/classes/1/max_inflight: expected an integer from 1 to 1024 (items of the class in flight per shard), found 0" -- "$L" run s_range.json
smk s_policy.json 'd["system"]["shards"]["panic_policy"]="explode"'
expect bad_shards_panic_policy 2 's_policy.json: /system/shards/panic_policy: expected one of "contain", "abort", found "explode"' -- "$L" run s_policy.json
smk s_state.json 'd["behaviour"]["processor"]["state"]="sum"'
expect bad_processor_state 2 's_state.json: /behaviour/processor/state: expected one of "accumulate", "keep", "drop", found "sum"' -- "$L" run s_state.json
smk s_percent.json 'd["behaviour"]["processor"]["outcomes"]=[{"when":{"percent":101},"outcome":"panic"}]'
expect bad_processor_percent 2 "s_percent.json: /behaviour/processor/outcomes/0/when/percent: expected an integer from 0 to 100 (the chance per call, drawn from the seed), found 101" -- "$L" run s_percent.json
smk s_when2.json 'd["behaviour"]["processor"]["outcomes"]=[{"when":{"key":1,"nth_call":2},"outcome":"panic"}]'
expect bad_processor_two_whens 2 's_when2.json: /behaviour/processor/outcomes/0/when: expected an object with exactly one of key, nth_call, percent, found {"key":1,"nth_call":2}' -- "$L" run s_when2.json
smk s_outcome.json 'd["behaviour"]["processor"]["outcomes"]=[{"when":{"key":1},"outcome":"boom"}]'
expect bad_processor_outcome 2 's_outcome.json: /behaviour/processor/outcomes/0/outcome: expected one of "ok", "drop", "error_clean", "error_in_doubt", "panic", "crash_segv", "crash_abort", "crash_overflow", found "boom"' -- "$L" run s_outcome.json
smk s_cancel.json 'd["workload"]["actors"][0]["steps"].append({"cancel_worker":{"key":1}})'
expect bad_cancel_worker_on_shards 2 "s_cancel.json: /workload/actors/0/steps/1/cancel_worker: expected a step on a component present in /system (cancel_worker needs /system/single_flight), found no single_flight" -- "$L" run s_cancel.json
smk s_observe.json 'd["workload"]["actors"][0]["steps"].append({"observe":{"lane_count":0}})'
expect bad_observe_on_shards 2 "s_observe.json: /workload/actors/0/steps/1/observe/lane_count: expected an observable of a component present in /system (lane_count needs /system/lanes), found no lanes" -- "$L" run s_observe.json
smk s_observe2.json 'd["workload"]["actors"][0]["steps"].append({"observe":{"lane_count":0,"in_flight":0}})'
expect bad_observe_two 2 "s_observe2.json: /workload/actors/0/steps/1/observe: expected an object with exactly one of lane_count, in_flight and stat (with value, and optional shard), found" -- "$L" run s_observe2.json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['workload']['actors'][0]['steps'][1]={'wait_until':{'lane_count':0,'in_flight':0}}; json.dump(d,open('wu_two.json','w'))" "$S/lanes_idle_lane_reaped_waited.json"
expect bad_wait_until_two 2 "wu_two.json: /workload/actors/0/steps/1/wait_until: expected an object with exactly one of lane_count, in_flight and stat (with value, and optional shard), and optional poll_ns, found" -- "$L" run wu_two.json
# An observe step whose value differs fails the run by the observe oracle's name.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['workload']['actors'][0]['steps'][3]={'observe':{'lane_count':1}}; json.dump(d,open('obs_wrong.json','w'))" "$S/lanes_idle_lane_reaped_observed.json"
expect observe_wrong_value 1 "oracle 'observe' failed in fiber 1 'actor.producer': actor producer step 3: lane_count() is 0 at t=" -- "$L" run obs_wrong.json
# A wait_until whose value never comes fails liveness within the budget (no ttl: the lanes never reap).
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['system']['lanes']['idle_ttl_ns']=None; json.dump(d,open('wu_never.json','w'))" "$S/lanes_idle_lane_reaped_waited.json"
expect wait_until_never_holds 3 "actor producer step 1: wait_until lane_count() 0 still 2 after 1000000ns" -- "$L" run wu_never.json
smk s_class.json 'd["workload"]["actors"][1]["steps"][0]["try_submit"]["class"]=2'
expect bad_submit_class 2 "s_class.json: /workload/actors/1/steps/0/try_submit/class: expected a class index below the 2 classes of /system/shards/classes, found 2" -- "$L" run s_class.json
smk s_ttl.json 'd["workload"]["actors"][0]["steps"][0]["submit"]["ttl_ns"]=-1'
expect bad_submit_ttl 2 "s_ttl.json: /workload/actors/0/steps/0/submit/ttl_ns: expected an integer from 0 to 3600000000000 (nanoseconds of virtual time), found -1" -- "$L" run s_ttl.json
smk s_shutdown_arg.json 'd["workload"]["actors"][1]["steps"][1]={"shutdown":{"now":True}}'
expect bad_shutdown_argument 2 's_shutdown_arg.json: /workload/actors/1/steps/1/shutdown: expected an empty object, found {"now":true}' -- "$L" run s_shutdown_arg.json
smk s_route.json 'd["workload"]["actors"][0]["steps"][0]={"route":{"key":1}}'
expect bad_lane_step_on_shards 2 "s_route.json: /workload/actors/0/steps/0/route: expected a step on a component present in /system (route needs /system/lanes), found no lanes" -- "$L" run s_route.json
mk l_submit.json 'd["workload"]["actors"][0]["steps"][0]={"submit":{"key":1}}'
expect bad_shard_step_on_lanes 2 "l_submit.json: /workload/actors/0/steps/0/submit: expected a step on a component present in /system (submit needs /system/shards), found no shards" -- "$L" run l_submit.json
mk l_processor.json 'd["behaviour"]["processor"]={"state":"keep"}'
expect bad_processor_on_lanes 2 "l_processor.json: /behaviour/processor: expected behaviour for a component present in /system (processor needs /system/shards), found no shards" -- "$L" run l_processor.json
smk s_consumer.json 'd["behaviour"]["consumer"]={"duration_ns":5}'
expect bad_consumer_on_shards 2 "s_consumer.json: /behaviour/consumer: expected behaviour for a component present in /system (consumer needs /system/lanes), found no lanes" -- "$L" run s_consumer.json
smk s_expect.json 'd["expect"]={"handled":1}'
expect bad_lane_expect_on_shards 2 "s_expect.json: /expect/handled: expected an expectation on a component present in /system (handled needs /system/lanes), found no lanes" -- "$L" run s_expect.json --strategy fifo
smk s_oracle.json 'd["oracles"]=["conservation","capacity"]'
expect bad_lane_oracle_on_shards 2 's_oracle.json: /oracles/1: expected an oracle of the shards present in /system (spec_shards, conservation, state, per_key_order, one_in_flight, class_budget, pending_cap, fairness, request_ids, deadlines, eviction, backpressure, placement, counters), found "capacity"' -- "$L" run s_oracle.json
smk s_both.json 'd["system"]["lanes"]={"idle_ttl_ns":None,"capacity":None}'
expect bad_two_components_unwired 2 "s_both.json: /system/wiring: expected a field saying what the lane consumer does with each item (lookup, forward), but it is missing" -- "$L" run s_both.json
expect bad_shards_expect_under_pct 2 "/expect: expected exact expectations only under --strategy fifo (other schedules may differ), found strategy pct" -- \
  "$L" explore "$S/shards_panic_contained_fifo.json" --strategy pct --seeds 2

# The single-flight slice: planted bugs caught by their oracle, a record
# replayed byte for byte, an oracle switched off, bad input.
for pair in send_skips_without_subscribers:answered removal_without_identity_check:one_leader \
  decrement_outside_lock:cancel_publish keep_retired_slot:servable abandon_after_answer:same_value \
  keep_retired_slot_counters:counters; do
  bug=${pair%%:*} oracle=${pair##*:}
  expect "canary_flight_$bug" 1 "oracle '$oracle' failed" -- \
    "$L" explore "$S/canaries/flight_$bug.json" --seeds 1000 --record "fl_$bug.json"
done
expect canary_flight_record 1 "oracle 'one_leader' failed" -- \
  "$L" run "$S/canaries/flight_removal_without_identity_check.json" --seed 1 --trace fl_run.jsonl --record fl_rec.json
fl_hash=$(sed -n 's/.*outcome=oracle trace_hash=\([0-9a-f]*\).*/\1/p' out)
expect canary_flight_replay 1 "reproduced: the same trace hash $fl_hash" -- "$L" replay fl_rec.json --trace fl_replayed.jsonl
name=canary_flight_trace_bytes cases=$((cases + 1))
cmp -s fl_run.jsonl fl_replayed.jsonl || fail "the replayed flight trace differs from the run's"
grep -q '"ev":"flight.joined"' fl_run.jsonl || fail "no flight events in the trace"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['oracles']=['cancel_publish','same_value','servable','answered']; json.dump(d,open('fl_off.json','w'))" \
  "$S/canaries/flight_removal_without_identity_check.json"
expect canary_flight_oracle_off 0 "all 50 seeds held" -- "$L" explore fl_off.json --seeds 50
# A hung waiter with the answered oracle off is still a liveness verdict.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['oracles']=['one_leader']; json.dump(d,open('fl_hang.json','w'))" \
  "$S/canaries/flight_send_skips_without_subscribers.json"
expect liveness_flight_exit_3 3 "FAILED liveness: liveness oracle 'liveness' failed" -- "$L" explore fl_hang.json --seeds 1000
expect determinism_flight 0 "(twice)" -- "$L" check-determinism "$S/flight_faults_random_2cores.json" --seeds 5
fbase="$S/flight_faults_random_2cores.json"
fmk() {  # fmk FILE PYTHON: a copy of $fbase edited by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$fbase" "$2" "$1"
}
fmk f_unknown.json 'd["system"]["single_flight"]["ttl"]=1'
expect bad_flight_unknown_field 2 "f_unknown.json: /system/single_flight/ttl: expected one of canary (unknown field)" -- "$L" run f_unknown.json
fmk f_canary.json 'd["system"]["single_flight"]["canary"]="lossy"'
expect bad_flight_canary 2 'f_canary.json: /system/single_flight/canary: expected one of "none", "send_skips_without_subscribers", "decrement_outside_lock", "removal_without_identity_check", "keep_retired_slot", "abandon_after_answer", "count_answers_as_abandoned", "recycled_outcome", found "lossy"' -- "$L" run f_canary.json
fmk f_outcome.json 'd["behaviour"]["worker"]["outcomes"]=[{"when":{"key":1},"outcome":"error_clean"}]'
expect bad_worker_outcome 2 'f_outcome.json: /behaviour/worker/outcomes/0/outcome: expected one of "ok", "error", "panic", "stops_early", found "error_clean"' -- "$L" run f_outcome.json
fmk f_percent.json 'd["behaviour"]["worker"]["outcomes"]=[{"when":{"percent":101},"outcome":"panic"}]'
expect bad_worker_percent 2 "f_percent.json: /behaviour/worker/outcomes/0/when/percent: expected an integer from 0 to 100 (the chance per worker, drawn from the seed), found 101" -- "$L" run f_percent.json
fmk f_leave.json 'd["workload"]["actors"][0]["steps"][0]["join"]["leave_after_ns"]=-5'
expect bad_join_leave_after 2 "f_leave.json: /workload/actors/0/steps/0/join/leave_after_ns: expected an integer from 0 to 3600000000000 (nanoseconds of virtual time), found -5" -- "$L" run f_leave.json
fmk f_join_field.json 'd["workload"]["actors"][0]["steps"][0]["join"]["class"]=0'
expect bad_join_unknown_field 2 "f_join_field.json: /workload/actors/0/steps/0/join/class: expected one of count, gap_ns, id, key, leave_after_ns (unknown field)" -- "$L" run f_join_field.json
fmk f_submit.json 'd["workload"]["actors"][0]["steps"][0]={"submit":{"key":1}}'
expect bad_shard_step_on_flight 2 "f_submit.json: /workload/actors/0/steps/0/submit: expected a step on a component present in /system (submit needs /system/shards), found no shards" -- "$L" run f_submit.json
smk s_join.json 'd["workload"]["actors"][0]["steps"][0]={"join":{"key":1}}'
expect bad_join_on_shards 2 "s_join.json: /workload/actors/0/steps/0/join: expected a step on a component present in /system (join needs /system/single_flight), found no single_flight" -- "$L" run s_join.json
smk s_worker.json 'd["behaviour"]["worker"]={"duration_ns":5}'
expect bad_worker_on_shards 2 "s_worker.json: /behaviour/worker: expected behaviour for a component present in /system (worker needs /system/single_flight), found no single_flight" -- "$L" run s_worker.json
fmk f_processor.json 'd["behaviour"]["processor"]={"state":"keep"}'
expect bad_processor_on_flight 2 "f_processor.json: /behaviour/processor: expected behaviour for a component present in /system (processor needs /system/shards), found no shards" -- "$L" run f_processor.json
fmk f_oracle.json 'd["oracles"]=["one_leader","fairness"]'
expect bad_shard_oracle_on_flight 2 'f_oracle.json: /oracles/1: expected an oracle of the single_flight present in /system (spec_flights, one_leader, cancel_publish, same_value, servable, answered, counters), found "fairness"' -- "$L" run f_oracle.json
fmk f_expect.json 'd["expect"]={"processed":[]}'
expect bad_shard_expect_on_flight 2 "f_expect.json: /expect/processed: expected an expectation on a component present in /system (processed needs /system/shards), found no shards" -- "$L" run f_expect.json --strategy fifo
smk s_fexpect.json 'd["expect"]={"answers":[]}'
expect bad_flight_expect_on_shards 2 "s_fexpect.json: /expect/answers: expected an expectation on a component present in /system (answers needs /system/single_flight), found no single_flight" -- "$L" run s_fexpect.json --strategy fifo
fmk f_both.json 'd["system"]["shards"]={"count":1,"classes":[{"max_inflight":1}],"mailbox_capacity":4}'
expect bad_flight_and_shards 2 "f_both.json: /system/lanes: expected lanes in front of a composed system (their consumer uses shards and single_flight), found shards and single_flight alone" -- "$L" run f_both.json
fmk f_answer.json 'd["expect"]={"answers":["ok:x"]}'
expect bad_flight_answer_format 2 'f_answer.json: /expect/answers/0: expected ok:V, error:V or abandoned, found "ok:x"' -- "$L" run f_answer.json --strategy fifo
expect bad_flight_expect_under_random 2 "/expect: expected exact expectations only under --strategy fifo (other schedules may differ), found strategy random" -- \
  "$L" explore "$S/flight_abandoned_resolution_fifo.json" --strategy random --seeds 2
# A worker slower than the liveness budget: its waiters are still parked.
fmk f_slow.json 'd["behaviour"]["worker"]["duration_ns"]=5000000; d["liveness_ns"]=1000; d["oracles"]=["one_leader"]'
expect liveness_flight_slow_worker 3 "FAILED liveness: liveness oracle 'liveness' failed" -- "$L" run f_slow.json --seed 1

# PanicPolicy::Abort: the seed's other policy. A panic ends the run (exit 1,
# an abort, not an oracle), where the bundled shards_panic_contained_fifo.json
# shows the same workload contained.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['system']['shards']['panic_policy']='abort'; del d['expect']; json.dump(d,open('abort.json','w'))" \
  "$S/shards_panic_contained_fifo.json"
expect panic_policy_abort 1 "FAILED abort: fiber 1 'shard.0' aborted the run: shard: process() panicked (panic_policy::abort)" -- \
  "$L" run abort.json --seed 1

# The composed slice: lanes whose consumers look items up in the single-flight
# table and forward the answers to the shards (scenarios/composed_*.json run
# in (a) with the library). The end-to-end oracle catches a planted bug with
# every component's own oracle off; a record of it replays byte for byte.
expect canary_composed_delivery 1 "oracle 'delivery' failed" -- \
  "$L" explore "$S/canaries/composed_lose_expired.json" --seeds 200 --strategy pct
expect canary_composed_record 1 "lost in the shards" -- \
  "$L" run "$S/canaries/composed_lose_expired.json" --seed 2 --trace co_run.jsonl --record co_rec.json
co_hash=$(sed -n 's/.*outcome=oracle trace_hash=\([0-9a-f]*\).*/\1/p' out)
expect canary_composed_replay 1 "reproduced: the same trace hash $co_hash" -- "$L" replay co_rec.json --trace co_replayed.jsonl
name=canary_composed_trace_bytes cases=$((cases + 1))
cmp -s co_run.jsonl co_replayed.jsonl || fail "the replayed composed trace differs from the run's"
for ev in lanes.routed flight.joined shards.submitted composed.looked_up composed.forwarded; do
  grep -q "\"ev\":\"$ev\"" co_run.jsonl || fail "no $ev events in the composed trace"
done
# Without the planted bug the same file holds: the catch is the bug's.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['system']['shards']['canary']='none'; json.dump(d,open('co_fixed.json','w'))" \
  "$S/canaries/composed_lose_expired.json"
expect canary_composed_fixed_holds 0 "all 50 seeds held" -- "$L" explore co_fixed.json --seeds 50 --strategy pct
expect determinism_composed 0 "(twice)" -- "$L" check-determinism "$S/composed_faults_random_3cores.json" --seeds 5
cbase="$S/composed_lookup_forward_1core.json"
cmk() {  # cmk FILE PYTHON: a copy of $cbase edited by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$cbase" "$2" "$1"
}
cmk c_nowiring.json 'del d["system"]["wiring"]'
expect bad_composed_no_wiring 2 "c_nowiring.json: /system/wiring: expected a field saying what the lane consumer does with each item (lookup, forward), but it is missing" -- "$L" run c_nowiring.json
cmk c_nolookup.json 'del d["system"]["wiring"]["lookup"]'
expect bad_composed_no_lookup 2 "c_nolookup.json: /system/wiring/lookup: expected a field saying how the consumer looks items up in /system/single_flight, but it is missing" -- "$L" run c_nolookup.json
cmk c_noforward.json 'del d["system"]["wiring"]["forward"]'
expect bad_composed_no_forward 2 "c_noforward.json: /system/wiring/forward: expected a field saying how the consumer forwards items to /system/shards, but it is missing" -- "$L" run c_noforward.json
cmk c_lookup_noflight.json 'del d["system"]["single_flight"]; del d["behaviour"]["worker"]'
expect bad_composed_lookup_without_flight 2 "c_lookup_noflight.json: /system/wiring/lookup: expected a lookup only with /system/single_flight, found no single_flight" -- "$L" run c_lookup_noflight.json
cmk c_forward_noshards.json 'del d["system"]["shards"]; del d["behaviour"]["processor"]'
expect bad_composed_forward_without_shards 2 "c_forward_noshards.json: /system/wiring/forward: expected a forward only with /system/shards, found no shards" -- "$L" run c_forward_noshards.json
cmk c_alone.json 'del d["system"]["shards"]; del d["system"]["single_flight"]; del d["behaviour"]["processor"]; del d["behaviour"]["worker"]'
expect bad_wiring_single_component 2 "c_alone.json: /system/wiring: expected wiring only in a composed system (lanes with shards and/or single_flight)" -- "$L" run c_alone.json
cmk c_unknown.json 'd["system"]["wiring"]["lookup"]["key"]=3'
expect bad_wiring_unknown_field 2 "c_unknown.json: /system/wiring/lookup/key: expected one of key_mod (unknown field)" -- "$L" run c_unknown.json
cmk c_mod.json 'd["system"]["wiring"]["lookup"]["key_mod"]=0'
expect bad_wiring_key_mod 2 "c_mod.json: /system/wiring/lookup/key_mod: expected an integer from 1 to 1048576, found 0" -- "$L" run c_mod.json
cmk c_via.json 'd["system"]["wiring"]["forward"]["via"]="post"'
expect bad_wiring_via 2 'c_via.json: /system/wiring/forward/via: expected one of "submit", "try_submit", found "post"' -- "$L" run c_via.json
cmk c_class.json 'd["system"]["wiring"]["forward"]["class"]=1'
expect bad_wiring_class 2 "c_class.json: /system/wiring/forward/class: expected a class index below the 1 classes of /system/shards/classes, found 1" -- "$L" run c_class.json
cmk c_ttl.json 'd["system"]["wiring"]["forward"]["ttl_ns"]=-1'
expect bad_wiring_ttl 2 "c_ttl.json: /system/wiring/forward/ttl_ns: expected an integer from 0 to 3600000000000 (nanoseconds of virtual time), found -1" -- "$L" run c_ttl.json
cmk c_step.json 'd["workload"]["actors"][1]["steps"][0]={"submit":{"key":1}}'
expect bad_composed_shard_step 2 "c_step.json: /workload/actors/1/steps/0/submit: expected a step of the lanes in front of a composed system (route, drop_router, sleep_ns), found submit" -- "$L" run c_step.json
cmk c_canary.json 'd["system"]["single_flight"]["canary"]="keep_retired_slot"'
expect bad_composed_flight_canary 2 'c_canary.json: /system/single_flight/canary: expected "none" in a composed system (flight canaries are planted in a single-flight system alone), found "keep_retired_slot"' -- "$L" run c_canary.json
cmk c_expect.json 'd["expect"]={"handled":1}'
expect bad_composed_expect 2 'c_expect.json: /expect: expected no expect in a composed system (exact values are for one component under fifo), found {"handled":1}' -- "$L" run c_expect.json --strategy fifo
cmk c_oracle.json 'd["oracles"]=["delivery","lanes_gone","fairness","answered","teleport"]'
expect bad_composed_oracle_name 2 'c_oracle.json: /oracles/4: expected one of' -- "$L" run c_oracle.json
cmk c_oracles_ok.json 'd["oracles"]=["delivery","lanes_gone","fairness","answered"]'
expect composed_oracles_of_every_component 0 "all 20 seeds held" -- "$L" explore c_oracles_ok.json --seeds 20
l_delivery="$S/lanes_reap_then_reuse.json"
mk l_delivery.json 'd["oracles"]=["delivery"]'
expect bad_delivery_on_lanes_alone 2 'l_delivery.json: /oracles/0: expected an oracle of the lanes present in /system (spec_lanes, per_key_order, exactly_once, one_lane_per_key, capacity, lanes_gone, lane_survives, no_black_hole, counters), found "delivery"' -- "$L" run l_delivery.json

# The bundled scenarios/shards_panic_abort.json expects its abort
# (expect_failure) and holds in (a); without the panic, the expected abort
# does not happen and that is the failure — recorded and replayed like any.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['behaviour']['processor']['outcomes']=[]; json.dump(d,open('no_abort.json','w'))" \
  "$S/shards_panic_abort.json"
expect expected_abort_missing 1 "oracle 'expect_failure' failed: expected the run to end in abort with \"process() panicked (panic_policy::abort)\", but the expected abort did not happen: every oracle held" -- \
  "$L" run no_abort.json --seed 4 --strategy pct --record na_rec.json
na_hash=$(sed -n 's/.*outcome=oracle trace_hash=\([0-9a-f]*\).*/\1/p' out)
expect expected_abort_missing_replay 1 "reproduced: the same trace hash $na_hash" -- "$L" replay na_rec.json
expect expected_abort_missing_explore 1 "oracle expect_failure" -- "$L" explore no_abort.json --seeds 20 --strategy random
# A different failure than the one expected is a failure too, naming both.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect_failure']={'kind':'liveness'}; json.dump(d,open('wrong_kind.json','w'))" \
  "$S/shards_panic_abort.json"
expect expected_failure_wrong_kind 1 "expected the run to end in liveness, but the expected liveness did not happen: it ended in abort: " -- \
  "$L" run wrong_kind.json --seed 1
smk s_xkind.json 'd["expect_failure"]={"kind":"crash"}'
expect bad_expect_failure_kind 2 's_xkind.json: /expect_failure/kind: expected one of "abort", "oracle", "liveness", "deadlock", "uncaught_exception", found "crash"' -- "$L" run s_xkind.json
smk s_xfield.json 'd["expect_failure"]={"kind":"abort","oracle":"state"}'
expect bad_expect_failure_field 2 "s_xfield.json: /expect_failure/oracle: expected one of contains, kind (unknown field)" -- "$L" run s_xfield.json
smk s_xmissing.json 'd["expect_failure"]={"contains":"x"}'
expect bad_expect_failure_missing_kind 2 "s_xmissing.json: /expect_failure/kind: expected a field holding" -- "$L" run s_xmissing.json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['expect_failure']={'kind':'abort'}; json.dump(d,open('x_both.json','w'))" \
  "$S/shards_panic_contained_fifo.json"
expect bad_expect_and_expect_failure 2 "x_both.json: /expect: expected no expect alongside /expect_failure (the run is to end in a failure before its counts are taken)" -- \
  "$L" run x_both.json --strategy fifo

# Per-route capacity (a route step's own capacity): bad input.
mk r_cap0.json 'd["workload"]["actors"][0]["steps"][0]["route"]["capacity"]=0'
expect bad_route_capacity_range 2 "r_cap0.json: /workload/actors/0/steps/0/route/capacity: expected an integer from 1 to 1048576 or null (this route uncapped; default: the router's capacity), found 0" -- "$L" run r_cap0.json
mk r_capstr.json 'd["workload"]["actors"][0]["steps"][0]["route"]["capacity"]="2"'
expect bad_route_capacity_type 2 'r_capstr.json: /workload/actors/0/steps/0/route/capacity: expected an integer from 1 to 1048576 or null (this route uncapped; default: the router'"'"'s capacity), found "2"' -- "$L" run r_capstr.json

# A standalone leave step (flight_leave_step_*.json run in (a)): bad input.
lbase="$S/flight_leave_step_fifo.json"
lmk() {  # lmk FILE PYTHON: a copy of $lbase edited by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d,open(sys.argv[3],'w'))" "$lbase" "$2" "$1"
}
lmk lv_unknown.json 'd["workload"]["actors"][1]["steps"][1]["leave"]["join"]="late"'
expect bad_leave_unknown_join 2 'lv_unknown.json: /workload/actors/1/steps/1/leave/join: expected the id of a join step in the workload, found "late"' -- "$L" run lv_unknown.json --strategy fifo
lmk lv_dup.json 'd["workload"]["actors"][0]["steps"][2]["join"]["id"]="early"'
expect bad_join_id_twice 2 'lv_dup.json: /workload/actors/0/steps/2/join/id: expected an id no other join step has, found "early"' -- "$L" run lv_dup.json --strategy fifo
lmk lv_field.json 'd["workload"]["actors"][1]["steps"][1]["leave"]["after_ns"]=3'
expect bad_leave_unknown_field 2 "lv_field.json: /workload/actors/1/steps/1/leave/after_ns: expected one of join (unknown field)" -- "$L" run lv_field.json --strategy fifo
lmk lv_missing.json 'd["workload"]["actors"][1]["steps"][1]["leave"]={}'
expect bad_leave_missing_join 2 "lv_missing.json: /workload/actors/1/steps/1/leave/join: expected a field holding a join step's id, but it is missing" -- "$L" run lv_missing.json --strategy fifo
lmk lv_id.json 'd["workload"]["actors"][0]["steps"][0]["join"]["id"]="Early"'
expect bad_join_id_pattern 2 "lv_id.json: /workload/actors/0/steps/0/join/id: expected a name of 1 to 32 characters" -- "$L" run lv_id.json --strategy fifo
mk l_leave.json 'd["workload"]["actors"][0]["steps"][0]={"leave":{"join":"x"}}'
expect bad_leave_on_lanes 2 "l_leave.json: /workload/actors/0/steps/0/leave: expected a step on a component present in /system (leave needs /system/single_flight), found no single_flight" -- "$L" run l_leave.json

# --- liveness is its own verdict (exit 3, like a deadlock) --------------------
# A consumer slower than the liveness budget: items are still queued when it ends.
mk slow.json 'd["behaviour"]["consumer"]["duration_ns"]=5000000; d["liveness_ns"]=1000'
expect liveness_exit_3 3 "FAILED liveness: liveness oracle 'liveness' failed" -- "$L" run slow.json --seed 1
# A processor slower than the liveness budget: the shards cannot drain in time.
smk s_slow.json 'd["behaviour"]["processor"]["duration_ns"]=5000000; d["liveness_ns"]=1000'
expect liveness_shards_exit_3 3 "FAILED liveness: liveness oracle 'liveness' failed" -- "$L" run s_slow.json --seed 1

# --- (e) several FILEs --------------------------------------------------------
programs=("$S/program_grommet.json" "$S/program_velo.json" "$S/program_probation.json")
for strategy in random pct; do
  expect "programs_one_more_core_$strategy" 0 "all 100 seeds held" -- \
    "$L" explore "${programs[@]}" --cores 3 --strategy "$strategy" --seeds 1..100
  name="programs_one_more_core_${strategy}_each" cases=$((cases + 1))
  [ "$(grep -c '^all 100 seeds held' out)" -eq 3 ] || fail "not every file held: $(grep -c '^all 100 seeds held' out) of 3"
done
"$L" run "${programs[1]}" "$canary" "${programs[2]}" --seed 1 >out 2>err
rc=$?
name=run_many_first_failure_decides cases=$((cases + 1))
[ $rc -eq 1 ] && [ "$(grep -c '^seed=1 scenario=' out)" -eq 3 ] && [ "$(grep -c 'outcome=ok' out)" -eq 2 ] ||
  fail "exit $rc; every file must run, the canary's failure decides"
printf '{}' >empty_object.json
"$L" run "${programs[1]}" empty_object.json >out 2>err
rc=$?
name=run_many_bad_second_before_any_run cases=$((cases + 1))
[ $rc -eq 2 ] && [ ! -s out ] && grep -qF "empty_object.json: /lockstep: expected a field holding the format version 1" err || fail "exit $rc; bad input must come before any run"
expect run_many_trace_refused 2 "--trace: names one output file, expected one scenario FILE with it, found 2 files" -- \
  "$L" run "${programs[@]:0:2}" --trace t.jsonl
mkdir -p dir && cp "${programs[2]}" dir/b.json && cp "${programs[1]}" dir/a.json
expect determinism_many 0 "== dir/b.json" -- "$L" check-determinism dir "$S/lanes_reap_then_reuse.json" --seeds 2
name=determinism_many_in_order cases=$((cases + 1))
[ "$(grep '^== ' out | tr '\n' ' ')" = "== dir/a.json == dir/b.json == $S/lanes_reap_then_reuse.json " ] &&
  [ "$(grep -c '(twice)' out)" -eq 6 ] || fail "files or seeds missing: $(grep '^== ' out | tr '\n' ' ')"

echo "scenario_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
