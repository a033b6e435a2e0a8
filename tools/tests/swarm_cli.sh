#!/usr/bin/env bash
# Goal: swarm testing through the lockstep binary (scenarios/README.md, Swarm):
#   (a) the swarm canary (scenarios/canaries/swarm/) holds over N seeds with
#       its ranges fixed at their generous end, and explore --swarm over the
#       same N seeds finds the planted bug;
#   (b) the record embeds the resolved scenario and the drawn values: it
#       replays with no flag (exit 1, same trace hash) and prints them; the
#       failure lines, the summary and --json carry them too;
#   (c) --jobs 1 and --jobs 2 give the same bytes; 3 shards merged give one
#       run's JSON; the same seed draws the same values every time;
#   (d) the bundled swarm scenarios (scenarios/swarm/) hold under --swarm; in
#       a directory, files without ranges run as they are;
#   (e) bad input is one line and exit 2: ranges without --swarm, --swarm on
#       a file without ranges, --swarm with --backend threads, lo > hi, an
#       empty one_of, a range of the wrong type, a range where none is allowed;
#   (f) a record of a run without --swarm has no "swarm" field.
#
#   swarm_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

check() {  # check NAME PYTHON ARGS...: a case that holds when PYTHON (argv in sys.argv[1:]) exits 0
  name=$1
  cases=$((cases + 1))
  local py=$2
  shift 2
  python3 -c "$py" "$@" >check.out 2>&1 || fail "$(head -c 600 check.out)"
}

canary="$S/canaries/swarm/shards_ignore_pending_cap_swarm.json"
seeds=200

# --- (a) a fixed configuration hides the bug; swarm finds it -----------------
# The fixed file: every swarm range replaced by its upper end (the generous
# configuration a developer would write).
python3 - "$canary" fixed.json <<'PY'
import json, sys
def fix(n):
    if isinstance(n, dict):
        if set(n) == {"range"} and n is not None and isinstance(n["range"][1], int) and not isinstance(n["range"][1], bool):
            return n["range"][1]
        if set(n) == {"one_of"}:
            return n["one_of"][-1]
        return {k: fix(v) for k, v in n.items()}
    if isinstance(n, list):
        return [fix(x) for x in n]
    return n
d = json.load(open(sys.argv[1]))
# The processor's duration range is a per-call draw, not a swarm range: keep it.
f = fix({k: v for k, v in d.items() if k != "behaviour"})
f["behaviour"] = d["behaviour"]
json.dump(f, open(sys.argv[2], "w"))
PY
expect fixed_config_holds 0 "all $seeds seeds held" -- "$L" explore fixed.json --seeds $seeds --jobs 2
expect swarm_finds_it 1 "oracle 'pending_cap' failed" -- \
  "$L" explore "$canary" --swarm --seeds $seeds --jobs 2 --record rec.json --json found.json
record=rec.json
check swarm_record_holds_values '
import json, sys
r = json.load(open(sys.argv[1]))
sw = r["swarm"]
assert set(sw) == {"/system/shards/classes/0/max_inflight", "/system/shards/mailbox_capacity", "/system/shards/max_pending"}, sw
sc = r["scenario"]["system"]["shards"]
assert sc["classes"][0]["max_inflight"] == sw["/system/shards/classes/0/max_inflight"]
assert sc["mailbox_capacity"] == sw["/system/shards/mailbox_capacity"]
assert sc["max_pending"] == sw["/system/shards/max_pending"]
# The bug needs a shard to hold more than mailbox + pending + budget of the 20 items.
assert sw["/system/shards/mailbox_capacity"] + sw["/system/shards/max_pending"] + sw["/system/shards/classes/0/max_inflight"] < 20, sw
assert r["scenario"]["behaviour"]["processor"]["duration_ns"] == 1000
' rec.json
grep -q '^swarm: /system/shards/classes/0/max_inflight=' out || fail "explore printed no swarm: line"
check swarm_in_json '
import json, sys
d = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
assert d["config"]["swarm"] is True
f = d["failing_seeds"][0]
assert f["seed"] == r["seed"] and f["swarm"] == r["swarm"], (f, r["swarm"])
' found.json rec.json
"$L" explore "$canary" --swarm --seeds $seeds --jobs 2 --junit found.xml >/dev/null 2>&1 || true
check swarm_in_junit '
import json, sys, xml.etree.ElementTree as ET
r = json.load(open(sys.argv[2]))
f = ET.parse(sys.argv[1]).getroot().find(".//failure")
assert f is not None, "no <failure> in the JUnit file"
want = "swarm: " + " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(r["swarm"].items()))
assert want in f.text, (want, f.text)
' found.xml rec.json
hash=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trace_hash"])' rec.json)
expect swarm_record_replays 1 "reproduced: the same trace hash $hash" -- "$L" replay rec.json
grep -q '^swarm: /system/shards/classes/0/max_inflight=' out || fail "replay printed no swarm: line"
seed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seed"])' rec.json)
# explore's portfolio ran the seed under one strategy; the record names it.
strategy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["strategy"])' rec.json)
expect swarm_rerun_same_seed 1 "trace_hash=$hash" -- "$L" run "$canary" --swarm --seed "$seed" --strategy "$strategy" \
  --record rerun.json
