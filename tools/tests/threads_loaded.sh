#!/usr/bin/env bash
# Goal: a threads run settles within its liveness budget on a loaded machine.
# Two CPU hogs run beside the runtime's two pinned threads while a composed
# file (many short hand-offs between the cores, lanes reaped after 300 us
# idle, a 200 ms budget) runs five times; each must hold. An idle
# scheduler's spin once yielded its CPU 64 times in a row, and each yield
# could hand the CPU to a hog for the rest of the hog's time slice: the file
# then missed its budget in nearly every run (11 of 15 beside one hog). The
# spin now ends at the first long yield, and the thread sleeps instead.
# ctest runs this alone (RUN_SERIAL): its hogs would slow whatever ran beside.
#
#   threads_loaded.sh LOCKSTEP_BINARY SCENARIOS_DIR
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
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
kill "${hogs[@]}" 2>/dev/null
wait "${hogs[@]}" 2>/dev/null
trap 'rm -rf "$tmp"' EXIT

echo "threads_loaded: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
