#!/usr/bin/env bash
# Goal: timers as choices through the binary (--timer-ties, --timer-jitter,
# and --swarm, which draws both from each seed). A failure found with them
# writes a record that holds them, so `lockstep replay` reproduces it with no
# flag; its printed rerun command carries them and reruns the same run; the
# same record without them no longer fits its decisions. Bad values are
# refused naming the flag or the JSON pointer. fifo takes no choices, so a
# file's exact fifo expectations hold with any jitter.
#
#   timers_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

canary="$S/canaries/lanes_send_after_unlock.json"
held="$S/lanes_reap_then_reuse.json"
swarm="$S/canaries/swarm/shards_ignore_pending_cap_swarm.json"

hash_of() { sed -n 's/.*trace_hash=\([0-9a-f]*\).*/\1/p' out | head -1; }

expect finds_the_canary_with_timers_as_choices 1 "FAILED oracle: oracle 'exactly_once'" -- \
  "$L" explore "$canary" --seeds 1000 --timer-ties --timer-jitter 10 --record-dir recs
record=$(sed -n 's/^failure record: //p' out | head -1)
# Past --max-records a failure prints its rerun command instead of a record.
expect prints_the_rerun_command 1 "rerun with:" -- \
  "$L" explore "$canary" --seeds 1000 --timer-ties --timer-jitter 10 --max-records 0
rerun=$(sed -n 's/^ *rerun with: //p' out | head -1)
name=record_holds_the_timer_choices cases=$((cases + 1))
grep -q '"timer_ties": true' "$record" && grep -q '"timer_jitter_ns": 10' "$record" ||
  fail "the record does not hold them: $(grep timer "$record")"
name=rerun_command_carries_them cases=$((cases + 1))
case "$rerun" in *" --timer-ties --timer-jitter 10"*) ;; *) fail "rerun command: $rerun" ;; esac
expect record_replays_without_flags 1 "reproduced: the same trace hash" -- "$L" replay "$record"
replayed=$(hash_of)
expect rerun_command_reproduces 1 "FAILED" -- bash -c "$rerun"
name=rerun_is_the_explored_run cases=$((cases + 1))
[ "$(hash_of)" = "$replayed" ] || fail "the rerun gave $(hash_of), the record $replayed"
# Without the fields the recorded decisions no longer fit: the jitter's choices are among them.
grep -v '"timer_ties"\|"timer_jitter_ns"' "$record" > without.json
expect record_without_them_diverges 4 "replay diverged" -- "$L" replay without.json
expect trace_of_the_record 1 "written to" -- "$L" trace "$record" --format jsonl -o t.jsonl
name=trace_names_the_choices cases=$((cases + 1))
grep -q '"on":"timer_jitter"' t.jsonl || fail "no timer_jitter choice in the trace"
expect trace_of_a_record_takes_no_timer_flag 2 "expected no --seed, --strategy, --cores or timer flag" -- \
  "$L" trace "$record" --timer-jitter 5 -o t2.jsonl

# The same bytes for any --jobs.
expect jobs_1 0 "all 300 seeds held" -- "$L" explore "$held" --seeds 300 --timer-ties --timer-jitter 100 --jobs 1 --json j1.json
expect jobs_3 0 "all 300 seeds held" -- "$L" explore "$held" --seeds 300 --timer-ties --timer-jitter 100 --jobs 3 --json j3.json
name=jobs_give_the_same_summary cases=$((cases + 1))
python3 - j1.json j3.json <<'PY' || fail "the summaries differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for s in (a, b):
    s.pop("wall")
assert a["config"]["timer_ties"] is True and a["config"]["timer_jitter_ns"] == 100, a["config"]
assert a == b, [k for k in a if a[k] != b.get(k)]
PY
expect deterministic_with_them 0 "" -- "$L" check-determinism "$held" --seeds 30 --timer-ties --timer-jitter 1000

# Jitter moves the lane's idle timeout off the routes' instants: the runs differ from the plain ones.
expect plain_run 0 "trace_hash=" -- "$L" run "$held" --seed 3
plain=$(hash_of)
expect jittered_run 0 "trace_hash=" -- "$L" run "$held" --seed 3 --timer-jitter 1000
name=jitter_changes_the_run cases=$((cases + 1))
[ "$(hash_of)" != "$plain" ] || fail "a jitter of 1000 ns left seed 3's run as it was"

