#!/usr/bin/env bash
# Executions to the first failure on the planted-bug scenario files
# (scenarios/canaries/), timers as they were beside timers as choices
# (--timer-ties --timer-jitter J), under random and pct: the median and the
# largest over 20 base seeds (1, 1000001, ..., 19000001), each explored until
# its first failure or CAP seeds ("> CAP": none). Only the canaries where some
# column differs are printed. For results/strategies.md.
#
#   tools/bench/timer_choices_canaries.sh [LOCKSTEP] [CAP] [J] > table.md
set -euo pipefail
lockstep=${1:-build/tools/lockstep}
cap=${2:-2000}
jitter=${3:-100}
records=$(mktemp -d)
trap 'rm -rf "$records"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/canary_runs.sh"  # runs_to_failure, cell

with=(--timer-ties --timer-jitter "$jitter")
echo "| canary | random | random, timers as choices | pct | pct, timers as choices |"
echo "|---|---:|---:|---:|---:|"
same=0
for f in scenarios/canaries/*.json; do
  r0=$(cell "$f" random) r1=$(cell "$f" random "${with[@]}") p0=$(cell "$f" pct) p1=$(cell "$f" pct "${with[@]}")
  if [[ $r0 == "$r1" && $p0 == "$p1" ]]; then
    same=$((same + 1))
  else
    echo "| $(basename "$f" .json) | $r0 | $r1 | $p0 | $p1 |"
  fi
done
echo
echo "The other $same canaries: the same figures in all four columns."
