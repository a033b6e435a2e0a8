#!/usr/bin/env bash
# Goal: every bad input the lockstep CLI can be handed exits 2 with one line
# on stderr naming the flag or file, the JSON pointer and what was expected;
# exit codes tell held / failed / liveness / diverged apart; a failure is never
# lost (an unwritable record, a crash of the code under test). Each case below
# was a defect (a terminate, a SIGSEGV, a wrong exit code, a silent success)
# and asserts the exit code and the message.
#
#   cli_regressions.sh LOCKSTEP_BINARY [asan]
# `asan`: the binary is an ASan build (a planted segfault then ends in ASan's
# report and exit 86, not SIGSEGV).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
L=$(realpath "$1")
asan=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
ulimit -c 0
case_timeout=120
source "$here/expect.sh"

deep() {  # n open brackets, then n closing ones
  printf '%*s' "$1" '' | tr ' ' '['
  printf '%*s' "$1" '' | tr ' ' ']'
}

# Every run below is of a scenario file: H holds, C plants a bug that fails at
# every seed tried here (the final flush skipped), X crashes the process.
S=$(cd "$here/../../scenarios" && pwd)
H=$S/program_velo.json
C=$S/canaries/shards_skip_final_flush.json
X=$S/harness/crash_segv.json

# --- a scenario file read strictly: numbers, nesting, duplicates, pointers -------
# bad_file NAME CONTENT: the file NAME.json holds CONTENT.
bad_file() { printf '%s' "$2" >"$1.json"; }
bad_file f_float '{"items":1e309}'
expect file_float_overflow 2 "lockstep: f_float.json: /items: expected a finite number, found 1e309" -- "$L" run f_float.json
bad_file f_negative '{"items":-1e400}'
expect file_negative_overflow 2 "f_negative.json: /items: expected a finite number, found -1e400" -- "$L" run f_negative.json
bad_file f_past_u64 '{"items":18446744073709551616}'
expect file_integer_past_u64 2 \
  "f_past_u64.json: /items: expected an integer from -9223372036854775808 to 18446744073709551615, found 18446744073709551616" -- \
  "$L" run f_past_u64.json
bad_file f_below_i64 '{"items":-9223372036854775809}'
expect file_integer_below_i64 2 "f_below_i64.json: /items: expected an integer from -9223372036854775808" -- "$L" run f_below_i64.json
deep 65000 >f_nested_65000.json
expect file_nested_65000 2 "f_nested_65000.json: /0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0: expected at most 64 levels of nesting, found deeper nesting" -- \
  "$L" run f_nested_65000.json
deep 65 >f_nested_65.json
expect file_nested_65 2 "expected at most 64 levels of nesting" -- "$L" run f_nested_65.json
deep 64 >f_nested_64.json
expect file_nested_64_is_json 2 "f_nested_64.json: /: expected a lockstep scenario (format version 1)" -- "$L" run f_nested_64.json
bad_file f_nested_in_object "{\"a\":{\"b\":$(deep 63)}}"
expect file_nested_in_object 2 'f_nested_in_object.json: /a/b/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0: expected at most 64 levels' -- \
  "$L" run f_nested_in_object.json
bad_file f_dup '{"items":1,"items":2}'
expect file_duplicate_key 2 "f_dup.json: /items: expected each key at most once in an object, found a duplicate key" -- "$L" run f_dup.json
bad_file f_escaped '{"a/b~c":1}'
expect file_pointer_escaped 2 "f_escaped.json: /a~1b~0c: expected one of about, behaviour, expect, expect_failure, liveness_ns, lockstep, must_reach, oracles, system, workload (unknown field)" -- \
  "$L" run f_escaped.json
