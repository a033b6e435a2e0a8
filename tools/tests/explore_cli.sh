#!/usr/bin/env bash
# Goal: explore as a tool people leave running, and sharded over machines,
# through the lockstep binary:
#   (a) --jobs 1 and --jobs 2 print, record and summarise the same bytes
#       (wall-clock figures aside), for a lanes and a shards scenario,
#       under random and pct;
#   (b) 3 shards merged give the JSON of one run (cut at --stop-after too);
#   (c) --seeds A..B, --seeds N, --runs, --stop-after and --time are honoured,
#       with the counts checked; PCT's probe runs are counted;
#   (d) SIGINT and SIGTERM stop a running explore: records written, summary
#       printed, exit code of what was found;
#   (e) --json and --junit are well-formed with the right counts; the
#       progress line is drawn on a terminal only; the printed replay command
#       works as printed (it names the binary as it was started);
#   (f) bad input to each new flag and to merge is one line and exit 2;
#   (g) several FILEs (and a directory of them): a summary per file, one
#       JSON and one JUnit holding all, the exit code of the first failing file.
#
#   explore_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=60
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

canary="$S/canaries/lanes_send_after_unlock.json"
healthy="$S/lanes_capacity_concurrent.json"

check() {  # check NAME PYTHON ARGS...: a case that holds when PYTHON (argv in sys.argv[1:]) exits 0
  name=$1
  cases=$((cases + 1))
  local py=$2
  shift 2
  python3 -c "$py" "$@" >check.out 2>&1 || fail "$(head -c 600 check.out)"
}
# The JSON summaries of two runs are equal but for their wall-clock fields.
same_json='
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for one in d.get("summaries", [d]): one.pop("wall")
assert a == b, "the summaries differ: " + str([k for k in a if a[k] != b.get(k)])'

# --- (a) --jobs 1, 2 and 40: the same bytes ------------------------------------
# 40 is more jobs than the machine has cores: one seed a chunk (explore_runner.cpp).
jobs_case() {  # jobs_case NAME ARGS...: explore ARGS with --jobs 1, 2 and 40, in NAME-j1/ ...
  local n=$1
  shift
  for j in 1 2 40; do
    mkdir -p "$n-j$j"
    (cd "$n-j$j" && "$L" explore "$@" --jobs $j --json summary.json --junit junit.xml >stdout 2>stderr; echo $? >rc)
  done
  for j in 2 40; do
    name="jobs_${n}_$j" cases=$((cases + 1))
    if ! cmp -s "$n-j1/rc" "$n-j$j/rc"; then
      fail "exit codes differ: $(cat "$n-j1/rc") and $(cat "$n-j$j/rc")"
    elif ! diff <(grep -v '^wall:\|runs/s' "$n-j1/stdout") <(grep -v '^wall:\|runs/s' "$n-j$j/stdout") >diff.out; then
      fail "stdout differs: $(head -c 400 diff.out)"
    elif ! diff -r -x summary.json -x junit.xml -x stdout -x stderr -x rc "$n-j1" "$n-j$j" >diff.out; then
      fail "the records differ: $(head -c 400 diff.out)"
    fi
    check "jobs_${n}_${j}_summary" "$same_json" "$n-j1/summary.json" "$n-j$j/summary.json"
  done
}
jobs_case canary_random "$canary" --seeds 1..300 --stop-after 0
jobs_case healthy_pct "$healthy" --seeds 1..400 --strategy pct --stop-after 0
jobs_case shards_pct "$S/canaries/shards_skip_final_flush.json" --strategy pct --seeds 1..60 --stop-after 3
jobs_case portfolio "$canary" --strategy portfolio --seeds 1..200 --stop-after 0
# A range too small for chunks of 16 per job is cut finer (5 seeds a chunk at 2 jobs): the same outcomes.
jobs_case small_range "$S/canaries/shards_skip_final_flush.json" --seeds 1..9 --stop-after 0
# Several files on one pool: a file's --stop-after ends only that file, and
# the pool's run-ahead into the next file changes nothing printed.
jobs_case several_files "$canary" "$healthy" "$S/canaries/shards_skip_final_flush.json" "$S/program_velo.json" \
  --seeds 1..150 --stop-after 2
