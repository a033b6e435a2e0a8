#!/usr/bin/env bash
# Goal: `explore --strategy dfs` through the binary. A bounded search ends in
# one of three verdicts, each said as such: "verified" (every schedule within
# the bounds ran and held), "failed at schedule N" (with a record that
# `lockstep replay` reproduces), "not verified: stopped" (a budget, with where
# the search stood). The output is the same bytes on every run and at any
# --jobs (timings aside); flags a search has no use for, and dfs flags
# without dfs, are refused in one line.
#
#   dfs_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

held="$S/lanes_cancel_lane_2cores.json"
canary="$S/canaries/flight_decrement_outside_lock.json"

# The verdicts, minus the wall time each ends with.
verdicts() { sed 's/; [0-9.]* s)$/)/' out; }

expect verified 0 "verified: " -- "$L" explore "$held" --strategy dfs --delay-bound 2
verdicts >first
expect verified_again_jobs_1 0 "verified: " -- "$L" explore "$held" --strategy dfs --delay-bound 2 --jobs 1
verdicts >second
name=same_bytes_any_jobs cases=$((cases + 1))
cmp -s first second || fail "two searches of one tree differ: $(diff first second | head -5)"
# The tree split among threads: the same bytes at any --jobs, for each
# verdict — verified, a failure (its schedule number, record and commands),
# a budget (its count and resume position) — and for a resumed search.
for run in "verified:0:$held --delay-bound 2" "failed:1:$canary --delay-bound 3 --record-dir jobs_recs" \
           "budget:0:$held --preemption-bound 2 --max-schedules 777" \
           "resumed:0:$held --delay-bound 2 --max-schedules 40 --dfs-from 0*3.1"; do
  what=${run%%:*} rest=${run#*:} code=${rest%%:*} args=${rest#*:}
  for jobs in 1 2 3 8; do
    # shellcheck disable=SC2086  # the arguments are words
    expect "split_${what}_jobs_$jobs" "$code" "strategy=dfs" -- "$L" explore $args --strategy dfs --jobs "$jobs"
    verdicts >"split_$jobs"
  done
  for jobs in 2 3 8; do
    name=split_${what}_same_bytes_jobs_$jobs cases=$((cases + 1))
    cmp -s split_1 "split_$jobs" || fail "--jobs $jobs differs from --jobs 1: $(diff split_1 "split_$jobs" | head -6)"
  done
done

name=counts_schedules cases=$((cases + 1))
grep -qE "^verified: [0-9]+ schedules, preemption bound none, delay bound 2, seed 1, no failure" first ||
  fail "the verdict does not count the schedules and name the bounds: $(cat first)"

# A bound of zero delays is the one round-robin schedule.
expect one_schedule_at_delay_zero 0 "verified: 1 schedules" -- \
  "$L" explore "$held" --strategy dfs --delay-bound 0

# A planted bug (a decrement outside its lock) within two delays of round robin.
expect canary_found 1 "failed at schedule " -- \
  "$L" explore "$canary" --strategy dfs --delay-bound 2 --record-dir recs
grep -qF "FAILED oracle: oracle 'cancel_publish'" out || fail "the failure is not the canary's oracle"
record=$(sed -n 's/^failure record: //p' out)
name=record_named_after_the_search cases=$((cases + 1))
[ "$record" = "recs/flight_decrement_outside_lock-dfs-1.json" ] || fail "record at '$record'"
expect canary_replays 1 "reproduced: the same trace hash" -- "$L" replay "$record"
expect canary_shrinks 1 "shrunk record:" -- "$L" shrink "$record" -o shrunk.json

# --max-records 0: the failure is printed with the command that searches to it again, no record.
expect canary_unrecorded 1 "--strategy dfs --first-seed 1" -- \
  "$L" explore "$canary" --strategy dfs --delay-bound 2 --max-records 0 --record-dir none
name=no_record_written cases=$((cases + 1))
[ -z "$(ls -A none 2>/dev/null)" ] || fail "--max-records 0 wrote a record"
grep -qF -- "--delay-bound 2 --max-schedules 0" out || fail "the rerun command does not carry the bounds"

# Budgets: "not verified", with the schedules run and where the search stood.
expect max_schedules 0 "not verified: stopped (--max-schedules 10) after 10 schedules" -- \
  "$L" explore "$held" --strategy dfs --preemption-bound 2 --max-schedules 10
grep -qF -- "--dfs-from 0*" out || fail "no position to resume at"
# Resumed at the printed position, the search runs the rest: the two parts add up to the whole.
expect whole_tree 0 "verified: " -- "$L" explore "$held" --strategy dfs --delay-bound 2 --max-schedules 0
whole=$(sed -nE 's/^verified: ([0-9]+) schedules.*/\1/p' out)
expect cut_tree 0 "resume with: " -- "$L" explore "$held" --strategy dfs --delay-bound 2 --max-schedules 50
resume=$(sed -n 's/^resume with: //p' out)
name=resume_command_carries_the_search cases=$((cases + 1))
case "$resume" in
  *"--strategy dfs --first-seed 1 "*"--preemption-bound none --delay-bound 2 --max-schedules 50 --dfs-from "*) ;;
  *) fail "resume command: $resume" ;;
