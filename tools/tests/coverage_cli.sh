#!/usr/bin/env bash
# Goal: coverage probes and must_reach through the lockstep binary:
#   (a) a workload that opens the route-vs-reap race holds its must_reach;
#       the same workload with the racing producer removed fails explore on
#       must_reach (exit 1, its own verdict in text, --json and --junit);
#   (b) probe counts, unreached probes and race-pair orders are the same for
#       --jobs 1 and --jobs 2, and 3 merged shards give one machine's;
#   (c) a probe hit shows as a `probe` line in the trace;
#   (d) a bad must_reach is one line and exit 2, naming the pointer and the
#       closest probe.
#
#   coverage_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR TEST_DATA_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=$(realpath "$3")
case_timeout=60
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

check() {  # check NAME PYTHON ARGS...: a case that holds when PYTHON (argv in sys.argv[1:]) exits 0
  name=$1
  cases=$((cases + 1))
  local py=$2
  shift 2
  python3 -c "$py" "$@" >check.out 2>&1 || fail "$(head -c 600 check.out)"
}

opens="$D/must_reach_route_meets_reap.json"
removed="$D/must_reach_race_removed.json"

# --- (a) must_reach holds with the race, fails without it -------------------
for strategy in random pct; do
  expect "opens_race_$strategy" 0 "all 50 seeds held" -- "$L" explore "$opens" --strategy "$strategy" --seeds 1..50
  expect "race_removed_$strategy" 1 "must_reach FAILED: no run hit lanes.reap_found_pending over these 50 runs" -- \
    "$L" explore "$removed" --strategy "$strategy" --seeds 1..50 --json "removed_$strategy.json" --junit "removed_$strategy.xml"
  check "race_removed_${strategy}_json" '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["coverage"]
assert d["failures"] == 0, d["failures"]
assert c["must_reach"] == ["lanes.reaped", "lanes.reap_found_pending"], c["must_reach"]
assert c["must_reach_missing"] == ["lanes.reap_found_pending"], c["must_reach_missing"]
assert c["must_reach_verdict"] == "failed"
assert c["probes"]["lanes.reaped"] == 50 and c["probes"]["lanes.reap_found_pending"] == 0, c["probes"]
assert "lanes.reap_found_pending" in c["unreached"]
x = open(sys.argv[2]).read()
assert "failures=\"1\"" in x and "type=\"must_reach\"" in x, x' "removed_$strategy.json" "removed_$strategy.xml"
done
expect opens_race_json 0 "all 50 seeds held" -- "$L" explore "$opens" --seeds 1..50 --json opens.json
check opens_race_both_orders '
import json, sys
c = json.load(open(sys.argv[1]))["coverage"]
assert c["must_reach_verdict"] == "held" and c["must_reach_missing"] == []
pair = [p for p in c["race_pairs"] if p["race"] == "reap vs route"][0]
assert pair["a_then_b_runs"] > 0 and pair["b_then_a_runs"] > 0, pair
assert "reap vs route" not in c["one_order_pairs"]' opens.json
# must_reach per strategy (an object): each strategy judged by its own list
# only; a strategy the object does not name has none.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['must_reach']={'random':['lanes.reap_found_pending'],'pct':['lanes.reaped']}; json.dump(d,open('per.json','w'))" "$removed"
expect per_strategy_random_misses 1 "must_reach FAILED: no run hit lanes.reap_found_pending over these 50 runs" -- \
  "$L" explore per.json --strategy random --seeds 1..50 --json per_random.json
check per_strategy_random_json '
import json, sys
c = json.load(open(sys.argv[1]))["coverage"]
assert c["must_reach"] == ["lanes.reap_found_pending"], c["must_reach"]
assert c["must_reach_verdict"] == "failed"' per_random.json
expect per_strategy_pct_holds 0 "all 50 seeds held" -- "$L" explore per.json --strategy pct --seeds 1..50
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['must_reach']={'pct':['lanes.reaped','lanes.reap_found_pendin']}; json.dump(d,open('per_bad.json','w'))" "$removed"
expect per_strategy_bad_probe 2 "per_bad.json: /must_reach/pct/1: expected a probe of a component in /system (engine/probes.hpp; closest: lanes.reap_found_pending), found \"lanes.reap_found_pendin\"" -- \
  "$L" run per_bad.json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['must_reach']={'guided':['lanes.reaped']}; json.dump(d,open('per_unknown.json','w'))" "$removed"