check several_files_each_ended '
import json, sys
d = json.load(open(sys.argv[1]))
assert [s["stopped"] for s in d["summaries"]] == ["stop-after", "complete", "stop-after", "complete"], d["summaries"]
assert [s["runs"] for s in d["summaries"]][1::2] == [150, 150]' several_files-j2/summary.json
# --time is the whole explore's budget, however many files: the first file
# (an open range) takes all of it and the next is not run.
mkdir -p time_many && cd time_many || exit 1
"$L" explore "$healthy" "$S/program_velo.json" --seeds 1.. --time 300ms --jobs 2 --json t.json >t.out 2>&1
rc=$?
name=time_many_files cases=$((cases + 1))
[ $rc -eq 0 ] && grep -q "^not run (stopped: time): .*program_velo.json" t.out || fail "exit $rc; $(tail -c 300 t.out)"
check time_many_files_json '
import json
d = json.load(open("t.json"))
assert len(d["summaries"]) == 1 and d["summaries"][0]["stopped"] == "time", d["summaries"]
assert [f.rsplit("/", 1)[1] for f in d["not_run"]] == ["program_velo.json"], d.get("not_run")'
cd ..
# --- records: at most --max-records (default 100), into --record-dir ---------------
# (--stop-after 0 once wrote 1,355 records in 2 s.) Past the cap each failure is
# still printed with its rerun command, and that command writes its record.
mkdir -p cap && cd cap || exit 1
"$L" explore "$S/canaries/shards_skip_final_flush.json" --seeds 1..20 --stop-after 0 --max-records 3 \
  --record-dir recs >stdout 2>stderr
rc=$?
name=max_records_caps_records cases=$((cases + 1))
[ $rc -eq 1 ] && [ "$(ls recs | wc -l)" -eq 3 ] && [ ! -e results ] &&
  [ "$(grep -c '^no failure record (--max-records 3 reached)' stdout)" -eq 17 ] &&
  grep -q '^17 failures past --max-records 3 have no record' stdout ||
  fail "exit $rc, $(ls recs 2>/dev/null | wc -l) records; expected 3 in recs/ and 17 failures printed without one"
rerun=$(grep -m1 '^rerun with: ' stdout | sed 's/^rerun with: //')
name=max_records_rerun_records cases=$((cases + 1))
eval "$rerun" >rerun.out 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "oracle 'state' failed" rerun.out && grep -q '^failure record: results/failures/' rerun.out ||
  fail "the printed rerun command (exit $rc) did not reproduce and record the failure: $(head -c 300 rerun.out)"
expect max_records_zero 1 "20 failures past --max-records 0 have no record" -- \
  "$L" explore "$S/canaries/shards_skip_final_flush.json" --seeds 1..20 --stop-after 0 --max-records 0 --record-dir none
name=max_records_zero_writes_none cases=$((cases + 1))
[ -z "$(ls none)" ] || fail "--max-records 0 wrote records"
expect record_dir_with_record 2 "--record-dir: expected either --record FILE or --record-dir DIR, found both" -- \
  "$L" explore "$canary" --record-dir d --record r.json
cd .. || exit 1

# The cases above must have found something to compare.
check jobs_found_failures '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["failures"] > 10 and a["runs"] == 300, a["failures"]
assert b["failures"] == 3 and b["stopped"] == "stop-after", b["failures"]' canary_random-j1/summary.json shards_pct-j1/summary.json
name=jobs_summary_lists_twenty cases=$((cases + 1))
[ "$(grep -c '^  failing seed ' canary_random-j1/stdout)" -eq 20 ] && grep -q '^  \.\.\. and [0-9]* more failing seeds' canary_random-j1/stdout ||
  fail "the text summary does not list exactly the first 20 failing seeds"
name=jobs_records_written cases=$((cases + 1))
[ "$(ls canary_random-j2/results/failures | wc -l)" -gt 10 ] || fail "no records under canary_random-j2/results/failures"