bad_file f_dup_escaped '{"x":{"~/":1,"~/":2}}'
expect file_duplicate_pointer_escaped 2 "f_dup_escaped.json: /x/~0~1: expected each key at most once" -- "$L" run f_dup_escaped.json
bad_file f_syntax '{"items":1.5'
expect file_syntax 2 "f_syntax.json: byte 13: syntax error while parsing object" -- "$L" run f_syntax.json
bad_file f_empty ''
expect file_empty 2 "f_empty.json: byte 1: syntax error" -- "$L" run f_empty.json
bad_file f_long "{\"about\":\"$(printf '%*s' 5000 '' | tr ' ' a)\"}"
expect file_long_value_truncated 2 "found \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..." -- "$L" run f_long.json
bad_file f_newline '{"a\nb":1}'
expect file_newline_in_key 2 'f_newline.json: /a\x0ab: expected one of' -- "$L" run f_newline.json
bad_file f_not_object '3'
expect file_not_object 2 "f_not_object.json: /: expected a lockstep scenario (format version 1): system, behaviour, workload, oracles, liveness_ns, expect, found 3" -- \
  "$L" run f_not_object.json
expect file_missing_argument 2 "lockstep: files is required (see --help)" -- "$L" run
expect program_flag_retired 2 "lockstep: The following argument was not expected: --program (see --help)" -- \
  "$L" run "$H" --program velo
expect programs_verb_retired 2 "lockstep: programs: expected a verb (run, explore," -- "$L" programs

# --- seeds and numeric flags ------------------------------------------------
u64="expected a decimal integer from 0 to 18446744073709551615"
expect seed_negative 2 "--seed: $u64, found '-1'" -- "$L" run "$H" --seed -1
expect seed_past_u64 2 "--seed: $u64, found '18446744073709551616'" -- "$L" run "$H" --seed 18446744073709551616
expect seed_empty 2 "lockstep: --seed: expected a value, found an empty one" -- "$L" run "$H" --seed ''
expect seed_plus 2 "--seed: $u64, found '+1'" -- "$L" run "$H" --seed +1
expect seed_space 2 "--seed: $u64, found ' 1'" -- "$L" run "$H" --seed ' 1'
expect seed_hex 2 "--seed: $u64, found '0x10'" -- "$L" run "$H" --seed 0x10
expect seed_max_runs 0 "seed=18446744073709551615 " -- "$L" run "$H" --seed 18446744073709551615
expect first_seed_range_wraps 2 \
  "--first-seed 18446744073709551615 with --seeds 2: expected a range ending at most at 18446744073709551615" -- \
  "$L" explore "$H" --first-seed 18446744073709551615 --seeds 2
expect first_seed_range_wraps_det 2 "--first-seed 18446744073709551610 with --seeds 7" -- \
  "$L" check-determinism "$H" --first-seed 18446744073709551610 --seeds 7
expect first_seed_range_ends_at_max 0 "all 2 seeds held" -- \
  "$L" explore "$H" --first-seed 18446744073709551614 --seeds 2
expect seeds_zero 2 "--seeds: expected a decimal integer from 1 to 1099511627776, found '0'" -- \
  "$L" explore "$H" --seeds 0
expect cores_zero 2 "--cores: expected a decimal integer from 1 to 64, found '0'" -- "$L" run "$H" --cores 0
expect max_steps_zero 2 "--max-steps: expected a decimal integer from 1" -- "$L" run "$H" --max-steps 0
expect strategy_unknown 2 "--strategy: bogus not in {random,pct,pos,surw,fifo,portfolio}" -- "$L" run "$H" --strategy bogus
expect usage_unknown_flag 2 "lockstep: The following argument was not expected: --nope (see --help)" -- "$L" run "$H" --nope

# --- output paths -----------------------------------------------------------
mkdir adir
expect trace_dev_full 2 "--trace /dev/full: cannot write it: No space left on device" -- "$L" run "$H" --trace /dev/full
expect trace_directory 2 "--trace adir: expected a file, found a directory" -- "$L" run "$H" --trace adir
expect trace_missing_dir 2 "--trace nodir/t.jsonl: the directory nodir does not exist" -- "$L" run "$H" --trace nodir/t.jsonl
expect trace_empty 2 "lockstep: --trace: expected a value, found an empty one" -- "$L" run "$H" --trace ''
expect trace_written 0 "outcome=ok" -- "$L" run "$H" --trace t.jsonl
[ -s t.jsonl ] || { name=trace_written fail "t.jsonl is empty"; }
expect record_directory 2 "--record adir: expected a file, found a directory" -- \
  "$L" run "$C" --seed 3 --record adir
