#!/usr/bin/env bash
# Runs the benchmarks and writes results/: live_fibers.md (memory and mappings
# per live fiber), bench_sim_step.md (the sim step as
# a ratio to the raw Boost.Context round trip measured in the same run, pinned
# to one CPU, medians of 5; and callgrind instructions per step) and
# explore.md (lockstep explore runs/s per scenario at --jobs 1 and 2; tools/bench/explore_table.py).
#
#   tools/bench/run.sh [BUILD_DIR [PARTS]]   PARTS: any of step explore fibers (default all three)
set -euo pipefail
build=${1:-build-release}
parts=${2:-step explore fibers}
want() { [[ " $parts " == *" $1 "* ]]; }
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if want step; then
out=results/bench_sim_step.md
json=$(mktemp)
trap 'rm -f "$json"' EXIT
cmd="taskset -c 0 $build/tools/bench_sim_step --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_min_time=0.5 --benchmark_format=json"
$cmd >"$json"
python3 - "$json" "$cmd" >"$out" <<'PY'
import json, sys, datetime, platform
data = json.load(open(sys.argv[1]))
cmd = sys.argv[2]
med = {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
raw = med["BM_raw_context_round_trip"]["cpu_time"]
ring_b = med.get("BM_raw_context_ring/contexts:1024")
ring = ring_b["cpu_time"] if ring_b else None
rand_b = med.get("BM_raw_context_random_ring/contexts:1024")
rand = rand_b["cpu_time"] if rand_b else None
names = {0: "off", 1: "decision list", 2: "decision list + trace hashed", 3: "decision list + trace kept"}
print("# Simulator scheduling step vs a raw Boost.Context round trip\n")
print(f"Measured {data['context']['date']} on {data['context']['num_cpus']} CPUs "
      f"({platform.machine()}), one process, pinned to CPU 0, medians of 5 repetitions.\n")
print("Command (from the repository root, after `tools/dev bench` built `build-release`):\n")
print("```\n" + cmd + "\n```\n")
print(f"Raw Boost.Context `fiber` resume round trip (two switches): **{raw:.1f} ns**.\n")
if ring:
    print(f"A raw round trip over a ring of 1,024 Boost.Context fibers on the simulator's pooled stacks, each")
    print(f"resumed in turn and touching its stack as a simulator fiber does: **{ring:.1f} ns**. Two contexts")
    print("stay in L1; 1,024 stacks cannot.\n")
if rand:
    print("The same ring resumed in a seeded random order, each fiber reading and writing its 64-byte record")
    print(f"and one cache line of its frame, as a sim fiber's yield loop does: **{rand:.1f} ns**. No scheduler")
    print("logic: the cost of bringing one fiber's record, saved registers and frame line into L1 each step.\n")
print("A step: a fiber yields, picks the next runnable fiber with the seeded `random` strategy")
print("(the scheduler's decision, made on the yielding fiber's stack) and switches to it directly:")
print("one switch, or none when it picks itself.\n")
print("| fibers | recording | ns per step | × raw round trip | × ring of 1,024 | × random ring of 1,024 |")
print("|---:|---|---:|---:|---:|---:|")
for name, b in med.items():
    if not name.startswith("BM_sim_step"): continue
    parts = dict(p.split(":") for p in name.split("/")[1:])
    ns = b["ns_per_step"] * 1e9
    vs_ring = f"{ns/ring:.2f}" if ring and parts['fibers'] == "1024" else "—"
    vs_rand = f"{ns/rand:.2f}" if rand and parts['fibers'] == "1024" else "—"
    print(f"| {parts['fibers']} | {names[int(parts['recording'])]} | {ns:.1f} | {ns/raw:.2f} | {vs_ring} | {vs_rand} |")
print("\nTargets: a step with recording off at most 3× the raw round trip (issue 2); at 1,024 fibers, within 2× of it (issue 9).")
PY

# Instruction counts: exactly repeatable, so a noise-free figure for A/B work.
if command -v valgrind >/dev/null; then
  ir() {  # fibers yields -> total instructions
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/tools/sim_step_fixed" "$1" "$2" 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  {
    echo
    echo "## Instructions per step (callgrind)"
    echo
    echo "\`valgrind --tool=callgrind $build/tools/sim_step_fixed FIBERS YIELDS\` at two YIELDS; the difference"
    echo "divided by the extra steps (FIBERS × ΔYIELDS). shared/peers/limits counts 95 instructions for a bare"
    echo "seeded pick-and-resume loop (no executor) on this kind of machine."
    echo
    echo "| fibers | instructions per step |"
    echo "|---:|---:|"
    for n in 2 64 1024; do
      lo=$(ir "$n" 2000); hi=$(ir "$n" 4000)
      echo "| $n | $(python3 -c "print(f'{($hi - $lo) / ($n * 2000):.1f}')") |"
    done
  } >>"$out"
fi
cat "$out"
fi

# Exploration throughput: explore's runs/s for every bundled scenario at
# --jobs 1 and --jobs 2, and the step's instructions with and without the
# hashed trace (results/explore.md).
if want explore; then tools/bench/explore_table.py "$build"; fi

# Live fibers: how many one simulation holds at once, and their memory.
want fibers || exit 0
lf=results/live_fibers.md
{
  echo "# Live fibers in one simulation: memory and mappings"
  echo
  echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) by \`tools/bench/run.sh $build\` (Release build), one process each:"
  echo
  echo '```'
  echo "$build/tools/live_fibers N"
  echo '```'
  echo
  echo "N fibers are spawned on one simulated core and all block on one \`notify\` at once; then all are"
  echo "woken and joined. Stacks are 256 KiB of reserved address space each; RSS counts only the pages"
  echo "fibers touch. *Mappings* is the line count of /proc/self/maps while all N are alive: the kernel"
  echo "caps it with vm.max_map_count ($(cat /proc/sys/vm/max_map_count) here). Before slabs, every stack was a mapping plus an"
  echo "mprotect'ed guard page (two mappings), and a run died near 32,745 live fibers."
  echo
  echo "| fibers | peak RSS growth | per fiber | mappings while alive | wall time |"
  echo "|---:|---:|---:|---:|---:|"
  for n in 1000 10000 100000 200000; do "$build/tools/live_fibers" "$n"; done
} >"$lf"
cat "$lf"