# --- (b) 3 shards + merge == one run ------------------------------------------
shard_case() {  # shard_case NAME ARGS...
  local n=$1
  shift
  mkdir -p "$n" && cd "$n" || return
  "$L" explore "$@" --json one.json >one.out 2>&1
  local one_rc=$?
  for i in 2 0 1; do "$L" explore "$@" --shard "$i/3" --jobs 1 --json "s$i.json" >"s$i.out" 2>&1; done
  expect "shard_${n}_merge" "$one_rc" "merged 3 shards" -- "$L" merge s1.json s2.json s0.json --json merged.json --junit merged.xml
  check "shard_${n}_same" "$same_json" one.json merged.json
  cd ..
}
shard_case canary_cut "$canary" --seeds 1..300 --stop-after 4
shard_case canary_all "$canary" --seeds 1..200 --stop-after 0
shard_case healthy_pct "$healthy" --seeds 11..130 --strategy pct --stop-after 0
# The portfolio: each seed's strategy (and whether it made a sizing run) is
# the seed's, so shards merge to the one run, probe runs included.
shard_case portfolio "$canary" --seeds 5..124 --strategy portfolio --stop-after 0
# Several FILEs: each shard's --json holds a summary per file; the merge takes
# them apart and merges each file's (it refused the combined format).
shard_case two_files "$healthy" "$canary" --seeds 1..90 --stop-after 2
check shard_two_files_each '
import json, sys
d = json.load(open("two_files/merged.json"))
assert d["lockstep_explore_summaries"] == 1 and len(d["summaries"]) == 2, list(d)
assert d["summaries"][0]["failures"] == 0 and d["summaries"][1]["failures"] == 2'
cd two_files || exit 1
expect shard_two_files_count_differs 2 "merge: ../canary_cut/s1.json: expected the summaries of 2 scenario files as in s0.json, found 1" -- \
  "$L" merge s0.json ../canary_cut/s1.json
python3 -c '
import json
d = json.load(open("s0.json")); d["summaries"][0]["typo"] = 1; json.dump(d, open("typo.json", "w"))'
expect merge_unknown_field 2 "typo.json: /summaries/0/typo: expected only the fields explore --json writes, found an unknown one" -- \
  "$L" merge typo.json s1.json s2.json
cd .. || exit 1
check shard_slices '
import json, sys
d = [json.load(open("canary_all/s%d.json" % i)) for i in range(3)]
assert [x["runs"] for x in d] == [67, 67, 66], [x["runs"] for x in d]
seeds = sorted(f["seed"] for x in d for f in x["failing_seeds"])
for i, x in enumerate(d):
    assert all((f["seed"] - 1) % 3 == i for f in x["failing_seeds"]), i
assert seeds == [f["seed"] for f in json.load(open("canary_all/one.json"))["failing_seeds"]]
m = json.load(open("canary_cut/merged.json"))
assert m["stopped"] == "stop-after" and m["failures"] == 4, m["stopped"]'

# --- liveness kept apart from safety: --stop-after-liveness ------------------------
# At --max-steps 150 most runs of the canary exhaust the step budget (liveness)
# and a few fail its oracle (safety). Counted together, the explore stops at the
# first livelock (exit 3); with --stop-after-liveness 0 it goes past them to the
# first safety failure (exit 1) and says which kind it found first.
mkdir -p apart && cd apart || exit 1
expect apart_default_stops_at_livelock 3 "failures by reason: step_budget: 1" -- \
  "$L" explore "$canary" --seeds 60 --max-steps 150 --max-records 0
expect apart_past_livelocks 1 "found first: liveness (first liveness failure: seed 1, step_budget; first safety failure: seed" -- \
  "$L" explore "$canary" --seeds 60 --max-steps 150 --max-records 0 --stop-after-liveness 0 --json one.json
check apart_summary '
import json
d = json.load(open("one.json"))
kinds = [f["kind"] for f in d["failing_seeds"]]
assert d["stopped"] == "stop-after" and kinds[-1] == "oracle" and set(kinds[:-1]) == {"step_budget"}, kinds
assert d["runs"] == d["failing_seeds"][-1]["seed"] and d["config"]["stop_after_liveness"] == 0, d["runs"]'
expect apart_two_livelocks 3 "failures by reason: step_budget: 2" -- \
  "$L" explore "$canary" --seeds 60 --max-steps 150 --max-records 0 --stop-after-liveness 2 --stop-after 0
expect apart_record_refused 2 "--record: names one file, expected no --stop-after-liveness with it" -- \
  "$L" explore "$canary" --stop-after-liveness 0 --record x.json
cd ..
shard_case apart_merge "$canary" --seeds 1..60 --max-steps 150 --max-records 0 --stop-after-liveness 0
jobs_case apart_jobs "$canary" --seeds 1..60 --max-steps 150 --max-records 5 --stop-after-liveness 0