expect record_dev_full 2 "--record /dev/full: cannot write it" -- "$L" explore "$H" --record /dev/full
expect record_dir_empty 2 "lockstep: --record-dir: expected a value, found an empty one" -- "$L" demo --record-dir ''
expect record_dir_missing 2 "--record-dir nodir: no such directory" -- "$L" demo --record-dir nodir
expect demo_library_missing 2 "nolib: cannot list the directory" -- "$L" demo --library nolib
expect demo_seeds_zero 2 "--seeds: expected a decimal integer from 1 to 1000000, found '0'" -- "$L" demo --seeds 0
expect selfcheck_unknown_bug 2 "--only: expected the name of a planted bug (engine/plant.hpp), found 'bogus'" -- "$L" selfcheck --only bogus
expect selfcheck_bad_budget 2 "--budget: expected a wall-clock duration like 30s" -- "$L" selfcheck --budget 5
expect selfcheck_library_missing 2 "nolib: cannot list the directory" -- "$L" selfcheck --library nolib
# A record that cannot be written after the run (the directory went away):
# the failure, seed and rerun command are printed, the exit code stays 1.
mkdir gone
chmod 0555 gone
if [ "$(id -u)" -ne 0 ]; then
  expect record_lost_keeps_failure 2 "--record gone/r.json: cannot create a file in gone" -- \
    "$L" run "$C" --seed 3 --record gone/r.json
fi
# The default record path is the working directory: make it unwritable by
# making it a directory name taken by a file... simplest: run from a removed cwd.
mkdir cwd && (cd cwd && rmdir ../cwd && "$L" run "$C" --seed 3 >../out 2>../err)
rc=$?
name=record_lost_prints_rerun cases=$((cases + 1))
if [ $rc -ne 1 ]; then
  fail "exit code $rc, expected 1"
elif ! grep -qF "the failure record was lost; the failing run: scenario=$C seed=3 strategy=random cores=1" out ||
  ! grep -qF "rerun with: $L run '$C' --seed 3 --strategy random --cores 1 --max-steps 10000000" out ||
  ! grep -qF "the failure record was not written" err; then
  fail "the lost record's failure was not printed in full"
fi

# The default record directory cannot be made (a file named results is in the
# way; a read-only folder, which root cannot test, takes the same path): the
# message names the directory and why, not the write's "No such file or directory".
mkdir blocked && touch blocked/results
(cd blocked && "$L" run "$C" --seed 3 >../out 2>../err)
rc=$?
name=record_directory_not_made cases=$((cases + 1))
if [ $rc -ne 1 ] || ! grep -qF "the failure record was not written: cannot create its directory results/failures: Not a directory" err ||
  ! grep -qF "the failure record was lost; the failing run:" out; then
  fail "exit $rc; the record's directory failure was not said as it is"
fi

# A trace whose write fails after the run (the working directory was removed
# after the check): reported, exit 2.
mkdir cwd2 && (cd cwd2 && rmdir ../cwd2 && "$L" run "$H" --trace t.jsonl >../out 2>../err)
rc=$?
name=trace_write_fails_after_run cases=$((cases + 1))
if [ $rc -ne 2 ] || ! grep -qF "lockstep: --trace t.jsonl: the trace was not written: cannot open it for writing" err; then
  fail "exit code $rc (expected 2) or no report of the lost trace"
fi

# --- exit codes of runs -----------------------------------------------------
expect run_oracle_exits_1 1 "FAILED oracle" -- "$L" run "$C" --seed 3 --record rec.json
expect run_step_budget_exits_3 3 "FAILED step_budget" -- "$L" run "$H" --seed 3 --max-steps 115 --record budget.json
expect explore_oracle_exits_1 1 "FAILED oracle" -- \
  "$L" explore "$C" --seeds 50 --record explored.json
expect explore_budget_exits_3 3 "FAILED step_budget" -- "$L" explore "$H" --max-steps 50 --seeds 3 --record b.json

