#!/usr/bin/env bash
# The components on the pinned-thread backend against the seeds' own Rust code
# on tokio, in one session: `rounds` rounds (default 3), each running
# lockstep's threads_bench and then the peer's run.sh
# (../shared/peers/rust-seeds, copied to /tmp first so its build never writes
# into the shared folder), both with 5 timed runs per figure after a warm-up.
# Writes results/threads.md (the table: medians over every sample of every
# round, the ratio, each round's median) and results/threads_raw.jsonl (every
# line both printed, tagged with side and round).
#
#   tools/bench/threads_vs_tokio.sh [BUILD_DIR=build-release] [ROUNDS=3]
#
# BUILD_DIR must hold tools/threads_bench (configure with -DLOCKSTEP_BENCH=ON,
# Release). To compare builds of lockstep in the same session (before/after
# a change), name them: LOCKSTEP_BENCHES="before=/tmp/a after=/tmp/b"; each
# runs in every round, in that order, before the peer, and gets a column. The peer needs cargo and Debian's librust-*-dev crate sources
# (its run.sh installs them when run as root). On a machine shared with other
# work, the peer's own quiet-machine wait and rerun-on-contamination are
# turned off (PEER_QUIET_WAIT_S=0, PEER_MAX_FOREIGN=1.0) so both sides are
# sampled the same way: neither discards a run; both report the share of the
# CPU other processes used while they were timed.
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
peer_src=${PEER_DIR:-$root/../shared/peers/rust-seeds}
[ -d "$peer_src" ] || peer_src=/work/shared/peers/rust-seeds
benches=${LOCKSTEP_BENCHES:-lockstep=$build/tools/threads_bench}
for b in $benches; do
  [ -x "${b#*=}" ] || { echo "threads_vs_tokio: ${b#*=} not built (cmake -DLOCKSTEP_BENCH=ON, target threads_bench)" >&2; exit 2; }
done

peer=/tmp/lockstep-threads-vs-tokio-peer
rm -rf "$peer"
cp -r "$peer_src" "$peer"
chmod -R u+w "$peer"
# run.sh runs ./target/release/bench: keep the build there, through a link to
# a directory that outlives the copy (no rebuild in the next session).
mkdir -p /tmp/lockstep-threads-vs-tokio-target
rm -rf "$peer/target"
ln -s /tmp/lockstep-threads-vs-tokio-target "$peer/target"
export CARGO_TARGET_DIR="$peer/target"
export PEER_RUNS=${PEER_RUNS:-5} PEER_QUIET_WAIT_S=${PEER_QUIET_WAIT_S:-0} PEER_MAX_FOREIGN=${PEER_MAX_FOREIGN:-1.0}

raw=results/threads_raw.jsonl
log=$(mktemp)
trap 'rm -f "$log"' EXIT
: >"$raw"
started=$(date -u +%Y-%m-%dT%H:%MZ)
load_start=$(cat /proc/loadavg)
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- engine tools || echo "+uncommitted")
for r in $(seq 1 "$rounds"); do
  for b in $benches; do
    echo "== round $r/$rounds: ${b%%=*}: ${b#*=} ==" >&2
    "${b#*=}" --runs "$PEER_RUNS" | sed "s/^{/{\"side\":\"${b%%=*}\",\"round\":$r,/" >>"$raw"
  done
  echo "== round $r/$rounds: tokio peer (run.sh) ==" >&2
  (cd "$peer" && ./run.sh 2>>"$log") | sed "s/^{/{\"side\":\"tokio\",\"round\":$r,/" >>"$raw"
done
load_end=$(cat /proc/loadavg)
cmd="tools/bench/threads_vs_tokio.sh $build $rounds"
[ -z "${LOCKSTEP_BENCHES:-}" ] || cmd="LOCKSTEP_BENCHES=\"$benches\" $cmd"
labels=""
for b in $benches; do labels="$labels ${b%%=*}"; done

# Hand-written notes below the marker line survive a rerun.
notes=$(mktemp)
trap 'rm -f "$log" "$notes"' EXIT
if [ -f results/threads.md ]; then sed -n '/^<!-- notes: kept by threads_vs_tokio.sh -->$/,$p' results/threads.md >"$notes"; fi
python3 - "$raw" "$cmd" "$started" "$commit" "$load_start" "$load_end" "$PEER_RUNS" "$labels" >results/threads.md <<'PY'
import json, sys, statistics
raw, cmd, started, commit, load_start, load_end, runs, labels = sys.argv[1:]
labels = labels.split()
lines = [json.loads(l) for l in open(raw) if l.strip()]