esac
from=${resume##*--dfs-from }
expect resumed_tree 0 "verified: " -- "$L" explore "$held" --strategy dfs --delay-bound 2 --max-schedules 0 \
  --dfs-from "$from"
rest=$(sed -nE 's/^verified: ([0-9]+) schedules.*/\1/p' out)
name=resume_runs_the_rest cases=$((cases + 1))
[ -n "$whole" ] && [ -n "$rest" ] && [ $((50 + rest)) -eq "$whole" ] ||
  fail "50 + $rest schedules resumed, the whole tree has $whole"
grep -qF "resuming at $from" out || fail "the resumed search does not say where it started"
expect bad_position 2 "--dfs-from 1..2: expected a position a search printed" -- \
  "$L" explore "$held" --strategy dfs --dfs-from 1..2
expect position_without_dfs 2 "--dfs-from: expected only with --strategy dfs" -- "$L" explore "$held" --dfs-from 0
expect time_budget 0 "not verified: stopped (time)" -- \
  "$L" explore "$held" --strategy dfs --preemption-bound none --max-schedules 0 --time 1s

# Refusals: one line, exit 2.
expect runs_refused 2 "--runs: expected no --runs with --strategy dfs" -- \
  "$L" explore "$held" --strategy dfs --runs 5
expect shard_refused 2 "--shard: expected no --shard with --strategy dfs" -- \
  "$L" explore "$held" --strategy dfs --shard 0/2
expect many_seeds_refused 2 "expected one seed with --strategy dfs" -- \
  "$L" explore "$held" --strategy dfs --seeds 1..3
expect one_seed_range 0 "seed=5" -- "$L" explore "$held" --strategy dfs --seeds 5..5 --delay-bound 1
expect bound_without_dfs 2 "--preemption-bound: expected only with --strategy dfs" -- \
  "$L" explore "$held" --preemption-bound 2
expect bad_bound 2 "--delay-bound (or none)" -- "$L" explore "$held" --strategy dfs --delay-bound many
expect run_refuses_dfs 2 "--strategy: dfs not in {random,pct,pos,surw,fifo,portfolio}" -- "$L" run "$held" --strategy dfs
expect check_determinism_refuses_dfs 2 "--strategy: dfs not in {random,pct,pos,surw,fifo,portfolio}" -- \
  "$L" check-determinism "$held" --strategy dfs

# --dpor: partial-order reduction with sleep sets, without bounds. It
# verifies a whole tree the full search takes a million schedules for, finds
# the canary with a record that replays, and its rerun command searches again.
small="$S/lanes_reap_then_reuse.json"
expect dpor_verifies_the_whole_tree 0 "verified: 2740 schedules, no bounds, partial-order reduction, seed 1, no failure" -- \
  "$L" explore "$small" --strategy dfs --dpor
expect dpor_full_search_is_larger 0 "not verified: stopped (--max-schedules 20000) after 20000 schedules, preemption bound none" -- \
  "$L" explore "$small" --strategy dfs --preemption-bound none --max-schedules 20000
expect dpor_finds_the_canary 1 "failed at schedule " -- \
  "$L" explore "$canary" --strategy dfs --dpor --record-dir recs-dpor
grep -qF "FAILED oracle: oracle 'cancel_publish'" out || fail "the failure is not the canary's oracle"
record=$(sed -n 's/^failure record: //p' out)
expect dpor_record_replays 1 "reproduced: the same trace hash" -- "$L" replay "$record"
expect dpor_unrecorded 1 "--preemption-bound none --delay-bound none --dpor --max-schedules 0" -- \
  "$L" explore "$canary" --strategy dfs --dpor --max-records 0
rerun=$(sed -n 's/^ *rerun with: //p' out | head -1)
expect dpor_rerun_finds_it_again 1 "failed at schedule " -- bash -c "$rerun"
expect dpor_budget_cannot_resume 0 "a search with --dpor cannot resume; rerun it without a budget: " -- \
  "$L" explore "$small" --strategy dfs --dpor --max-schedules 10
grep -qF -- "--dpor --max-schedules 0" out || fail "the rerun does not search without a budget: $(tail -1 out)"
expect dpor_refuses_a_bound 2 "--preemption-bound 2: expected none with --dpor" -- \
  "$L" explore "$small" --strategy dfs --dpor --preemption-bound 2
expect dpor_takes_bound_none 0 "verified: 2740 schedules" -- \
  "$L" explore "$small" --strategy dfs --dpor --preemption-bound none --delay-bound none
expect dpor_refuses_a_position 2 "--dfs-from: expected no position with --dpor" -- \
  "$L" explore "$small" --strategy dfs --dpor --dfs-from 0
expect dpor_tries_timer_ties 0 "verified: 5428 schedules, no bounds, partial-order reduction" -- \
  "$L" explore "$small" --strategy dfs --dpor --timer-ties
expect dpor_without_dfs 2 "--dpor: expected only with --strategy dfs" -- "$L" explore "$small" --dpor

echo "dfs_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