# --- replay: reproduced 1, passes now 0, diverged 4 ----------------------------
expect replay_reproduced_exits_1 1 "reproduced: the same trace hash" -- "$L" replay rec.json
# 115 of the 120 steps its seed 3 takes: the recorded decisions cover the rest.
sed -e 's/"max_steps": 115,/"max_steps": 10000000,/' budget.json >holds.json
expect replay_now_holds_exits_0 0 "no longer reproduces: the run held" -- "$L" replay holds.json
sed -e 's/"max_steps": 50,/"max_steps": 10000000,/' b.json >needs_more.json
expect replay_needs_more_exits_4 4 "DIVERGED" -- "$L" replay needs_more.json
sed -e '/"decisions": \[/,/^  \]/ s/^  \]/    ,0, 0\n  ]/' rec.json >appended.json
expect replay_extra_decisions_exits_4 4 "DIVERGED: recorded trace hash" -- "$L" replay appended.json
sed -e 's/"trace_hash": "[0-9a-f]*"/"trace_hash": "0000000000000000"/' rec.json >hash.json
expect replay_other_hash_exits_4 4 "DIVERGED" -- "$L" replay hash.json
expect replay_trace_dev_full 2 "--trace /dev/full: cannot write it" -- "$L" replay rec.json --trace /dev/full

# --- failure records read strictly ----------------------------------------------
# rec.json is pretty-printed one field a line; each case edits one field.
edit() {  # out-file sed-expression
  sed -e "$2" rec.json >"$1"
}
expect record_directory_input 2 "lockstep: adir: expected a file, found a directory" -- "$L" replay adir
expect record_tmp_directory 2 "lockstep: /tmp: expected a file, found a directory" -- "$L" replay /tmp
expect record_missing 2 "lockstep: missing.json: cannot open the file: No such file or directory" -- "$L" replay missing.json
expect record_unreadable 2 "/proc/self/mem: reading the file failed" -- "$L" replay /proc/self/mem
mkfifo fifo
expect record_fifo 2 "fifo: expected a regular file, found a device, FIFO or socket" -- "$L" replay fifo
if [ "$(id -u)" -ne 0 ]; then
  cp rec.json noread.json && chmod 000 noread.json
  expect record_no_permission 2 "noread.json: cannot open the file: Permission denied" -- "$L" replay noread.json
fi
edit r_float.json 's/"steps": \([0-9]*\),/"steps": 1e309,/'
expect record_unused_float_overflow 2 "r_float.json: /steps: expected a finite number, found 1e309" -- "$L" replay r_float.json
edit r_int.json 's/"steps": \([0-9]*\),/"steps": 99999999999999999999999,/'
expect record_unused_integer_overflow 2 "r_int.json: /steps: expected an integer from" -- "$L" replay r_int.json
edit r_time.json 's/"max_time_ns": [0-9]*,/"max_time_ns": 9223372036854775808,/'
expect record_max_time_past_i64 2 "r_time.json: /max_time_ns: expected an integer from 0 to 9223372036854775807, found 9223372036854775808" -- \
  "$L" replay r_time.json
edit r_strategy.json 's/"strategy": "random",/"strategy": "bogus",/'
expect record_strategy_bogus 2 'r_strategy.json: /strategy: expected one of random, pct, pos, surw, fifo, replay, found "bogus"' -- \
  "$L" replay r_strategy.json
edit r_depth0.json 's/"pct_depth": [0-9]*,/"pct_depth": 0,/'
expect record_pct_depth_0 2 "r_depth0.json: /pct_depth: expected an integer from 1 to 64, found 0" -- "$L" replay r_depth0.json
edit r_depth65.json 's/"pct_depth": [0-9]*,/"pct_depth": 65,/'
expect record_pct_depth_65 2 "r_depth65.json: /pct_depth: expected an integer from 1 to 64, found 65" -- "$L" replay r_depth65.json
edit r_pct_steps.json 's/"strategy": "random",/"strategy": "pct",/'
expect record_pct_steps_0 2 "r_pct_steps.json: /pct_steps: expected an integer from 1 to" -- "$L" replay r_pct_steps.json
edit r_max_steps.json 's/"max_steps": [0-9]*,/"max_steps": 0,/'
expect record_max_steps_0 2 "r_max_steps.json: /max_steps: expected an integer from 1 to" -- "$L" replay r_max_steps.json
edit r_cores.json 's/"cores": [0-9]*,/"cores": 65,/'
expect record_cores_65 2 "r_cores.json: /cores: expected an integer from 1 to 64, found 65" -- "$L" replay r_cores.json
edit r_decision.json '/"decisions": \[/ s/\[/[4294967295,/'
expect record_decision_too_big 2 "r_decision.json: /decisions/0: expected a fiber id from 0 to 4294967294, found 4294967295" -- \
  "$L" replay r_decision.json
