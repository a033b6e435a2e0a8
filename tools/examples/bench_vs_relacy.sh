#!/usr/bin/env bash
# Per-run cost from the user's side: the three Relacy tests ported to
# LOCKSTEP_TEST_CASE (tools/examples/test_relacy_ports.cpp, fixed variants),
# run from the example's own test binary built against the installed
# package, beside Relacy's harness and lockstep's sim::run harness from the
# Relacy comparison (../shared/peers/relacy/), in one run, round by round.
#
#   tools/examples/bench_vs_relacy.sh RELEASE_BUILD [ROUNDS] [RUNS]
#
#   RELEASE_BUILD  a Release build of lockstep with lockstep_sim, lockstep_threads,
#                  lockstep_testing built (installed from here into a temp prefix)
#   ROUNDS         alternating rounds (default 5); RUNS executions a measurement (default 200000)
#   RELACY_PEER    the comparison's folder (default ../shared/peers/relacy next to the
#                  checkout); it is copied to a temporary folder and built there
#
# Wall clock: executions/s of each (median over rounds; the test binary's
# start-up, measured with one run, is subtracted). Callgrind: instructions per
# execution, (I(2n) - I(n)) / n with n = 2000, exactly repeatable.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: bench_vs_relacy.sh RELEASE_BUILD [ROUNDS] [RUNS]}" && pwd)
rounds=${2:-5}
runs=${3:-200000}
peer_src=${RELACY_PEER:-$root/../shared/peers/relacy}
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-bench-library.XXXXXX")
trap 'rm -rf "$work"' EXIT
FLAGS=(-std=c++20 -O2 -DNDEBUG -Wall -Wextra)

echo "building: install, example (Release), relacy_peer, lockstep_peer" >&2
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$root/tools/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$work/example" -j2 --target example_tests > /dev/null
cp -r "$peer_src" "$work/peer"
g++ "${FLAGS[@]}" -isystem "$work/peer/relacy" -I"$work/peer/src" "$work/peer/src/relacy_peer.cpp" -o "$work/relacy_peer"
g++ "${FLAGS[@]}" -I"$work/prefix/include/lockstep" -I"$work/peer/src" "$work/peer/src/lockstep_peer.cpp" \
  "$work/prefix/lib/liblockstep_sim.a" -lboost_context -o "$work/lockstep_peer"

test_of() {  # a, b, c: the runtime API's port; a-std, b-std, c-std: sim_std's (test_relacy_std.cpp)
  case $1 in
    a) echo relacy_lost_update ;; b) echo relacy_single_flight ;; c) echo relacy_three_windows ;;
    a-std) echo relacy_std_lost_update ;; b-std) echo relacy_std_single_flight ;; c-std) echo relacy_std_three_windows ;;
  esac
}
# One measurement: the command's executions/s.
relacy() { "$work/relacy_peer" --bug "$1" --variant fixed --mode throughput --iters "$2" --repeat 1 --sched random; }
peer() { "$work/lockstep_peer" --bug "$1" --variant fixed --mode throughput --iters "$2" --repeat 1 --strategy random; }
library() {  # bug, runs, strategy: the test binary, as a user runs it
  LOCKSTEP_RUNS=$2 LOCKSTEP_STRATEGIES=$3 LOCKSTEP_RECORD_DIR="$work/records" \
    "$work/example/example_tests" --run_test="$(test_of "$1")" > /dev/null
}
now_ns() { date +%s%N; }
rate_of_summary() { sed -n 's/.*median_iter_per_s=\([0-9]*\).*/\1/p'; }
library_rate() {  # bug, strategy
  local t0 t1 t2
  t0=$(now_ns); library "$1" 1 "$2"; t1=$(now_ns); library "$1" "$runs" "$2"; t2=$(now_ns)
  python3 -c "print(round(($runs - 1) / ((($t2 - $t1) - ($t1 - $t0)) / 1e9)))"
}
median() { python3 -c "import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:])))" "$@"; }
spread() {  # ratios: median (min-max)
  python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})')" "$@"
}

