#!/usr/bin/env bash
# Goal: lockstep shrink makes a failing case small and keeps it failing,
# through the binary:
#   (a) a planted bug in noise (tools/tests/data/shrink_noisy_lifo.json: the
#       lifo_per_key canary, whose minimal case is one actor submitting two
#       items of one key) found by explore shrinks to at most that case plus
#       a small margin, still failing per_key_order, with fewer preemptions,
#       on one core, one shard and a budget of 1;
#   (b) the shrunk record replays (exit 1, reproduced, same trace hash), and
#       shrinking again gives the same bytes; a shrunk record shrinks again;
#   (c) a 2-core race (the lanes send_after_unlock canary) loses preemptions
#       and its shrunk record, a schedule no seed gives, replays;
#   (d) --max-runs stops the search and still writes a record that replays;
#   (f) the system's settings shrink too (cores with the run's, shards,
#       budgets, capacities), and a swarm run's record shrinks its drawn
#       values like any other setting;
#   (e) bad input — a program's record, a record that no longer fails as
#       recorded, a missing file, bad flags — is one line and exit 2 (4 for
#       the record that does not reproduce).
#
#   shrink_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR DATA_DIR
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

# The sizes a record's scenario has, counted independently of the C++ code.
sizes='
import json, sys
rec = json.load(open(sys.argv[1]))
actors = rec["scenario"]["workload"]["actors"]
steps = [s for a in actors for s in a["steps"]]
bodies = [s[k] for s in steps for k in ("route", "submit", "try_submit", "join") if k in s]
items = sum(b.get("count", 1) for b in bodies)
keys = set()
for b in bodies:
    k = b["key"]
    keys |= set(range(k["random_below"])) if isinstance(k, dict) else {k}
got = dict(actors=len(actors), steps=len(steps), items=items, keys=len(keys))
want = dict(zip(("actors", "steps", "items", "keys"), map(int, sys.argv[2:6])))
bad = {k: (got[k], want[k]) for k in want if got[k] > want[k]}
assert not bad, "larger than allowed (got, at most): %r" % bad
f = rec["failure"]
assert f["kind"] == sys.argv[6] and ("oracle %r" % sys.argv[7]) in f["message"], f
'
# The "preemptions B A" row of shrink's table: A < B (or both 0).
fewer_preemptions='
import sys
row = [l.split() for l in open(sys.argv[1]) if l.split()[:1] == ["preemptions"]]
assert row, "no preemptions row"
b, a = int(row[0][1]), int(row[0][2])
assert a < b or b == 0, "preemptions %d before, %d after" % (b, a)
'

# (a) the planted bug in noise
noisy="$D/shrink_noisy_lifo.json"
expect explore_finds 1 "oracle per_key_order" -- "$L" explore "$noisy" --seeds 1..50 --jobs 1 --record noisy.json
expect shrink_noisy 1 "shrunk, still failing oracle per_key_order" -- "$L" shrink noisy.json -o small.json
cp out shrink1.out
check shrunk_to_minimal "$sizes" small.json 1 2 3 1 oracle per_key_order
check noisy_fewer_preemptions "$fewer_preemptions" shrink1.out
check noisy_was_noisy "$sizes" noisy.json 64 1024 100000 100000 oracle per_key_order
check noisy_sizes_printed 'import sys; t = open(sys.argv[1]).read(); assert "  actors             4       1" in t and "  cores              2       1" in t, t' shrink1.out
# The minimal system: the lifo bug needs two items queued for one key on one shard.
check shrunk_system_minimal '
import json, sys
r = json.load(open(sys.argv[1]))
sysm = r["scenario"]["system"]
assert r["cores"] == 1 and sysm["cores"] == 1, (r["cores"], sysm["cores"])
sh = sysm["shards"]
assert sh["count"] == 1 and [c["max_inflight"] for c in sh["classes"]] == [1], sh
assert sh["mailbox_capacity"] <= 2, sh
' small.json
# (b) it replays, shrinking is deterministic, a shrunk record shrinks again
expect shrunk_replays 1 "reproduced: the same trace hash" -- "$L" replay small.json
expect shrink_again 1 "shrunk, still failing" -- "$L" shrink noisy.json -o small.json
cases=$((cases + 1))
name=same_stdout
cmp -s out shrink1.out || fail "a second shrink printed something else"
cp small.json small1.json
expect shrink_third 1 "shrunk, still failing" -- "$L" shrink noisy.json -o small2.json
cases=$((cases + 1))
name=same_bytes
cmp -s small1.json small2.json || fail "two shrinks of one record wrote different bytes"
expect default_output 1 "shrunk record: noisy.shrunk.json" -- "$L" shrink noisy.json
cases=$((cases + 1))
name=default_output_bytes
cmp -s noisy.shrunk.json small1.json || fail "the default output differs from -o's"
expect reshrink 1 "shrunk, still failing oracle per_key_order" -- "$L" shrink small.json -o smaller.json
expect reshrunk_replays 1 "reproduced: the same trace hash" -- "$L" replay smaller.json
check reshrunk_no_larger "$sizes" smaller.json 1 2 3 1 oracle per_key_order