edit r_kind.json 's/"kind": "oracle",/"kind": "bogus",/'
expect record_failure_kind 2 'r_kind.json: /failure/kind: expected one of deadlock, step_budget' -- "$L" replay r_kind.json
edit r_unknown.json 's/^{/{"a\/b~": 1,/'
expect record_unknown_field_escaped 2 "r_unknown.json: /a~1b~0: expected no such field in a failure record (unknown field)" -- \
  "$L" replay r_unknown.json
edit r_dup.json 's/^{/{"seed": 1,/'
expect record_duplicate_key 2 "r_dup.json: /seed: expected each key at most once" -- "$L" replay r_dup.json
deep 100000 >deep.txt
# deep_edit out-file sed-expression: the expression puts DEEP where deep.txt
# goes (100,000 levels are too long for a sed argument).
deep_edit() {
  local text
  text=$(sed -e "$2" rec.json)
  { printf '%s' "${text%%DEEP*}"; cat deep.txt; printf '%s\n' "${text#*DEEP}"; } >"$1"
}
deep_edit r_deep_scenario.json 's/"scenario": {/"scenario": {"x": DEEP,/'
expect record_deep_scenario 2 "r_deep_scenario.json: /scenario/x/0/0" -- "$L" replay r_deep_scenario.json
deep_edit r_deep_decision.json '/"decisions": \[/ s/\[/[DEEP,/'
expect record_deep_decision 2 "r_deep_decision.json: /decisions/0/0/0" -- "$L" replay r_deep_decision.json
edit r_file_type.json 's/"scenario_file": "[^"]*",/"scenario_file": 7,/'
expect record_scenario_file_type 2 "r_file_type.json: /scenario_file: expected a string, found 7" -- "$L" replay r_file_type.json
edit r_scenario_value.json 's/"liveness_ns": [0-9]*/"liveness_ns": -5/'
expect record_bad_scenario_value 2 "r_scenario_value.json: /scenario/liveness_ns: expected" -- "$L" replay r_scenario_value.json
# A record of the retired built-in programs (/program, /options): refused, saying what it is.
edit r_program.json 's/^{/{"program": "pipeline", "options": {},/'
expect record_retired_program 2 "r_program.json: /program: expected a scenario record (with /scenario); this is a record of a built-in program, which lockstep no longer has" -- \
  "$L" replay r_program.json
# A record written by a LOCKSTEP_TEST_CASE (/test, no /scenario): refused, saying where it replays.
printf '{"lockstep_failure_record": 1, "test": "pool_hands_out", "seed": 3}\n' > r_library.json
expect record_library_test 2 'r_library.json: /test: expected a scenario record (with /scenario); this is the record of the library test "pool_hands_out", which replays from its own test binary: LOCKSTEP_REPLAY=r_library.json' -- \
  "$L" replay r_library.json

# --- check-determinism, demo ----------------------------------------------------
expect check_determinism_holds 0 "(twice)" -- "$L" check-determinism "$H" --seeds 2
expect help_lists_exit_codes 0 "4   nondeterminism" -- "$L" --help

