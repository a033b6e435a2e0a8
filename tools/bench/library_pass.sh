#!/bin/sh
# One pass of the whole scenario library, as the main job runs it: the files
# with exact expectations under fifo, the others under random and pct, over
# seeds 1..SEEDS each, every file of a command on one pool of JOBS threads.
# Output discarded; for timing two builds against each other, e.g.
#   farm-bench --vs 'tools/bench/library_pass.sh OLD/tools/lockstep 2' -- tools/bench/library_pass.sh NEW/tools/lockstep 2
#
#   tools/bench/library_pass.sh LOCKSTEP JOBS [SEEDS]
set -eu
L=$(realpath "$1")
jobs=$2
seeds=${3:-300}
cd "$(dirname "$0")/../.."
exact=$(grep -l '"expect"' scenarios/*.json)
sampled=$(grep -L '"expect"' scenarios/*.json)
# shellcheck disable=SC2086 # the file lists are meant to split
"$L" explore $exact --strategy fifo --seeds "1..$seeds" --stop-after 0 --jobs "$jobs" >/dev/null
# shellcheck disable=SC2086
"$L" explore $sampled --strategy random --seeds "1..$seeds" --stop-after 0 --jobs "$jobs" >/dev/null
# shellcheck disable=SC2086
"$L" explore $sampled --strategy pct --seeds "1..$seeds" --stop-after 0 --jobs "$jobs" >/dev/null
