#!/usr/bin/env bash
# Goal: the sampling strategies pos and surw through the binary. Each finds a
# planted bug, writes a record that `lockstep replay` reproduces, and `run`
# with the printed seed and strategy gives the run explore saw. surw first
# profiles a random run of the same seed (the summary counts those runs), and
# weighs its choices by it: a surw run is not the random run of its seed.
#
#   strategies_cli.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

canary="$S/canaries/lanes_send_after_unlock.json"
held="$S/lanes_cancel_lane_2cores.json"

hash_of() { sed -n 's/.*trace_hash=\([0-9a-f]*\).*/\1/p' out | head -1; }

for strategy in pos surw; do
  expect "${strategy}_finds_the_canary" 1 "FAILED oracle: oracle 'exactly_once'" -- \
    "$L" explore "$canary" --strategy "$strategy" --seeds 200 --record-dir "recs-$strategy"
  record=$(sed -n 's/^failure record: //p' out | head -1)
  seed=$(sed -n 's/^failing seed \([0-9]*\):.*/\1/p; s/^  failing seed \([0-9]*\):.*/\1/p' out | head -1)
  name="${strategy}_names_a_record" cases=$((cases + 1))
  [ -f "$record" ] || fail "no record written: $(cat out)"
  expect "${strategy}_record_replays" 1 "reproduced: the same trace hash" -- "$L" replay "$record"
  replayed=$(hash_of)
  expect "${strategy}_run_reproduces" 1 "strategy $strategy" -- "$L" run "$canary" --strategy "$strategy" --seed "$seed"
  name="${strategy}_run_is_the_explored_run" cases=$((cases + 1))
  [ "$(hash_of)" = "$replayed" ] || fail "run --seed $seed gave $(hash_of), the record $replayed"
done

expect surw_counts_its_profiles 0 "(+20 random runs that profiled surw's fibers)" -- \
  "$L" explore "$held" --strategy surw --seeds 20

# A surw run is weighed by its profile: not the random run of the same seed.
differ=0
for seed in 1 2 3 4 5; do
  expect "random_seed_$seed" 0 "trace_hash=" -- "$L" run "$held" --strategy random --seed "$seed"
  random=$(hash_of)
  expect "surw_seed_$seed" 0 "trace_hash=" -- "$L" run "$held" --strategy surw --seed "$seed"
  [ "$(hash_of)" != "$random" ] && differ=$((differ + 1))
done
name=surw_is_not_random cases=$((cases + 1))
[ "$differ" -ge 4 ] || fail "only $differ of 5 surw runs differ from the random run of their seed"

# The portfolio: seed s under random, pct, pos or surw by (s - 1) mod 4, each seed's
# record naming its own strategy (so it replays and reruns as that one).
expect portfolio_run_says_the_seeds_strategy 0 "strategy=portfolio (pos for this seed)" -- \
  "$L" run "$held" --strategy portfolio --seed 7
expect portfolio_counts_sizing_runs 0 "20 runs (+10 random runs that sized pct's k or profiled surw's fibers)" -- \
  "$L" explore "$held" --strategy portfolio --seeds 20
expect portfolio_finds_the_canary 1 "FAILED oracle: oracle 'exactly_once'" -- \
  "$L" explore "$canary" --strategy portfolio --seeds 1..100 --stop-after 0 --record-dir recs-portfolio
name=portfolio_records_name_each_strategy cases=$((cases + 1))
kinds=$(ls recs-portfolio | sed 's/.*-\([a-z]*\)-[0-9]*\.json$/\1/' | sort -u | wc -l)
[ "$kinds" -ge 3 ] || fail "the failures came from $kinds strategies: $(ls recs-portfolio)"
for record in recs-portfolio/*.json; do
  seed=$(sed -n 's/.*"seed": \([0-9]*\).*/\1/p' "$record" | head -1)
  want=$(echo "random pct pos surw" | cut -d' ' -f$(((seed + 3) % 4 + 1)))
  grep -q "\"strategy\": \"$want\"" "$record" || fail "$record (seed $seed) does not name $want"
  "$L" replay "$record" >replay.out 2>&1
  grep -q "reproduced: the same trace hash" replay.out || fail "$record does not replay: $(tail -c 300 replay.out)"
done
expect portfolio_refused_by_exact_files 2 "found strategy portfolio" -- \
  "$L" run "$S/lanes_capacity_fifo_expect.json" --strategy portfolio

echo "strategies_cli: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