# --- a crash of the code under test still names the run ------------------------
# The harness scenario's processor crashes the process (crash_segv); its
# copies crash with abort() and a stack overflow.
sed -e 's/"crash_segv"/"crash_abort"/' "$X" >crash_abort.json
sed -e 's/"crash_segv"/"crash_overflow"/' "$X" >crash_overflow.json
crash_case() {  # name scenario-file expected-rc
  name=$1
  cases=$((cases + 1))
  "$L" run "$2" --seed 5 --strategy pct --cores 3 >out 2>err
  local got=$?
  if [ "$got" -ne "$3" ]; then
    fail "exit code $got, expected $3"
    return
  fi
  grep -qF "scenario=$2 seed=5 strategy=pct cores=3" err || { fail "the crash report does not name the run"; return; }
  local cmd
  cmd=$(grep -F "rerun with: $L run " err | head -1)
  cmd=${cmd#rerun with: }
  [ -n "$cmd" ] || { fail "no rerun command naming this binary"; return; }
  # k was measured by a probe run: the rerun must probe again (no --pct-steps),
  # so a crash that needs the probe run's leftovers reproduces too.
  case "$cmd" in *--pct-steps*) fail "the rerun skips the probe run: $cmd"; return ;; esac
  # These processors crash in any run, so in the probe run, first: the report says which run it was.
  grep -qF "crashed in the probe run (strategy random, sizing pct's k) of the run" err ||
    { fail "the crash report does not say it was the probe run"; return; }
  # The command exactly as printed (it names this binary): it must crash the same way.
  eval "$cmd" >out2 2>err2
  got=$?
  if [ "$got" -ne "$3" ]; then
    fail "the printed rerun command exited $got, expected $3: $cmd"
  elif ! grep -qF "scenario=$2 seed=5 strategy=pct cores=3" err2; then
    fail "the rerun's crash report does not name the same run"
  fi
}
if [ "$asan" = asan ]; then
  crash_case crash_segv_reports_rerun "$X" 86  # UBSan's null check, or ASan's SEGV report
else
  crash_case crash_segv_reports_rerun "$X" 139
fi
crash_case crash_abort_reports_rerun crash_abort.json 134
# A fiber's stack overflow: the handler runs on the alternate signal stack.
if [ "$asan" = asan ]; then
  crash_case crash_stack_overflow_reports_rerun crash_overflow.json 86
else
  crash_case crash_stack_overflow_reports_rerun crash_overflow.json 139
fi
# A k the user gave is kept in the rerun command (no probe run to repeat).
name=crash_rerun_keeps_given_pct_steps cases=$((cases + 1))
"$L" run crash_abort.json --seed 5 --strategy pct --pct-steps 40 >out 2>err
rc=$?
if [ $rc -ne 134 ] || ! grep -qF -- "--pct-depth 3 --pct-steps 40" err || grep -qF "probe run" err; then
  fail "exit $rc; the rerun command lost the given --pct-steps or claims a probe ran"
fi
# explore keeps what it printed before the crash (stdout flushed per line).
# One job: with two, whichever worker's seed crashes first is the kernel's choice.
name=crash_in_explore_keeps_output cases=$((cases + 1))
"$L" explore crash_abort.json --seeds 3 --jobs 1 >out 2>err
rc=$?
if [ $rc -ne 134 ] || ! grep -qF "exploring scenario=crash_abort.json" out || ! grep -qF "seed=1 strategy=random" err; then
  fail "exit $rc; explore's output or crash report is missing"
fi

# --- a run stopped early tears down cleanly (was SIGSEGV / heap-use-after-free) --
# Each former program's scenario at small step budgets: a liveness verdict (3), never a signal.
for p in grommet probation velo; do
  for budget in 1 2 3 5 8 13 21; do
    for cores in 2 3; do
      expect "early_stop_${p}_${budget}_${cores}" 3 "step budget of $budget exhausted" -- \
        "$L" run "$S/program_$p.json" --max-steps "$budget" --cores "$cores"
    done
  done
done
# Replays of records whose decisions or seed were edited: diverged (4) or a
# clean failure, never a crash. The record comes from a caught canary.
"$L" explore "$C" --seeds 1000 --record g.json >/dev/null 2>&1
if [ -f g.json ]; then
  python3 - <<'PY'
import json
r = json.load(open("g.json"))
def write(name, **changes):
    s = dict(r); s.update(changes); json.dump(s, open(name, "w"))
