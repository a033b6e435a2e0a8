#!/usr/bin/env bash
# Executions to the first failure on the planted-bug scenario files
# (scenarios/canaries/), per strategy: the median and the largest over 20 base
# seeds (1, 1000001, ..., 19000001), each explored until its first failure or
# CAP seeds ("> CAP": none). For results/strategies.md.
#
#   tools/bench/strategies_canaries.sh [LOCKSTEP] [CAP] > table.md
#
# Runs are counted as explore counts them: pct's and surw's sizing run per
# seed (a random run that measures k, or the profile) is not among them, so
# each of their runs costs two executions; the column "pct, k = 1000" gives k
# instead, so each seed is one execution.
set -euo pipefail
lockstep=${1:-build/tools/lockstep}
cap=${2:-10000}
records=$(mktemp -d)
trap 'rm -rf "$records"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/canary_runs.sh"  # runs_to_failure, cell

echo "| canary | random | pct | pos | surw | pct, k = 1000 |"
echo "|---|---:|---:|---:|---:|---:|"
for f in scenarios/canaries/*.json; do
  echo "| $(basename "$f" .json) | $(cell "$f" random) | $(cell "$f" pct) | $(cell "$f" pos) | $(cell "$f" surw) | $(cell "$f" pct --pct-steps 1000) |"
done