# fifo takes no choices: exact expectations hold with timers as choices.
for f in "$S"/*_fifo.json; do
  expect "fifo_$(basename "$f" .json)" 0 "" -- "$L" run "$f" --strategy fifo --timer-ties --timer-jitter 1000
done

# --swarm draws them per seed; its rerun commands say only --swarm.
expect swarm_finds_the_canary 1 "FAILED" -- "$L" explore "$swarm" --swarm --seeds 200 --max-records 0
rerun=$(sed -n 's/^ *rerun with: //p' out | head -1)
name=swarm_rerun_says_swarm_only cases=$((cases + 1))
case "$rerun" in *"--swarm"*) ;; *) fail "rerun command: $rerun" ;; esac
case "$rerun" in *"--timer-"*) fail "rerun command names a timer flag: $rerun" ;; esac
expect swarm_rerun_reproduces 1 "FAILED" -- bash -c "$rerun"
expect swarm_draws_timers 0 "" -- "$L" check-determinism "$swarm" --swarm --seeds 20
# The timer draws have a stream of their own: a swarm file whose every range
# holds one value runs as the fixed file with the timer choices its seed drew
# (which `run` prints).
python3 - "$swarm" one.json fixed.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def walk(v, fix):
    if isinstance(v, dict):
        if "range" in v: return v["range"][1] if fix else {"range": [v["range"][1], v["range"][1]]}
        if "one_of" in v: return v["one_of"][0] if fix else {"one_of": [v["one_of"][0]]}
        return {k: walk(x, fix) for k, x in v.items()}
    if isinstance(v, list): return [walk(x, fix) for x in v]
    return v
json.dump(walk(doc, False), open(sys.argv[2], "w"))
json.dump(walk(doc, True), open(sys.argv[3], "w"))
PY
drew_ties=0 drew_jitter=0
for seed in 1 2 3 4 5 6 7 8; do
  expect "one_value_swarm_seed_$seed" 0 "trace_hash=" -- "$L" run one.json --swarm --seed "$seed"
  swarm_hash=$(hash_of)
  flags=()
  grep -q ' timer_ties' out && flags+=(--timer-ties) && drew_ties=$((drew_ties + 1))
  jitter=$(sed -n 's/.* timer_jitter_ns=\([0-9]*\).*/\1/p' out | head -1)
  [ -n "$jitter" ] && flags+=(--timer-jitter "$jitter") && drew_jitter=$((drew_jitter + 1))
  expect "fixed_seed_$seed" 0 "trace_hash=" -- "$L" run fixed.json --seed "$seed" "${flags[@]}"
  name="swarm_seed_${seed}_is_the_fixed_run" cases=$((cases + 1))
  [ "$(hash_of)" = "$swarm_hash" ] || fail "--swarm gave $swarm_hash, the fixed file with ${flags[*]} $(hash_of)"
done
name=swarm_draws_both_ways cases=$((cases + 1))
[ "$drew_ties" -gt 0 ] && [ "$drew_ties" -lt 8 ] && [ "$drew_jitter" -gt 0 ] && [ "$drew_jitter" -lt 8 ] ||
  fail "over 8 seeds ties were drawn $drew_ties times, a jitter $drew_jitter times"

# Bad values: one line naming the flag or the pointer, exit 2.
for bad in -1 abc 1000000000001; do
  expect "jitter_$bad" 2 "--timer-jitter: expected a decimal integer from 0 to 1000000000000, found '$bad'" -- \
    "$L" run "$held" --timer-jitter "$bad"
done
expect timer_flags_are_simulator_only 2 "--timer-ties: expected no simulator-only flag" -- \
  "$L" run "$held" --backend threads --timer-ties
sed 's/"timer_ties": true/"timer_ties": 1/' "$record" > bad_ties.json
expect record_ties_not_a_bool 2 "bad_ties.json: /timer_ties: expected true or false, found 1" -- "$L" replay bad_ties.json
sed 's/"timer_jitter_ns": 10/"timer_jitter_ns": -10/' "$record" > bad_jitter.json
expect record_jitter_negative 2 "bad_jitter.json: /timer_jitter_ns: expected" -- "$L" replay bad_jitter.json

echo "timers_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