declare -A rates ratios
ratio() { python3 -c "print($1 / $2)"; }
for ((r = 0; r < rounds; r++)); do
  for bug in a b c; do
    # Relacy and the two library tests paired within the round, their order
    # alternating from round to round; each round's ratios are kept.
    if ((r % 2 == 0)); then
      rel=$(relacy "$bug" "$runs" | rate_of_summary); lib=$(library_rate "$bug" random); std=$(library_rate "$bug-std" random)
    else
      std=$(library_rate "$bug-std" random); lib=$(library_rate "$bug" random); rel=$(relacy "$bug" "$runs" | rate_of_summary)
    fi
    rates[$bug,relacy]+=" $rel"; rates[$bug,random]+=" $lib"; rates[$bug,std]+=" $std"
    ratios[$bug,random]+=" $(ratio "$rel" "$lib")"; ratios[$bug,std]+=" $(ratio "$rel" "$std")"
    rates[$bug,peer]+=" $(peer "$bug" "$runs" | rate_of_summary)"
    rates[$bug,pct]+=" $(library_rate "$bug" pct)"
  done
  echo "round $((r + 1))/$rounds done" >&2
done

# Instructions per execution under callgrind (exact: the same count every
# time): instructions of 2n executions minus those of n, over n, so start-up cancels out.
instr() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
per_run() {  # tool, bug[, strategy]
  export LOCKSTEP_STRATEGIES=${3:-random} LOCKSTEP_RECORD_DIR=$work/records
  local n=2000 one two
  # The library's budget is in the environment (valgrind does not follow env's exec).
  one=$(LOCKSTEP_RUNS=$n instr $(command_of "$1" "$2" "$n" "${3:-random}"))
  two=$(LOCKSTEP_RUNS=$((2 * n)) instr $(command_of "$1" "$2" $((2 * n)) "${3:-random}"))
  echo $(((two - one) / n))
}
command_of() {  # tool, bug, runs, strategy: one command line (no spaces inside arguments)
  case $1 in
    relacy) echo "$work/relacy_peer --bug $2 --variant fixed --mode throughput --repeat 1 --sched random --iters $3" ;;
    peer) echo "$work/lockstep_peer --bug $2 --variant fixed --mode throughput --repeat 1 --strategy random --iters $3" ;;
    library) echo "$work/example/example_tests --run_test=$(test_of "$2")" ;;
  esac
}

echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ); load at end: $(cut -d' ' -f1-3 /proc/loadavg); $(g++ --version | head -1); lockstep $(git -C "$root" rev-parse --short HEAD); relacy $(cat "$peer_src/relacy.commit" | cut -c1-12)"
echo
echo "| test | Relacy random | lockstep sim::run random (peer harness) | LOCKSTEP_TEST_CASE random | LOCKSTEP_TEST_CASE random, sim_std | LOCKSTEP_TEST_CASE pct (k probed per seed) | Relacy ÷ LOCKSTEP_TEST_CASE random, per round | Relacy ÷ sim_std, per round |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for bug in a b c; do
  # shellcheck disable=SC2086
  rr=$(median ${rates[$bug,relacy]}); rp=$(median ${rates[$bug,peer]}); rl=$(median ${rates[$bug,random]}); rs=$(median ${rates[$bug,std]}); rc=$(median ${rates[$bug,pct]})
  # shellcheck disable=SC2086
  echo "| ($bug) $(test_of "$bug") | $rr/s | $rp/s | $rl/s | $rs/s | $rc/s | $(spread ${ratios[$bug,random]}) | $(spread ${ratios[$bug,std]}) |"
done
echo
echo "Ratios below 1: lockstep's test ran more executions a second than Relacy's in that round (median (min-max) over $rounds rounds)."
echo
echo "Instructions per execution (callgrind, fixed variants):"
echo
echo "| test | Relacy random | lockstep sim::run random | LOCKSTEP_TEST_CASE random | LOCKSTEP_TEST_CASE random, sim_std | LOCKSTEP_TEST_CASE pct |"
echo "|---|---:|---:|---:|---:|---:|"
for bug in a b c; do
  echo "| ($bug) $(test_of "$bug") | $(per_run relacy "$bug") | $(per_run peer "$bug") | $(per_run library "$bug" random) | $(per_run library "$bug-std" random) | $(per_run library "$bug" pct) |"
done