name=swarm_rerun_same_record cases=$((cases + 1))
cmp -s rec.json rerun.json || fail "run --swarm --seed $seed wrote a different record than explore"

# check-determinism --swarm: each seed twice, under the values it draws.
expect swarm_check_determinism 0 "explore --jobs 1 and --jobs 2: the same outcome for all 20 seeds" -- \
  "$L" check-determinism "$canary" --swarm --seeds 20 --jobs 2
grep -q '^seed=1 trace_hash=[0-9a-f]* swarm: /system/shards/classes/0/max_inflight=' out ||
  fail "check-determinism --swarm did not print the values each seed drew"

# --- (c) --jobs 1 == --jobs 2; shards merge; the same seed, the same values --
for j in 1 2; do
  mkdir -p "j$j"
  (cd "j$j" && "$L" explore "$canary" --swarm --seeds 120 --stop-after 0 --jobs $j --json s.json >stdout 2>stderr; echo $? >rc)
done
name=swarm_jobs_same_bytes cases=$((cases + 1))
if ! cmp -s j1/rc j2/rc; then
  fail "exit codes differ"
elif ! diff <(grep -v '^wall:\|runs/s' j1/stdout) <(grep -v '^wall:\|runs/s' j2/stdout) >diff.out; then
  fail "stdout differs: $(head -c 400 diff.out)"
elif ! diff -r -x s.json -x stdout -x stderr -x rc j1 j2 >diff.out; then
  fail "records differ: $(head -c 400 diff.out)"
fi
check swarm_jobs_same_json '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b): d.pop("wall")
assert a == b
assert a["failures"] > 3 and all("swarm" in f for f in a["failing_seeds"]), a["failures"]
' j1/s.json j2/s.json
for i in 0 1 2; do
  "$L" explore "$canary" --swarm --seeds 120 --stop-after 0 --jobs 1 --shard $i/3 --json "shard$i.json" >/dev/null 2>&1
done
"$L" merge shard0.json shard1.json shard2.json --json merged.json >/dev/null 2>&1
check swarm_shards_merge '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b): d.pop("wall")
for f in a["failing_seeds"] + b["failing_seeds"]: f.pop("record"); f.pop("command")
assert a == b, [k for k in a if a[k] != b.get(k)]
' j1/s.json merged.json