# --- (c) budgets -------------------------------------------------------------
budget() {  # budget NAME PYTHON ARGS...: explore ARGS --json b.json, then PYTHON over the summary (d)
  local n=$1 py=$2
  shift 2
  "$L" explore "$@" --json b.json >b.out 2>&1
  check "$n" "import json; d = json.load(open('b.json')); $py"
}
budget budget_range 'assert d["runs"] == 20 and d["config"]["seeds"] == {"first": 5, "last": 24} and d["stopped"] == "complete"' \
  "$healthy" --seeds 5..24
budget budget_count 'assert d["runs"] == 30 and d["config"]["seeds"] == {"first": 1, "last": 30}' "$healthy" --seeds 30
budget budget_first_seed 'assert d["runs"] == 9 and d["config"]["seeds"] == {"first": 7, "last": 15}' "$healthy" --first-seed 7 --seeds 9
budget budget_runs 'assert d["runs"] == 7 and d["config"]["seeds"] == {"first": 100, "last": 106}' "$healthy" --seeds 100.. --runs 7
budget budget_stop_after '
f = d["failing_seeds"]
assert d["failures"] == 2 and d["stopped"] == "stop-after" and len(f) == 2
assert d["runs"] == f[1]["seed"], (d["runs"], f[1]["seed"])  # seeds 1..the second failure' "$canary" --seeds 1..1000 --stop-after 2
budget budget_time 'assert d["stopped"] == "time" and 0 < d["runs"] < 10**9, d["stopped"]' "$healthy" --seeds 1.. --time 300ms
name=budget_time_exit cases=$((cases + 1))
grep -q "stopped: time" b.out || fail "no 'stopped: time' in the summary"
budget budget_pct_probes 'assert d["probe_runs"] == d["runs"] == 25, d["probe_runs"]' "$healthy" --seeds 25 --strategy pct
budget budget_pct_steps_given 'assert d["probe_runs"] == 0 and d["runs"] == 25' "$healthy" --seeds 25 --strategy pct --pct-steps 40
expect budget_default_stops_at_first 1 "failures by reason: oracle exactly_once: 1" -- "$L" explore "$canary" --seeds 1000

# --- (d) signals stop cleanly --------------------------------------------------
# Polls (bounded) for TEXT in FILE: the explore has reached that point.
wait_for() {
  local i
  for i in $(seq 1 400); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
signal_case() {  # signal_case NAME SIGNAL EXPECTED_RC WAIT_TEXT ARGS...
  local n=$1 sig=$2 want=$3 text=$4
  shift 4
  mkdir -p "$n" && cd "$n" || return
  "$L" explore "$@" --seeds 1.. --stop-after 0 --jobs 2 --json sig.json >sig.out 2>sig.err &
  local pid=$!
  name=$n cases=$((cases + 1))
  if ! wait_for sig.out "$text"; then
    kill -KILL $pid
    fail "never printed '$text'"
    cd ..
    return
  fi
  kill "-$sig" $pid
  wait $pid
  local rc=$?
  if [ $rc -ne "$want" ]; then
    fail "exit code $rc, expected $want: $(tail -c 300 sig.err)"
  elif ! grep -q "stopped: SIG$sig" sig.out; then
    fail "no summary saying 'stopped: SIG$sig'"
  fi
  check "${n}_records" '
import json, os, sys
d = json.load(open("sig.json"))
assert d["stopped"] == sys.argv[1], d["stopped"]
printed = [l.split(": ", 1)[1] for l in open("sig.out").read().splitlines() if l.startswith("failure record: ")]
assert [f["record"] for f in d["failing_seeds"] if f["record"]] == printed, "records printed and summarised differ"
# Past --max-records (default 100) a failure has no record, and says so.
unrecorded = sum(1 for l in open("sig.out").read().splitlines() if l.startswith("no failure record (--max-records"))
assert unrecorded == sum(1 for f in d["failing_seeds"] if not f["record"]), "unrecorded failures miscounted"
assert len(printed) <= 100, len(printed)
assert all(os.path.getsize(p) > 0 for p in printed), "a record is missing"
# What was run is a prefix of the range: every failing seed is within it.
assert all(f["seed"] <= d["runs"] for f in d["failing_seeds"])
assert len(printed) >= int(sys.argv[2]), len(printed)' "SIG$sig" "$([ "$want" -eq 1 ] && echo 1 || echo 0)"
  cd ..
}
signal_case sigint INT 1 "failure record: " "$canary"
# Nothing found: the exit is 128 + the signal (143), never 0 — a cancelled CI job must not pass.
signal_case sigterm TERM 143 "^exploring " "$healthy"
# Several FILEs, stopped in the first: the --json keeps the several-file form,
# lists the files that did not run, and the exit is 130.
mkdir -p sig_many && cd sig_many || exit 1
"$L" explore "$healthy" "$S/program_velo.json" --seeds 1.. --jobs 2 --json many.json >many.out 2>many.err &
pid=$!
name=sigint_many_files cases=$((cases + 1))
if wait_for many.out "^exploring "; then
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 130 ] && grep -q "^not run (stopped: SIGINT): .*program_velo.json" many.out || fail "exit $rc; $(tail -c 300 many.out)"
  check sigint_many_files_json '
