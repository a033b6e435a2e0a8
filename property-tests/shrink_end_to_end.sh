#!/usr/bin/env bash
# Goal: shrinking end to end. A property false by construction on some
# generated inputs — every generated shard system gets a planted bug
# (LOCKSTEP_PROP_CANARY=shards=lifo_per_key: a key's items dispatch last in,
# first out), which only a case with two items or more of one key shows — must:
#   (a) fail, with rapidcheck shrinking the scenario's choices to a small
#       input: one or two actors, at most four steps, one key, one core;
#   (b) leave exactly one record (the minimal case's, shrunk again by
#       lockstep shrink), named in the failure with one `lockstep replay`
#       command, though rapidcheck met many failing cases on the way;
#   (c) reproduce byte for byte both ways: the printed replay command gives
#       the record's trace hash, and rapidcheck's reproduce string, run again,
#       writes the same record (same bytes, same trace hash).
#
#   shrink_end_to_end.sh PROP_GENERATED LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools/tests" && pwd)
P=$(realpath "$1")
shift
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

run_prop() {
  LOCKSTEP_PROP_RECORD_DIR="$1" LOCKSTEP_CLI="$L" LOCKSTEP_PROP_CANARY=shards=lifo_per_key RC_PARAMS="$2" \
    "$P" --run_test=shards_hold_every_oracle --color_output=no >"$3" 2>&1
}

# (a) it fails, and rapidcheck shrinks the input
run_prop recs "seed=20261205 max_success=300" first.out
rc=$?
name=prop_fails cases=$((cases + 1))
[ $rc -ne 0 ] && grep -q "Falsifiable after" first.out || fail "exit $rc: $(tail -5 first.out)"
name=prop_one_record cases=$((cases + 1))
records=$(ls recs)
[ "$(ls recs | wc -l)" -eq 1 ] || fail "expected one record, found: $records"
rec=recs/$records
name=prop_failure_names_the_record cases=$((cases + 1))
grep -qF "failure record: $rec" first.out && grep -qF "replay with: $L replay '$rec'" first.out ||
  fail "the failure does not name the record and its replay command: $(grep -A3 FAILED first.out)"
name=prop_shrunk_small cases=$((cases + 1))
python3 - "$rec" first.out >check.out 2>&1 <<'PY' || fail "$(tail -3 check.out)"
import json, re, sys
r = json.load(open(sys.argv[1]))
s = r["scenario"]
actors = s["workload"]["actors"]
steps = sum(len(a["steps"]) for a in actors)
assert s["system"]["shards"]["canary"] == "lifo_per_key"
assert len(actors) <= 2 and steps <= 4, f"{len(actors)} actors, {steps} steps"
assert s["system"]["cores"] == 1 and s["system"]["shards"]["count"] == 1, s["system"]
assert r["failure"]["message"].startswith("oracle 'per_key_order' failed"), r["failure"]
out = open(sys.argv[2]).read()
shrinks = int(re.search(r"Falsifiable after \d+ tests and (\d+) shrinks", out).group(1))
assert shrinks > 0, "rapidcheck did not shrink"
PY

# (c) both reproduce commands give the same trace
hash=$(sed -n 's/.*"trace_hash": "\([0-9a-f]*\)".*/\1/p' "$rec")
expect prop_record_replays 1 "reproduced: the same trace hash $hash" -- "$L" replay "$rec"
reproduce=$(sed -n 's/^RC_PARAMS="\(reproduce=[^"]*\)"$/\1/p' first.out)
name=prop_reproduce_string cases=$((cases + 1))
[ -n "$reproduce" ] || fail "no reproduce string: $(tail -3 first.out)"
run_prop again "$reproduce" second.out
name=prop_reproduce_writes_the_same_record cases=$((cases + 1))
[ "$(ls again)" = "$records" ] && cmp -s "$rec" "again/$records" ||
  fail "the reproduce run wrote '$(ls again)', not the same bytes as $rec"
name=prop_reproduce_same_hash cases=$((cases + 1))
grep -qF "trace hash: $hash" second.out || fail "the reproduce run's trace hash differs: $(grep 'trace hash' second.out)"

echo "shrink_end_to_end: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