def key(l):
    b = l["bench"]
    if b == "lane_router":
        ttl = "off" if l["idle_ttl_ms"] is None else f'{l["idle_ttl_ms"]:g} ms'
        return f'lane_router K={l["keys"]}, idle_ttl {ttl}', "items/s", "samples_items_per_sec"
    if b == "single_flight_uncontended":
        return "single_flight uncontended cycles", "cycles/s", "samples_ops_per_sec"
    if b == "single_flight_contended":
        return "single_flight 1000 keys x 64 waiters", "answers/s", "samples_waiter_answers_per_sec"
    if b == "shard_reactor":
        return f'shard_reactor K={l["keys"]} (2 shards, no tokio peer)', "items/s", "samples_items_per_sec"
    return None, None, None

order, unit, samples, rounds_med, foreign = [], {}, {}, {}, {}
for l in lines:
    name, u, field = key(l)
    if name is None:
        continue
    if name not in order:
        order.append(name)
    unit[name] = u
    side = l["side"]
    samples.setdefault((name, side), []).extend(l[field])
    rounds_med.setdefault((name, side), []).append(statistics.median(l[field]))
    foreign[(name, side)] = max(foreign.get((name, side), 0.0), l.get("max_foreign_cpu_share", 0.0))
machine = next((l for l in lines if l["bench"] == "machine" and l["side"] == labels[0]), {})
peer_machine = next((l for l in lines if l["bench"] == "machine" and l["side"] == "tokio"), {})

def m(x):
    return f"{x / 1e6:.2f} M"

print("# The threads backend against the seeds on tokio\n")
print(f"Measured {started} (UTC) at commit `{commit}`, one session on {machine.get('nproc', '?')} vCPUs "
      f"({machine.get('cpu_model', '?')}), load average "
      f"`{load_start}` at the start and `{load_end}` at the end.\n")
xc = [l for l in lines if l["bench"] == "machine" and "cross_core_futex_round_trip_ns" in l]
if xc:
    spin = sorted(l["cross_core_spin_round_trip_ns"] for l in xc)
    fut = sorted(l["cross_core_futex_round_trip_ns"] / 1000 for l in xc)
    pinned = all(l.get("cross_core_pinned") for l in xc)
    print(f"Cross-core round trip between two threads{' pinned to CPUs 0 and 1' if pinned else ' (not pinned)'}, "
          f"measured by `threads_bench` before each round's figures (`tools/bench/cross_core.hpp`): "
          f"spinning {spin[0]:.0f}-{spin[-1]:.0f} ns, futex wait/wake {fut[0]:.1f}-{fut[-1]:.1f} us. "
          "The lane figures move with these; compare tables taken where they are alike.\n")
print("Command (from the repository root; `build-release` configured with `-DCMAKE_BUILD_TYPE=Release "
      "-DLOCKSTEP_BENCH=ON -DLOCKSTEP_TESTS=OFF`, target `threads_bench`):\n")
print("```\n" + cmd + "\n```\n")
print(f"Each round runs `threads_bench --runs {runs}` and then the peer's `run.sh` (tokio "
      f"{peer_machine.get('crates', {}).get('tokio', '?')}, {peer_machine.get('rustc', '?')}), "
      f"each figure a warm-up and {runs} timed runs; the peer's quiet-machine wait and reruns are off "
      "(`PEER_QUIET_WAIT_S=0 PEER_MAX_FOREIGN=1.0`) so both sides are sampled alike. A figure is the median "
      "of every timed sample of every round; *rounds* lists each round's median, in column order. "
      "*foreign* is the largest share of the machine's CPU other processes used during one timed run "
      "(either side): above 0.10 the figure is contaminated. "
      "Raw lines: `results/threads_raw.jsonl`. Workloads: `tools/bench/threads_bench.cpp` and the "
      "peer's `NOTES.md`.\n")
head = "| workload | unit | " + " | ".join(labels) + " | tokio | " + " | ".join(f"{x} / tokio" for x in labels)
head += " | rounds (" + " / ".join(labels + ["tokio"]) + ") | foreign |"
print(head)
print("|---|---|" + "---:|" * (2 * len(labels) + 1) + "---|---:|")
for name in order:
    meds = {}
    for side in labels + ["tokio"]:
        xs = samples.get((name, side), [])
        meds[side] = statistics.median(xs) if xs else None
    tm = meds["tokio"]
    cells = [m(meds[x]) if meds[x] else "—" for x in labels] + [m(tm) if tm else "—"]
    cells += [f"{meds[x] / tm:.2f}x" if meds[x] and tm else "—" for x in labels]
    rounds = " / ".join(" ".join(f"{v / 1e6:.2f}" for v in rounds_med.get((name, side), [])) or "—"
                        for side in labels + ["tokio"])
    fo = max(foreign.get((name, side), 0.0) for side in labels + ["tokio"])
    print(f"| {name} | {unit[name]} | " + " | ".join(cells) + f" | {rounds} | {fo:.2f} |")
PY
if [ -s "$notes" ]; then echo >>results/threads.md; cat "$notes" >>results/threads.md; fi
echo "wrote results/threads.md and $raw" >&2