import json
d = json.load(open("many.json"))
assert d["lockstep_explore_summaries"] == 1 and len(d["summaries"]) == 1, list(d)
assert d["summaries"][0]["stopped"] == "SIGINT"
assert [f.rsplit("/", 1)[1] for f in d["not_run"]] == ["program_velo.json"], d.get("not_run")'
else
  kill -KILL $pid
  fail "never started"
fi
cd .. || exit 1

# --- outputs: written whole or not at all ---------------------------------------
# An earlier run's --json is removed when a run starts (it is written at the
# end), so a run killed mid-way leaves no stale summary that looks like its own.
mkdir -p atomic && cd atomic || exit 1
printf '{"old": true}\n' >stale.json
"$L" explore "$healthy" --seeds 1.. --jobs 1 --json stale.json >kill.out 2>&1 &
pid=$!
name=killed_run_leaves_no_stale_json cases=$((cases + 1))
if wait_for kill.out "^exploring "; then
  kill -KILL $pid
  wait $pid 2>/dev/null
  [ ! -e stale.json ] && [ -z "$(ls -A | grep -v kill.out)" ] || fail "left behind: $(ls -A | tr '\n' ' ')"
else
  kill -KILL $pid
  fail "never started"
fi
# Through a symbolic link the file it names is replaced (the link stays); a
# device is written in place.
printf 'old\n' >target.json && ln -s target.json link.json
expect output_through_symlink 0 "all 5 seeds held" -- "$L" explore "$healthy" --seeds 5 --json link.json
name=output_through_symlink_kept cases=$((cases + 1))
[ -L link.json ] && grep -q '"lockstep_explore_summary"' target.json || fail "the link was replaced, or the target not written"
expect output_to_dev_null 0 "all 5 seeds held" -- "$L" explore "$healthy" --seeds 5 --json /dev/null --junit /dev/null
# A name near the system's limit fits (the temporary name is short whatever
# the file's), and a file replaced keeps its permissions.
long=$(printf 'n%.0s' $(seq 1 250)).json
expect output_long_name 0 "all 3 seeds held" -- "$L" explore "$healthy" --seeds 3 --json "$long"
name=output_long_name_written cases=$((cases + 1))
grep -q '"lockstep_explore_summary"' "$long" || fail "a 255-byte file name was not written"
printf 'x' >kept.jsonl && chmod 640 kept.jsonl
expect output_keeps_mode 0 "outcome=ok" -- "$L" run "$healthy" --seed 3 --trace kept.jsonl
name=output_keeps_mode_640 cases=$((cases + 1))
[ "$(stat -c %a kept.jsonl)" = 640 ] && head -c 12 kept.jsonl | grep -q '"ev":"run"' || fail "mode $(stat -c %a kept.jsonl)"
name=output_no_temporaries_left cases=$((cases + 1))
[ -z "$(ls -A | grep '\.tmp')" ] || fail "temporary files left: $(ls -A | grep '\.tmp')"
cd .. || exit 1

# --- distinct schedules count decisions, not seeds: fifo makes one schedule ---
expect schedules_fifo_one 0 "20 runs, 0 failures, 1 distinct schedules" -- \
  "$L" explore "$S/shards_class_budgets_fifo.json" --strategy fifo --seeds 1..20
expect schedules_random_many 0 "20 runs, 0 failures, 20 distinct schedules" -- \
  "$L" explore "$healthy" --seeds 1..20 --strategy random
