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

runs_to_failure() {  # FILE STRATEGY FIRST_SEED [EXTRA...]
  local file=$1 strategy=$2 first=$3
  shift 3
  local out
  out=$("$lockstep" explore "$file" --strategy "$strategy" --first-seed "$first" --seeds "$cap" --jobs 1 \
    --record-dir "$records" "$@" 2>&1 || true)
  local line
  line=$(grep '^summary:' <<<"$out" | head -1)
  local pattern=': ([0-9]+) runs( \(\+[0-9]+ random runs that [^)]*\))?, ([0-9]+) failures'
  if [[ $line =~ $pattern ]]; then
    if [[ ${BASH_REMATCH[3]} == 0 ]]; then echo $((cap + 1)); else echo "${BASH_REMATCH[1]}"; fi
  else
    echo "error: no summary for $file $strategy $first: $out" >&2
    exit 1
  fi
}

cell() {  # FILE STRATEGY [EXTRA...]
  local file=$1 strategy=$2
  shift 2
  local n=()
  for base in $(seq 0 19); do n+=("$(runs_to_failure "$file" "$strategy" $((base * 1000000 + 1)) "$@")"); done
  mapfile -t n < <(printf '%s\n' "${n[@]}" | sort -n)
  local median=$(((n[9] + n[10]) / 2)) max=${n[19]}
  show() { if (($1 > cap)); then echo "> $cap"; else echo "$1"; fi; }
  echo "$(show $median) ($(show $max))"
}

echo "| canary | random | pct | pos | surw | pct, k = 1000 |"
echo "|---|---:|---:|---:|---:|---:|"
for f in scenarios/canaries/*.json; do
  echo "| $(basename "$f" .json) | $(cell "$f" random) | $(cell "$f" pct) | $(cell "$f" pos) | $(cell "$f" surw) | $(cell "$f" pct --pct-steps 1000) |"
done
