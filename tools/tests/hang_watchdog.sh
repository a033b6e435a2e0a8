#!/usr/bin/env bash
# A library test that blocks for real (a std::mutex taken twice on the
# simulating thread) is reported by the watchdog, naming the fiber, its last
# lockstep operation with its line, the seed and a rerun command, and exits 3
# (liveness) instead of hanging; a healthy test is not disturbed; the rerun
# command it prints hangs the same way, on the same seed.
# Usage: hang_watchdog.sh TEST_HANG_BINARY
set -u
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "hang_watchdog: $*"; exit 1; }

LOCKSTEP_HANG_LIMIT=1 timeout 120 "$bin" --run_test=real_mutex_across_a_lockstep_operation > hang.log 2>&1
rc=$?
cat hang.log
[[ $rc == 3 ]] || fail "expected exit 3 (liveness), got $rc"
grep -q "lockstep: real_mutex_across_a_lockstep_operation: fiber #[0-9]* 'thread' ran 1 s of wall-clock time without a lockstep operation" hang.log ||
  fail "the report does not name the test and the fiber"
grep -q "Its last lockstep operation: .* at .*test_hang.cpp:[0-9]*\." hang.log || fail "the report does not give the last operation's line"
seed=$(sed -n 's/.* Seed \([0-9]*\), strategy \([a-z]*\), .*/\1/p' hang.log)
[[ -n $seed ]] || fail "no seed in the report"
cmd=$(sed -n 's/.* Rerun: //p' hang.log)
[[ $cmd == "LOCKSTEP_SEEDS=$seed..$seed "* ]] || fail "no rerun command for seed $seed"

# The printed command, with the watchdog's limit, reports the same seed.
LOCKSTEP_HANG_LIMIT=1 timeout 120 sh -c "$cmd" > rerun.log 2>&1
rc=$?
[[ $rc == 3 ]] || { cat rerun.log; fail "the rerun command exited $rc, not 3"; }
grep -q " Seed $seed, " rerun.log || { cat rerun.log; fail "the rerun did not hang on seed $seed"; }

# Settings that change a seed's decisions are in the rerun command too.
LOCKSTEP_HANG_LIMIT=1 LOCKSTEP_TIMER_TIES=1 LOCKSTEP_TIMER_JITTER=7 LOCKSTEP_SEQ_CST_ONLY=1 timeout 120 "$bin" \
  --run_test=real_mutex_across_a_lockstep_operation > timers.log 2>&1
rc=$?
[[ $rc == 3 ]] || { cat timers.log; fail "with timer choices: expected exit 3, got $rc"; }
grep -q " Rerun: LOCKSTEP_SEEDS=[0-9.]* LOCKSTEP_STRATEGIES=[a-z]* LOCKSTEP_SEQ_CST_ONLY=1 LOCKSTEP_TIMER_TIES=1 LOCKSTEP_TIMER_JITTER=7 " timers.log ||
  { cat timers.log; fail "the rerun command does not carry the settings"; }

LOCKSTEP_HANG_LIMIT=1 timeout 120 "$bin" --run_test=healthy > healthy.log 2>&1 || { cat healthy.log; fail "the healthy test failed"; }
LOCKSTEP_HANG_LIMIT=x "$bin" --run_test=healthy > bad.log 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q "LOCKSTEP_HANG_LIMIT" bad.log || { cat bad.log; fail "a bad LOCKSTEP_HANG_LIMIT was not refused with exit 2"; }
echo "hang_watchdog: a real blocking call is reported with its fiber, line and seed, exit 3; the rerun reproduces it"