# explore's default: the portfolio, seed 1 under random, 2 pct, 3 pos, 4 surw (results/strategies.md).
expect default_is_the_portfolio 0 "strategy=portfolio seeds=1..8: 8 runs (+4 random runs that sized pct's k or profiled surw's fibers), 0 failures" -- \
  "$L" explore "$healthy" --seeds 1..8

# --- (e) JSON, JUnit, progress, printed commands ------------------------------
mkdir formats && cd formats || exit 1
ln -s "$L" ./lockstep-here  # argv[0] as typed: the printed commands must use it
expect formats_run 1 "stopped: complete" -- ./lockstep-here explore "$canary" --seeds 1..60 --stop-after 0 \
  --json s.json --junit s.xml
check formats_json_junit '
import json, xml.etree.ElementTree as ET
d = json.load(open("s.json"))
assert d["runs"] == 60 and d["failures"] == len(d["failing_seeds"]) > 0
assert sum(d["failures_by_reason"].values()) == d["failures"]
assert d["distinct_schedules"] == len(set(d["schedule_hashes"])) and len(d["trace_hashes"]) == 60
assert len(d["schedule_hashes"]) == 60
t = ET.parse("s.xml").getroot()
cases = t.findall(".//testcase")
fails = t.findall(".//failure")
# One testcase per failing seed, each with its one failure.
assert len(cases) == len(fails) == d["failures"], (len(cases), len(fails))
assert all(len(c.findall("failure")) == 1 for c in cases)
n = str(d["failures"])
assert t.find("testsuite").get("failures") == n and t.find("testsuite").get("tests") == n
for c, s in zip(cases, d["failing_seeds"]):
    assert c.get("name").endswith(" strategy=portfolio seed=%d" % s["seed"]), c.get("name")
for f, s in zip(fails, d["failing_seeds"]):
    assert f.get("message") == "seed %d: oracle exactly_once" % s["seed"], f.get("message")
    assert ("replay with: ./lockstep-here replay " in f.text) and ("seed=%d" % s["seed"]) in f.text'
# The JUnit is valid against tools/tests/data/junit.xsd and a JUnit parser reads
# every case back with its one failure.
junit_valid() {  # junit_valid NAME FILE CASES FAILURES
  name="$1_xsd" cases=$((cases + 1))
  xmllint --noout --schema "$here/data/junit.xsd" "$2" >xsd.out 2>&1 || fail "not valid JUnit: $(tail -c 300 xsd.out)"
  # Debian's python3: python3-junitparser (tools/bootstrap.sh) installs into it, whatever python3 is first on PATH.
  name="$1_junitparser" cases=$((cases + 1))
  /usr/bin/python3 -c '
import sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
cases = [c for suite in xml for c in suite]
failed = [c for c in cases if any(isinstance(r, Failure) for r in c.result)]
assert len(cases) == int(sys.argv[2]) and len(failed) == int(sys.argv[3]), (len(cases), len(failed))' "$2" "$3" "$4" \
    >check.out 2>&1 || fail "$(head -c 600 check.out)"
}
junit_valid formats_junit s.xml "$(python3 -c 'import json; print(json.load(open("s.json"))["failures"])')" \
  "$(python3 -c 'import json; print(json.load(open("s.json"))["failures"])')"
cmd=$(python3 -c 'import json; print(json.load(open("s.json"))["failing_seeds"][0]["command"])')
name=formats_replay_as_printed cases=$((cases + 1))
case "$cmd" in "./lockstep-here replay 'results/failures/"*) ;; *) fail "printed command: $cmd" ;; esac
expect formats_replay_works 1 "reproduced: the same trace hash" -- sh -c "$cmd"
expect formats_clean_junit 0 "all 20 seeds held" -- "$L" explore "$healthy" --seeds 20 --junit ok.xml
check formats_clean_junit_counts '
import xml.etree.ElementTree as ET
t = ET.parse("ok.xml").getroot()
assert len(t.findall(".//testcase")) == 1 and not t.findall(".//failure") and t.get("failures") == "0"'
name=progress_not_on_pipe cases=$((cases + 1))
"$L" explore "$healthy" --seeds 1..3000 --jobs 1 >pipe.out 2>&1
! grep -q $'\r' pipe.out || fail "a progress line on a pipe"
# On a terminal (script(1) gives one): the line is drawn with \r and erased.
name=progress_on_terminal cases=$((cases + 1))
# --time: it lasts long enough for a redraw (every 100 ms) on any machine.
script -qfec "$L explore $healthy --seeds 1.. --time 500ms --jobs 1" tty.out >/dev/null 2>&1
grep -q $'\r\033\[K[0-9]* runs, [0-9]* runs/s, 0 failures, ETA [0-9.]*s, scenario=' tty.out || fail "no progress line on a terminal: $(tail -c 300 tty.out | od -c | head -5)"
# The line is on stderr (stdout, sent to a file here, holds only results), and
# cut to the terminal's width: a 40-column pane gets lines of 39 columns at most.
name=progress_on_stderr_within_width cases=$((cases + 1))
script -qfec "stty cols 40; $L explore $healthy --seeds 1.. --time 500ms --jobs 1 >results.out" tty40.out >/dev/null 2>&1
if grep -q $'\r' results.out; then
  fail "a progress line on stdout"
