#!/usr/bin/env bash
# results/selfcheck.md: `lockstep selfcheck` (a selfcheck build: the planted
# bugs compiled in) over every planted bug, with the command and the machine.
#
#   selfcheck_table.sh BUILD OUT.md [BUDGET] [JOBS]
set -uo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
budget=${3:-60s}
jobs=${4:-2}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
start=$(date +%s)
"$build/tools/lockstep" selfcheck --budget "$budget" --jobs "$jobs" >"$tmp" 2>&1
rc=$?
took=$(($(date +%s) - start))
{
  echo "# lockstep selfcheck: every planted bug, caught or not"
  echo
  echo "Written by \`tools/bench/selfcheck_table.sh $1 $2 $budget $jobs\` on $(date -u +%Y-%m-%d), $(nproc) cores,"
  echo "which runs \`lockstep selfcheck --budget $budget --jobs $jobs\` in a Release build configured with"
  echo "\`-DLOCKSTEP_SELFCHECK=ON\` (exit $rc, ${took} s in all)."
  echo
  echo "Each planted bug (\`engine/plant.hpp\`: a \`LOCKSTEP_PLANT\` switch in the real engine) is searched for three"
  echo "ways, each with the budget and each stopped at its first catch: the bundled library with the bug planted"
  echo "(seeds 1, 2, ... over every file holding its component, random and pct alternating), \`--generate\` (the"
  echo "component's generated scenarios, seeds 1, 2, ...), and a plain stress test: the same files on the real"
  echo "pinned-thread backend (\`run --backend threads\`, one process per run). \"s\" is wall-clock seconds to the"
  echo "first catch (or the budget spent); \"first catch shrunk\" is the sizes \`lockstep shrink\` (500 runs) leaves."
  echo
  sed -n '/^| planted bug/,$p' "$tmp"
  echo
  echo "The planted bugs are every component's: the shard scheduler's (router, scheduler, reactor), the lane"
  echo "router's and the single-flight table's, each a switch in the real engine. The two lane consumer canaries"
  echo "(\`scenarios/canaries/lanes_consumer_*.json\`) break the scenario's consumer wrapper, not the engine, and"
  echo "are not planted bugs."
} >"$out"
echo "wrote $out (selfcheck exit $rc)"
exit $rc
