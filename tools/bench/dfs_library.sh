#!/usr/bin/env bash
# The bounded search over the scenario library: every bundled file and every
# planted bug under scenarios/canaries/, each searched with
# `explore --strategy dfs --delay-bound D` (seed 1), or with `--dpor` when D is
# "dpor", one line per file with its verdict, schedules and wall time; a
# Markdown table on stdout. WALL_BUDGET (like 20s) also stops each file's
# search after that much wall time ("not verified: stopped (time)").
#
#   tools/bench/dfs_library.sh LOCKSTEP_BINARY [DELAY_BOUND|dpor] [MAX_SCHEDULES] [WALL_BUDGET]
set -uo pipefail
L=$1 D=${2:-2} M=${3:-1000000} T=${4:-}
if [ "$D" = dpor ]; then search=(--dpor); else search=(--delay-bound "$D"); fi
[ -n "$T" ] && search+=(--time "$T")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| file | verdict | schedules | deepest path (decisions) | wall |"
echo "|---|---|---|---|---|"
for f in scenarios/*.json scenarios/canaries/*.json; do
  "$L" explore "$f" --strategy dfs "${search[@]}" --max-schedules "$M" --record-dir "$tmp" >"$tmp/out" 2>&1
  rc=$?
  line=$(grep -E '^(verified|not verified|failed at)' "$tmp/out" | head -1)
  [ -z "$line" ] && line=$(grep -E '^(lockstep:|FAILED nondeterminism)' "$tmp/out" | head -1)
  verdict=$(sed -E 's/^(verified|not verified|failed at schedule [0-9]+).*/\1/' <<<"$line")
  if grep -qF "expected exact expectations only under --strategy fifo" "$tmp/out"; then
    verdict="not searched: its /expect holds under fifo only (exit 2)"
  elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    verdict="exit $rc: $verdict"
  fi
  schedules=$(sed -nE 's/.* ([0-9]+) schedules, .*/\1/p' <<<"$line")
  deepest=$(sed -nE 's/.*\(deepest ([0-9]+) decisions.*/\1/p' <<<"$line")
  wall=$(sed -nE 's/.*; ([0-9.]+ s)\)$/\1/p' <<<"$line")
  echo "| \`$f\` | $verdict | $schedules | $deepest | $wall |"
done