else
  python3 -c '
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
lines = [l for l in re.split("\r\x1b\\[K", text) if "runs/s" in l]
assert lines, "no progress line"
assert max(len(l.rstrip("\r\n")) for l in lines) <= 39, max(lines, key=len)' tty40.out >check.out 2>&1 ||
    fail "progress line missing or wider than 39 columns: $(tail -c 300 check.out)"
fi
cd ..

# --- (f) bad input ---------------------------------------------------------------
expect bad_jobs_zero 2 "--jobs: expected a decimal integer from 1 to 1024, found '0'" -- "$L" explore "$healthy" --jobs 0
expect bad_jobs_text 2 "--jobs: expected a decimal integer from 1 to 1024, found 'many'" -- "$L" explore "$healthy" --jobs many
expect bad_runs_zero 2 "--runs: expected a decimal integer from 1 to 18446744073709551615, found '0'" -- "$L" explore "$healthy" --runs 0
expect bad_time_unitless 2 "--time: expected a wall-clock duration like 30s, 5m or 2h (digits then ms, s, m or h; 1ms to 8760h), found '30'" -- \
  "$L" explore "$healthy" --time 30
expect bad_time_zero 2 "--time: expected a wall-clock duration like 30s" -- "$L" explore "$healthy" --time 0s
expect bad_time_unit 2 "found '3d'" -- "$L" explore "$healthy" --time 3d
expect bad_stop_after 2 "--stop-after: expected a decimal integer from 0 to 18446744073709551615, found '-1'" -- \
  "$L" explore "$healthy" --stop-after -1
expect bad_shard_index 2 "--shard: expected I/N, the shard's index I from 0 to N-1 and the count N from 1 to 65536, found '3/3'" -- \
  "$L" explore "$healthy" --shard 3/3
expect bad_shard_form 2 "--shard: expected I/N, the shard's index I from 0 to N-1 and the count N from 1 to 65536, found '1'" -- \
  "$L" explore "$healthy" --shard 1
expect bad_seeds_reversed 2 "--seeds (the range's last seed B of A..B): expected a decimal integer from 10 to 18446744073709551615, found '5'" -- \
  "$L" explore "$healthy" --seeds 10..5
expect bad_seeds_range_start 2 "--seeds (the range's first seed A of A..B): expected a decimal integer from 0 to 18446744073709551615, found 'x'" -- \
  "$L" explore "$healthy" --seeds x..5
expect bad_seeds_range_and_first 2 "--seeds 5..10: expected either a range A..B or --first-seed with a count, found both" -- \
  "$L" explore "$healthy" --seeds 5..10 --first-seed 3
expect bad_json_path 2 "--json nodir/s.json" -- "$L" explore "$healthy" --json nodir/s.json
mkdir adir
expect bad_junit_dir 2 "--junit adir" -- "$L" explore "$healthy" --junit adir
expect bad_record_many 2 "--record: names one file, expected --stop-after 1 with it" -- \
  "$L" explore "$canary" --record r.json --stop-after 2
cd canary_cut || exit 1
printf '{"lockstep_explore_summary": 1,' >malformed.json
expect bad_merge_malformed 2 "malformed.json: byte 32: syntax error" -- "$L" merge s0.json malformed.json
expect bad_merge_missing 2 "merge: expected one summary for each shard 0..2 of 3, found none for shard 2" -- "$L" merge s0.json s1.json
expect bad_merge_overlap 2 "merge: s0.json: /shard/index: expected each shard once, found shard 0/3 again (also s0.json)" -- \
  "$L" merge s0.json s1.json s0.json
