#!/usr/bin/env bash
# Wall clock of one example test against another build's, paired: the two
# test binaries run in turn (A, B, A, B, ...), each whole process timed, and
# the ratio A/B kept pair by pair (median (min-max) printed). Used to compare
# this tree's sim_std ports with the code of an earlier commit (results/sim_std.md).
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
python3 - "$a_bin" "$a_test" "$b_bin" "$b_test" "$pairs" <<'PY'
import statistics, subprocess, sys, time
a_bin, a_test, b_bin, b_test, pairs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def timed(binary, test):
    t0 = time.perf_counter()
    subprocess.run([binary, f"--run_test={test}"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0
timed(a_bin, a_test); timed(b_bin, b_test)  # warm-up, not counted
a, b = [], []
for _ in range(pairs):
    a.append(timed(a_bin, a_test)); b.append(timed(b_bin, b_test))
r = [x / y for x, y in zip(a, b)]
f = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"
print(f"A {a_test}: {f(a)} s; B {b_test}: {f(b)} s; A/B wall, {pairs} pairs: {f(r)}")
PY