d = r["decisions"]
write("g_flip.json", decisions=[(d[0] + 1) % 8] + d[1:])
write("g_empty.json", decisions=[])
write("g_seed.json", seed=r["seed"] + 1)
write("g_truncated.json", decisions=d[: len(d) // 3])
PY
  for edited in g_flip g_empty g_seed g_truncated; do
    name="replay_edited_$edited" cases=$((cases + 1))
    timeout 120 "$L" replay "$edited.json" >out 2>err
    rc=$?
    if [ $rc -gt 4 ]; then
      fail "exit $rc: a replay of an edited record must end in a verdict, not a signal"
    elif [ $rc -ne 4 ] && [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
      fail "exit $rc, expected 4 (diverged), 1 or 0"
    fi
  done
else
  name=replay_edited_setup cases=$((cases + 1))
  fail "explore did not catch the skip_final_flush canary in 1000 seeds"
fi
# 49,152 single-flight waiters alive at once (past the old limit of ~32,745 stacks): held.
python3 - <<'PY'
import json
actors = [{"name": "a%d" % i, "core": i % 2, "steps": [{"join": {"key": {"random_below": 64}, "count": 16384}}]}
          for i in range(3)]
json.dump({"lockstep": 1, "about": "49,152 waiters at once, to test the simulator's fiber stacks",
           "system": {"cores": 2, "single_flight": {}},
           "behaviour": {"worker": {"duration_ns": 1000000}},
           "workload": {"actors": actors}, "liveness_ns": 1000000000}, open("many.json", "w"))
PY
expect many_fibers_hold 0 "outcome=ok" -- "$L" run many.json

# --- the verbs: version, help, a mistyped verb, no verb ---------------------------
expect version_flag 0 "lockstep 0." -- "$L" --version
expect version_verb 0 "lockstep 0." -- "$L" version
expect help_verb 0 "Usage:" -- "$L" help
name=help_verb_lists_verbs cases=$((cases + 1))
grep -q "explore" out && grep -q "check-determinism" out || fail "lockstep help does not list the verbs"
expect help_of_a_verb 0 "--stop-after" -- "$L" help explore
# Every value is typed in --help (CLI11's default said TEXT for every flag).
name=help_values_typed cases=$((cases + 1))
for verb in run explore merge replay shrink check-determinism trace demo; do
  "$L" help "$verb" | grep -n 'TEXT' && fail "lockstep help $verb shows an untyped value (above)"
done
expect help_explore_typed 0 "--jobs 1..1024" -- "$L" help explore
expect help_of_a_mistyped_verb 2 "lockstep: help exploer: expected a verb (run, explore," -- "$L" help exploer
expect mistyped_verb 2 "lockstep: explor: expected a verb (run, explore, merge, replay, shrink, check-determinism, trace, demo, generate, selfcheck, version, help); did you mean 'explore'?" -- "$L" explor "$H"
expect unknown_verb_far_from_all 2 "lockstep: frobnicate: expected a verb (" -- "$L" frobnicate
name=unknown_verb_no_guess cases=$((cases + 1))
grep -q "did you mean" err && fail "a word far from every verb got a guess"
expect no_verb 2 "lockstep: expected a verb (run, explore," -- "$L"

# --- a flag given an empty value is refused, never read as "not given" ------------
# (--seeds 1.. with --time '' was an unbounded run.)
expect empty_time 2 "lockstep: --time: expected a value, found an empty one" -- "$L" explore "$H" --seeds 1.. --time ''
expect empty_jobs 2 "lockstep: --jobs: expected a value, found an empty one" -- "$L" explore "$H" --jobs ''
expect empty_runs 2 "lockstep: --runs: expected a value, found an empty one" -- "$L" explore "$H" --seeds 1.. --runs ''
expect empty_json 2 "lockstep: --json: expected a value, found an empty one" -- "$L" explore "$H" --seeds 2 --json ''
# check-determinism writes no record: a --record it took was silently ignored.
expect determinism_record_refused 2 "lockstep: --record: expected no record with check-determinism" -- \
  "$L" check-determinism "$H" --seeds 2 --record r.json

# --- `-` is standard output for a text output (it wrote a file named "-") --------
# The output alone goes to stdout; the CLI's own lines go to stderr.
"$L" explore "$H" --seeds 5 --json - >dash.json 2>dash.err
rc=$?
name=dash_json_on_stdout cases=$((cases + 1))
[ $rc -eq 0 ] && [ ! -e ./- ] && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["runs"] == 5' dash.json &&
  grep -q "all 5 seeds held" dash.err || fail "exit $rc; stdout is not the summary alone, or a file '-' was written"
"$L" run "$H" --seed 3 --trace - >dash.jsonl 2>/dev/null
name=dash_trace_on_stdout cases=$((cases + 1))
[ ! -e ./- ] && head -1 dash.jsonl | grep -q '^{"ev":"run","seed":3' && ! grep -q '^seed=' dash.jsonl ||
  fail "the trace on stdout is mixed with other lines: $(head -c 200 dash.jsonl)"
expect dash_twice_refused 2 "lockstep: --json and --junit: expected at most one output on standard output ('-'), found 2" -- \
  "$L" explore "$H" --seeds 2 --json - --junit -
expect dash_record_refused 2 "lockstep: --record: expected a file path (a record is replayed from its file), found '-'" -- \
  "$L" run "$H" --record -

# --- input files: a NUL byte, a file past the size limit --------------------------
printf '{"lockstep": 1}\0{"ignored": true}' >nul.json
expect nul_byte_refused 2 "lockstep: nul.json: byte 16: expected JSON text, found a NUL byte" -- "$L" run nul.json
expect nul_byte_in_record 2 "nul.json: byte 16: expected JSON text, found a NUL byte" -- "$L" replay nul.json
expect nul_byte_in_merge_input 2 "nul.json: byte 16: expected JSON text, found a NUL byte" -- "$L" merge nul.json
truncate -s 65M huge.json  # sparse: refused from its size, before a byte is read
expect file_past_size_limit 2 "lockstep: huge.json: expected a file of at most 64 MiB, found 68157440 bytes" -- "$L" run huge.json

# --- arrays far past the schema's maxItems are refused as met -----------------
# (4,000 repeated `oracles` took 9 s and 1.7 GB in the schema check before the
# refusal; uniqueItems compared every pair.) Bounded memory makes a relapse fail.
python3 - "$H" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["oracles"] = ["per_key_order"] * 4000
json.dump(d, open("many_oracles.json", "w"))
d["oracles"] = ["per_key_order"]
d["workload"]["actors"] = d["workload"]["actors"] * 20000
json.dump(d, open("many_actors.json", "w"))
PY
if [ "$asan" != asan ]; then
  expect many_oracles_refused_at_once 2 "many_oracles.json: /oracles: expected a non-empty list of distinct oracle names" -- \
    sh -c "ulimit -v 400000 && exec \"$L\" run many_oracles.json"
  name=many_oracles_says_how_many cases=$((cases + 1))
  grep -q "(at most 16 items), found 4000 items" err || fail "the refusal does not say the limit and the count"
  expect many_actors_refused_at_once 2 "many_actors.json: /workload/actors: expected a list of 1 to 64 actors (at most 64 items), found" -- \
    sh -c "ulimit -v 400000 && exec \"$L\" run many_actors.json"
fi

# --- --jobs past what the system allows: the run goes on with the threads it got ----
# (it was "terminate called without an active exception"). An address-space limit
# below 400 thread stacks of 8 MiB; not under ASan, whose shadow memory needs more.
# No run starts before the threads are (a run under way as they filled the address
# space found no room for its fiber stacks), and the threads past the hardware
# threads end and are joined, so the runs have room: every seed holds.
if [ "$asan" != asan ]; then
  name=jobs_past_thread_limit cases=$((cases + 1))
  (ulimit -s 8192 && ulimit -v 3000000 && exec "$L" explore "$H" --seeds 300 --jobs 400) >out 2>err
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "lockstep: --jobs 400: the system refused threads past [0-9]* (.*); running on [0-9]*, leaving memory for the runs" err ||
    ! grep -q "all 300 seeds held" out; then
    fail "exit $rc; expected the run to go on with the threads it got, and say so: $(head -c 300 err) $(grep -m2 FAILED out)"
  fi
fi

echo "$cases cases, $failures failed"
[ "$failures" -eq 0 ]