"$L" explore "$canary" --seeds 1..300 --stop-after 4 --strategy pct --shard 2/3 --json pct2.json >/dev/null 2>&1
expect bad_merge_other_strategy 2 "merge: pct2.json: /config/strategy: expected the same as in s0.json" -- \
  "$L" merge s0.json s1.json pct2.json
"$L" explore "$canary" --seeds 1..299 --stop-after 4 --shard 2/3 --json range2.json >/dev/null 2>&1
expect bad_merge_other_range 2 "merge: range2.json: /config/seeds: expected the same as in s0.json" -- \
  "$L" merge s0.json s1.json range2.json
"$L" explore "$canary" --seeds 1..300 --stop-after 4 --shard 1/2 --json half.json >/dev/null 2>&1
expect bad_merge_counts 2 "merge: half.json: /shard/count: expected 3 as in s0.json, found 2" -- "$L" merge s0.json half.json
expect bad_merge_not_summary 2 "results/failures/lanes_send_after_unlock-random-1.json: /lockstep_explore_summary: expected a field holding" -- \
  "$L" merge results/failures/lanes_send_after_unlock-random-1.json
expect bad_merge_json_out 2 "--json nodir/m.json" -- "$L" merge s0.json s1.json s2.json --json nodir/m.json
cd ..

# --- (g) several FILEs ------------------------------------------------------------
mkdir -p many && cd many || exit 1
expect many_files_held 0 "all 30 seeds held" -- \
  "$L" explore "$healthy" "$S/program_velo.json" --seeds 1..30 --json both.json --junit both.xml
name=many_files_summary_each cases=$((cases + 1))
[ "$("$L" explore "$healthy" "$S/program_velo.json" --seeds 1..30 | grep -c '^summary: scenario=')" -eq 2 ] ||
  fail "not one summary per file"
check many_files_one_json '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["lockstep_explore_summaries"] == 1, d.keys()
files = [s["config"]["scenario"] for s in d["summaries"]]
assert [f.rsplit("/", 1)[1] for f in files] == ["lanes_capacity_concurrent.json", "program_velo.json"], files
assert all(s["runs"] == 30 and s["failures"] == 0 for s in d["summaries"])' both.json
check many_files_one_junit '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall("./testsuite/testcase")
assert root.get("tests") == "2" and len(cases) == 2 and root.get("failures") == "0", ET.tostring(root)[:300]' both.xml
# The first file holds, the second fails: both are explored, the exit code is the failure's.
"$L" explore "$healthy" "$canary" --seeds 1..20 --json mixed.json --junit mixed.xml >out 2>err
rc=$?
name=many_files_first_failure_decides cases=$((cases + 1))
[ $rc -eq 1 ] && [ "$(grep -c '^summary: scenario=' out)" -eq 2 ] || fail "exit $rc, or not both files summarised"
check many_files_junit_failure '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall("./testsuite/testcase")
assert root.get("failures") == "1" and cases[0].find("failure") is None and cases[1].find("failure") is not None' mixed.xml
junit_valid many_files_junit mixed.xml 2 1
junit_valid many_files_held_junit both.xml 2 0
# A directory stands for its *.json files, sorted by name.
mkdir lib && cp "$S/program_velo.json" lib/b.json && cp "$healthy" lib/a.json && echo ignored >lib/notes.txt
"$L" explore lib --seeds 1..5 >out 2>err
rc=$?
name=many_files_directory_sorted cases=$((cases + 1))
[ $rc -eq 0 ] && [ "$(grep '^exploring scenario=' out | sed 's/ strategy.*//')" = "$(printf 'exploring scenario=lib/a.json\nexploring scenario=lib/b.json')" ] ||
  fail "exit $rc; explored: $(grep '^exploring' out)"
mkdir empty
expect many_files_empty_directory 2 "lockstep: empty: expected a directory holding scenario files (*.json), found none" -- \
  "$L" explore empty
expect many_files_record_refused 2 "--record: names one output file, expected one scenario FILE with it, found 2 files" -- \
  "$L" explore "$healthy" "$canary" --record r.json
expect many_files_bad_second 2 "lockstep: lib/notes.txt: byte 1: syntax error" -- "$L" explore "$healthy" lib/notes.txt
cd ..

echo "explore_cli: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