# (c) a race on 2 cores: fewer preemptions, a schedule replayed from its decisions
race="$S/canaries/lanes_send_after_unlock.json"
expect explore_race 1 "oracle exactly_once" -- "$L" explore "$race" --seeds 1..50 --jobs 1 --record race.json
expect shrink_race 1 "shrunk, still failing oracle exactly_once" -- "$L" shrink race.json -o race_small.json
check race_fewer_preemptions "$fewer_preemptions" out
check race_no_larger "$sizes" race_small.json 2 2 8 1 oracle exactly_once
check race_is_a_replay 'import json,sys; r=json.load(open(sys.argv[1])); assert r["strategy"] == "replay", r["strategy"]' race_small.json
expect race_replays 1 "reproduced: the same trace hash" -- "$L" replay race_small.json

# (f) a swarm run's record: its drawn values shrink like any other setting
swarm="$S/canaries/swarm/shards_ignore_pending_cap_swarm.json"
expect explore_swarm 1 "oracle pending_cap" -- "$L" explore "$swarm" --swarm --seeds 1..50 --jobs 1 --record swarm.json
expect shrink_swarm 1 "shrunk, still failing oracle pending_cap" -- "$L" shrink swarm.json -o swarm_small.json
check swarm_values_shrank '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
knobs = ("mailbox_capacity", "max_pending")
sa, sb = a["scenario"]["system"]["shards"], b["scenario"]["system"]["shards"]
assert all(sb[k] <= sa[k] for k in knobs), (sa, sb)
assert sb["classes"][0]["max_inflight"] == 1 and sb["mailbox_capacity"] <= 2 and sb["max_pending"] == 1, sb
items = sum(s["submit"].get("count", 1) for act in b["scenario"]["workload"]["actors"] for s in act["steps"])
assert items < sum(s["submit"].get("count", 1) for act in a["scenario"]["workload"]["actors"] for s in act["steps"]), items
assert b["swarm"] == a["swarm"], "the record still says what the run drew"
' swarm.json swarm_small.json
expect swarm_shrunk_replays 1 "reproduced: the same trace hash" -- "$L" replay swarm_small.json

# (d) budgets
expect max_runs_stops 1 "stopped by --max-runs 3: the smallest case found so far" -- \
  "$L" shrink noisy.json -o budget.json --max-runs 3
expect max_runs_replays 1 "reproduced: the same trace hash" -- "$L" replay budget.json

# (e) bad input
python3 - noisy.json <<'EOF'
import json, sys
rec = json.load(open(sys.argv[1]))
rec["trace_hash"] = "0123456789abcdef"
json.dump(rec, open("stale.json", "w"))
prog = {k: v for k, v in rec.items() if k not in ("scenario", "scenario_file")}
prog["program"], prog["options"] = "velo", {}
json.dump(prog, open("program.json", "w"))
held = dict(rec)
del held["failure"]
json.dump(held, open("held.json", "w"))
EOF
expect stale_record 4 "does not fail as recorded" -- "$L" shrink stale.json -o x.json
expect program_record 2 "this is a record of a built-in program" -- "$L" shrink program.json
expect held_record 2 "held.json: /failure: expected a failing run's record" -- "$L" shrink held.json
expect missing_record 2 "nosuch.json" -- "$L" shrink nosuch.json
expect bad_time 2 "--time: expected a wall-clock duration" -- "$L" shrink noisy.json --time 5x
expect bad_max_runs 2 "--max-runs: expected a decimal integer from 1" -- "$L" shrink noisy.json --max-runs 0
expect bad_out 2 "-o nodir/x.json: the directory nodir does not exist" -- "$L" shrink noisy.json -o nodir/x.json
cases=$((cases + 1))
name=nothing_written_on_bad_input
[ ! -e x.json ] || fail "a record that does not reproduce still wrote x.json"

echo "shrink_cli: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
