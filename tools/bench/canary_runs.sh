# Sourced by the canary benchmarks (strategies_canaries.sh,
# timer_choices_canaries.sh) with `lockstep`, `cap` and `records` set:
#
#   runs_to_failure FILE STRATEGY FIRST_SEED [EXTRA...]
#       explore FILE from FIRST_SEED until its first failure or `cap` seeds,
#       one job; prints the runs explore counted (cap + 1 when none failed)
#   cell FILE STRATEGY [EXTRA...]
#       runs_to_failure over the 20 base seeds 1, 1000001, ..., 19000001;
#       prints "median (largest)", "> cap" for none

runs_to_failure() {
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

cell() {
  local file=$1 strategy=$2
  shift 2
  local n=()
  for base in $(seq 0 19); do n+=("$(runs_to_failure "$file" "$strategy" $((base * 1000000 + 1)) "$@")"); done
  mapfile -t n < <(printf '%s\n' "${n[@]}" | sort -n)
  local median=$(((n[9] + n[10]) / 2)) max=${n[19]}
  show() { if (($1 > cap)); then echo "> $cap"; else echo "$1"; fi; }
  echo "$(show $median) ($(show $max))"
}
