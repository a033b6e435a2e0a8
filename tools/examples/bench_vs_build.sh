#!/usr/bin/env bash
# Wall clock of one example test against another build's, paired
# (bench_pair.sh: A, B, A, B, ..., the ratio A/B pair by pair, median
# (min-max)). Used to compare this tree's sim_std ports with the code of an
# earlier commit (results/sim_std.md).
#
#   tools/examples/bench_vs_build.sh A_BINARY A_TEST B_BINARY B_TEST [PAIRS] [RUNS]
#
#   A_BINARY, B_BINARY  example_tests binaries (tools/examples built against each install)
#   A_TEST, B_TEST      Boost.Test names (relacy_std_lost_update, relacy_lost_update, ...)
#   PAIRS               default 20; RUNS executions a process (LOCKSTEP_RUNS), default 1000000
set -euo pipefail
a_bin=${1:?usage: bench_vs_build.sh A_BINARY A_TEST B_BINARY B_TEST [PAIRS] [RUNS]}
a_test=${2:?} b_bin=${3:?} b_test=${4:?}
pairs=${5:-20}
runs=${6:-1000000}
records=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-bench-build.XXXXXX")
trap 'rm -rf "$records"' EXIT
export LOCKSTEP_STRATEGIES=random LOCKSTEP_RUNS="$runs" LOCKSTEP_RECORD_DIR="$records"
echo "A $a_test, B $b_test:"
"$(dirname "$0")/bench_pair.sh" "$a_bin --run_test=$a_test" "$b_bin --run_test=$b_test" "$pairs"
