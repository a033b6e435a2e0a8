#!/usr/bin/env bash
# Wall clock of two commands, paired: run in turn (A, B, A, B, ...) after
# one warm-up each, each whole process timed, and the ratio A/B kept pair by
# pair; prints the median (min-max) of each side and of the ratios. The
# commands are split on spaces (no quoting inside them).
#
#   tools/examples/bench_pair.sh 'A_COMMAND' 'B_COMMAND' [PAIRS]   (default 20 pairs)
#
# e.g. an example test against Relacy's harness (results/sim_std.md):
#   LOCKSTEP_STRATEGIES=random LOCKSTEP_RUNS=1000000 tools/examples/bench_pair.sh \
#     '/tmp/cex/example_tests --run_test=relacy_std_single_flight' \
#     'relacy_peer --bug b --variant fixed --mode throughput --iters 1000000 --repeat 1 --sched random' 20
set -euo pipefail
a_cmd=${1:?usage: bench_pair.sh A_COMMAND B_COMMAND [PAIRS]}
b_cmd=${2:?usage: bench_pair.sh A_COMMAND B_COMMAND [PAIRS]}
pairs=${3:-20}
python3 - "$a_cmd" "$b_cmd" "$pairs" <<'PY'
import statistics, subprocess, sys, time
a_cmd, b_cmd, pairs = sys.argv[1].split(), sys.argv[2].split(), int(sys.argv[3])
def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0
timed(a_cmd); timed(b_cmd)  # warm-up, not counted
a, b = [], []
for _ in range(pairs):
    a.append(timed(a_cmd)); b.append(timed(b_cmd))
r = [x / y for x, y in zip(a, b)]
f = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"
print(f"A: {f(a)} s; B: {f(b)} s; A/B wall, {pairs} pairs: {f(r)}")
PY
