#!/usr/bin/env bash
# Goal: liveness cannot be dodged. Each case is a hole the landed harness had,
# with a file under tools/tests/data/liveness/ that passed (or hung) there:
#   (a) an item counts as handled when its consumer call returns, not when it
#       begins: two consumer calls that never return fail liveness (exit 3),
#       even with only per_key_order and exactly_once checked;
#   (b) the budget holds whatever the file's ttl and drop steps: items still
#       unhandled when it runs out fail liveness, though no lane reaps and no
#       step drops the router (they used to finish during the drop's wait);
#   (c) the liveness phase ends when its condition holds, not at the next
#       poll: with a 500 ns shard tick and the default 1 s budget the run ends
#       with its last item (its virtual time stays below the old first poll
#       slice of 15.6 ms, and it takes a few hundred steps, not ~31,000);
#   (d) a threads run with no verdict is stopped by its watchdog: a submitter
#       blocked behind a 100 s processor fails liveness (exit 3) naming the
#       phase, the actor and its step, instead of running for minutes.
#
#   liveness_cli.sh LOCKSTEP_BINARY DATA_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S (here the data folder), a temporary working folder, expect

for strategy in random pct; do
  expect "never_returns_$strategy" 3 "consumer call began but had not returned" -- \
    "$L" explore "$S/lanes_consumer_never_returns.json" --strategy "$strategy" --seeds 20 --stop-after 0
  expect "never_returns_all_seeds_$strategy" 3 "20 failures," -- \
    "$L" explore "$S/lanes_consumer_never_returns.json" --strategy "$strategy" --seeds 20 --stop-after 0
  expect "budget_without_ttl_or_drop_$strategy" 3 "admitted items still unhandled" -- \
    "$L" explore "$S/lanes_handled_after_the_budget.json" --strategy "$strategy" --seeds 20
done

expect settles_at_once 0 "outcome=ok" -- "$L" run "$S/composed_settles_at_once.json" --seed 1
steps=$(sed -n 's/^steps=\([0-9]*\) virtual_time_ns=.*/\1/p' out)
vt=$(sed -n 's/.* virtual_time_ns=\([0-9]*\) .*/\1/p' out)
name=settles_at_once_time cases=$((cases + 1))
if [ -z "$vt" ] || [ "$vt" -ge 15625000 ] || [ -z "$steps" ] || [ "$steps" -ge 2000 ]; then
  fail "expected the run to end before the first 15.6 ms poll slice in under 2,000 steps: virtual_time_ns=$vt steps=$steps"
fi

expect watchdog_threads 3 "still running: actor 'submitter' in step 0 (submit)" -- \
  "$L" run "$S/shards_submitter_behind_slow_processor.json" --backend threads --time-scale 1
name=watchdog_names_the_phase cases=$((cases + 1))
grep -qF "phase: workload;" out || fail "the watchdog's verdict does not name the phase"

echo "liveness_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