expect per_strategy_unknown 2 "per_unknown.json: /must_reach/guided: expected one of fifo, pct, random (unknown field)" -- \
  "$L" run per_unknown.json

# A file in the library that names the race but never opens it shows as one order / unreached.
expect reap_then_reuse_reports_gap 0 "probes no run hit: lanes.route_refused_at_capacity lanes.reap_found_pending" -- \
  "$L" explore "$S/lanes_reap_then_reuse.json" --seeds 1..50

# --- (b) --jobs 1 and 2, and merged shards: the same coverage ----------------
same_json='
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b): d.pop("wall")
assert a == b, "the summaries differ: " + str([k for k in a if a[k] != b.get(k)])
c = a["coverage"]
assert sum(c["probes"].values()) > 0 and a["probe_hits"] and len(a["probe_hits"]) == a["runs"], c'
for f in "$S/program_grommet.json" "$S/flight_faults_random_2cores.json" "$opens"; do
  b=$(basename "$f" .json)
  for j in 1 2; do "$L" explore "$f" --strategy pct --seeds 1..60 --stop-after 0 --jobs $j --json "$b-j$j.json" >"$b-j$j.out" 2>&1; done
  name="jobs_${b}_text" cases=$((cases + 1))
  diff <(grep -v '^wall:\|runs/s' "$b-j1.out") <(grep -v '^wall:\|runs/s' "$b-j2.out") >diff.out || fail "$(head -c 400 diff.out)"
  check "jobs_${b}_json" "$same_json" "$b-j1.json" "$b-j2.json"
  for i in 0 1 2; do "$L" explore "$f" --strategy pct --seeds 1..60 --stop-after 0 --shard "$i/3" --json "$b-s$i.json" >/dev/null 2>&1; done
  expect "merge_${b}" 0 "merged 3 shards" -- "$L" merge "$b-s2.json" "$b-s0.json" "$b-s1.json" --json "$b-merged.json"
  check "merge_${b}_json" "$same_json" "$b-j1.json" "$b-merged.json"
done
# A merge of the race-removed file fails on must_reach as one machine does.
for i in 0 1 2; do "$L" explore "$removed" --seeds 1..30 --shard "$i/3" --json "rm-s$i.json" >/dev/null 2>&1; done
expect merge_keeps_must_reach 1 "must_reach FAILED: no run hit lanes.reap_found_pending over these 30 runs" -- \
  "$L" merge rm-s0.json rm-s1.json rm-s2.json

# --- (c) probes are trace lines ----------------------------------------------
expect trace_has_probes 0 "outcome=ok" -- "$L" run "$opens" --seed 3 --trace t.jsonl
name=trace_probe_lines cases=$((cases + 1))
grep -q '{"ev":"probe","t":[0-9]*,"fiber":[0-9]*,"name":"lanes.reaped"}' t.jsonl || fail "no probe line: $(grep -m3 probe t.jsonl)"

# --- (d) bad must_reach --------------------------------------------------------
mk() {  # mk FILE PYTHON: the opener with d changed by PYTHON
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2; json.dump(d, open(sys.argv[2], 'w'))" "$opens" "$1"
}
mk typo.json 'd["must_reach"] = ["lanes.reaped", "lanes.reap_found_pendng"]'
expect bad_must_reach_typo 2 "typo.json: /must_reach/1: expected a probe of a component in /system (engine/probes.hpp; closest: lanes.reap_found_pending), found \"lanes.reap_found_pendng\"" -- \
  "$L" explore typo.json --seeds 1..2
mk other.json 'd["must_reach"] = ["shards.evicted_idle"]'
expect bad_must_reach_other_component 2 "other.json: /must_reach/0: expected a probe of a component in /system" -- \
  "$L" run other.json
mk empty.json 'd["must_reach"] = []'
expect bad_must_reach_empty 2 "empty.json: /must_reach" -- "$L" run empty.json
mk twice.json 'd["must_reach"] = ["lanes.reaped", "lanes.reaped"]'
expect bad_must_reach_twice 2 "twice.json: /must_reach" -- "$L" run twice.json

echo "coverage_cli: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
