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

runs_to_failure() {  # FILE STRATEGY FIRST_SEED [EXTRA...]
  local file=$1 strategy=$2 first=$3
  shift 3
  local out line
  out=$("$lockstep" explore "$file" --strategy "$strategy" --first-seed "$first" --seeds "$cap" --jobs 1 \
    --record-dir "$records" "$@" 2>&1 || true)
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
