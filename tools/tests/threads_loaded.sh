#!/usr/bin/env bash
# Goal: a threads run settles within its liveness budget on a loaded machine.
# Two CPU hogs run beside the runtime's two pinned threads while a composed
# file (many short hand-offs between the cores, lanes reaped after 300 us
# idle, a 200 ms budget) runs five times; each must hold. An idle
# scheduler's spin once yielded its CPU 64 times in a row, and each yield
# could hand the CPU to a hog for the rest of the hog's time slice: the file
# then missed its budget in nearly every run (11 of 15 beside one hog). The
# spin now ends at the first long yield, and the thread sleeps instead.
# Then, beside the same hogs, 160,000 items through a four-slot channel
# between the two cores (test_threads_channels): an idle core there yielded
# at almost every hand-off, losing its CPU to a hog each time, and the run
# did not finish in the minute the hogs ran (0.7 s on a quiet machine). Work
# from a sibling on a CPU of its own no longer yields (about 2 s here).
# ctest runs this alone (RUN_SERIAL): its hogs would slow whatever ran beside.
#
#   threads_loaded.sh LOCKSTEP_BINARY SCENARIOS_DIR TEST_THREADS_CHANNELS
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
channels=$(realpath "$3")
case_timeout=120
source "$here/cli_test.sh" "$@"  # L, S, a temporary working folder, expect

hogs=()
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT  # cli_test.sh's trap removes $tmp
for i in 1 2 3 4 5; do
  expect "threads_loaded_$i" 0 "outcome=ok backend=threads" -- \
    "$L" run "$S/composed_consumer_faults_2cores.json" --backend threads
done
case_timeout=30
expect "threads_loaded_bounded_channel" 0 "No errors detected" -- \
  "$channels" --run_test=bounded_many_producers_on_both_cores_exactly_once_in_order
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
trap 'rm -rf "$tmp"' EXIT

echo "threads_loaded: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