# --- (d) the bundled swarm scenarios hold ---------------------------------------
for f in "$S"/swarm/*.json; do
  for strategy in random pct; do
    expect "swarm_holds_$(basename "$f" .json)_$strategy" 0 "all 100 seeds held" -- \
      "$L" explore "$f" --swarm --seeds 100 --strategy "$strategy" --jobs 2
  done
done

# A directory under --swarm: files with ranges draw them, the others run as they are.
mkdir -p lib && cp "$canary" lib/a_swarm.json && cp fixed.json lib/b_fixed.json
expect swarm_directory 1 "all 50 seeds held" -- "$L" explore lib --swarm --seeds 50 --stop-after 0 --jobs 1
name=swarm_directory_lines cases=$((cases + 1))
grep -q '^exploring scenario=lib/a_swarm.json .* swarm$' out || fail "the swarm file was not explored under swarm"
grep -q '^exploring scenario=lib/b_fixed.json strategy=portfolio cores=1 seeds=1..50$' out ||
  fail "the file without ranges did not run as it is"
expect swarm_check_determinism_needs_ranges 2 "fixed.json: /: expected swarm ranges" -- \
  "$L" check-determinism fixed.json --swarm --seeds 2

# --- (e) bad input: one line, exit 2 ------------------------------------------
expect ranges_need_swarm 2 "shards_ignore_pending_cap_swarm.json: /system/shards/classes/0/max_inflight: expected a fixed value, found the swarm range {\"range\":[1,4]} (3 in the file; explore --swarm and run --swarm draw them from each seed)" -- \
  "$L" explore "$canary" --seeds 5
expect ranges_need_swarm_run 2 "/system/shards/classes/0/max_inflight: expected a fixed value" -- "$L" run "$canary"
expect swarm_without_ranges 2 "fixed.json: /: expected swarm ranges" -- "$L" explore fixed.json --swarm --seeds 5
expect swarm_threads 2 "--swarm: expected no swarm ranges to draw with --backend threads" -- \
  "$L" run "$canary" --swarm --backend threads
edit() {  # edit OUT PYTHON: the canary with d edited by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2; json.dump(d,open(sys.argv[2],'w'))" "$canary" "$1"
}
edit lo_hi.json 'd["system"]["shards"]["max_pending"]={"range":[9,3]}'
expect swarm_lo_above_hi 2 "lo_hi.json: /system/shards/max_pending/range: expected [lo, hi] with lo <= hi, found [9,3]" -- \
  "$L" explore lo_hi.json --swarm --seeds 5
edit empty.json 'd["system"]["shards"]["mailbox_capacity"]={"one_of":[]}'
expect swarm_empty_one_of 2 "empty.json: /system/shards/mailbox_capacity/one_of: expected a list of 1 to 64 values to draw one from" -- \
  "$L" explore empty.json --swarm --seeds 5
edit types.json 'd["system"]["shards"]["mailbox_capacity"]={"range":["a",4]}'
expect swarm_wrong_type 2 "types.json: /system/shards/mailbox_capacity/range/0: expected an integer from 1 to 65536, found \"a\"" -- \
  "$L" explore types.json --swarm --seeds 5
edit bounds.json 'd["system"]["shards"]["classes"][0]["max_inflight"]={"range":[0,4]}'
expect swarm_out_of_bounds 2 "bounds.json: /system/shards/classes/0/max_inflight/range/0: expected an integer from 1 to 1024, found 0" -- \
  "$L" explore bounds.json --swarm --seeds 5
edit bool.json 'd["system"]["shards"]["coalesce_duplicates"]={"one_of":[True,"no"]}'
expect swarm_bool_one_of 2 "bool.json: /system/shards/coalesce_duplicates/one_of/1: expected true or false, found \"no\"" -- \
  "$L" explore bool.json --swarm --seeds 5
edit enum.json 'd["system"]["shards"]["panic_policy"]={"one_of":["contain","explode"]}'
expect swarm_enum_one_of 2 "enum.json: /system/shards/panic_policy/one_of/1: expected one of \"contain\", \"abort\", found \"explode\"" -- \
  "$L" explore enum.json --swarm --seeds 5
edit nowhere.json 'd["workload"]["actors"][0]["steps"][0]["submit"]["count"]={"range":[1,20]}'
expect swarm_not_allowed_here 2 "nowhere.json: /workload/actors/0/steps/0/submit/count: expected an integer from 1 to 100000, found {\"range\":[1,20]}" -- \
  "$L" explore nowhere.json --swarm --seeds 5
edit cores.json 'd["system"]["cores"]={"one_of":[1,2]}'
expect swarm_not_on_cores 2 "cores.json: /system/cores: expected an integer from 1 to 64, found {\"one_of\":[1,2]}" -- \
  "$L" explore cores.json --swarm --seeds 5
edit both.json 'd["system"]["shards"]["max_pending"]={"range":[1,3],"one_of":[2]}'
expect swarm_two_forms 2 "both.json: /system/shards/max_pending: expected" -- "$L" explore both.json --swarm --seeds 5

# --- (f) records without swarm keep their fields --------------------------------
expect plain_record 1 "failure record: plain.json" -- \
  "$L" explore "$S/canaries/shards_ignore_pending_cap.json" --seeds 50 --record plain.json
check plain_record_has_no_swarm '
import json, sys
assert "swarm" not in json.load(open(sys.argv[1]))
' plain.json
grep -q '^swarm:' out && fail "a run without --swarm printed a swarm: line"

echo "swarm_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
