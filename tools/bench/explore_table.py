#!/usr/bin/env python3
"""Writes results/explore.md: `lockstep explore` runs/s for every bundled
scenario at --jobs 1 and --jobs 2, and the simulator step's instructions with
and without the hashed trace (callgrind: exactly repeatable, unlike wall time).

    [ONLY=REGEX] tools/bench/explore_table.py [BUILD_DIR [SEEDS [TARGET_S [ROUNDS]]]]

Each row is sized by a first --jobs 1 run over seeds 1..SEEDS so that a
--jobs 1 run lasts about TARGET_S seconds. Then ROUNDS rounds each run
--jobs 1 and --jobs 2 back to back (the order alternating from round to
round, so a drift in the machine's speed favours neither) over those seeds,
and a round's ratio is its --jobs 2 rate over its --jobs 1 rate: both saw the
same minute of the machine. The row's ratio is the median of its rounds'.

This is a shared 2-vCPU VM: another process's CPU time during a --jobs 2 run
takes a core from it. /proc/stat says how busy the whole machine was during
each run; what this process did not use of that is *foreign*. A round where
either run saw more than FOREIGN_MAX (default 0.05) of the machine foreign is
run again, up to 3 * ROUNDS rounds in all; the row says how many it kept.

One Python process drives it all (the shell version started a Python per
figure, which was most of its 23 minutes).
"""
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_load import NCPU, foreign_share, machine_busy_s  # noqa: E402
from explore_table_section import LIBRARY_SECTION  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
os.chdir(ROOT)
build = sys.argv[1] if len(sys.argv) > 1 else "build-release"
seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
target_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
only = os.environ.get("ONLY", "")
foreign_max = float(os.environ.get("FOREIGN_MAX", "0.05"))
lockstep = f"{build}/tools/lockstep"


def die(message):
    print(message, file=sys.stderr)
    sys.exit(2)


if not os.access(lockstep, os.X_OK):
    die(f"explore_table: {lockstep}: not built (cmake --build {build} --target lockstep)")
ncpu = NCPU

def explore(file, strategy, jobs, n, out):
    """One explore run: (runs/s over explore's own wall time, CPU s per run, foreign share, summary)."""
    busy0 = machine_busy_s()
    t0 = time.monotonic()
    r0 = os.times()
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([lockstep, "explore", file, "--strategy", strategy, "--seeds", f"1..{n}",
                        "--stop-after", "0", "--jobs", str(jobs), "--json", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    r1 = os.times()
    elapsed = time.monotonic() - t0
    busy = machine_busy_s() - busy0
    own = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    if not os.path.exists(out):  # a failing seed exits 1 or 3 and still writes it
        die(f"explore_table: {file} ({strategy}, --jobs {jobs}): explore wrote no summary "
            f"(exit {p.returncode}): {p.stderr.strip()[:300]}")
    with open(out) as f:
        d = json.load(f)
    runs = d["runs"] + d["probe_runs"]  # pct's probe runs cost a run too
    wall = d["wall"]["seconds"]
    foreign = foreign_share(busy, own, elapsed)
    return runs / wall if wall > 0 else math.inf, own / runs, foreign, d


def main():
    work = tempfile.mkdtemp(prefix="lockstep-explore-table.")
    rows, ratios = [], []
    started = datetime.now(timezone.utc)
    for file in sorted(str(p) for p in Path("scenarios").glob("*.json")):
        if only and not re.search(only, file):
            continue
        text = Path(file).read_text()
        strategies = ["fifo"] if '"expect"' in text else ["random", "pct"]  # exact expectations hold only under fifo
        for strategy in strategies:
            rate, _, _, _ = explore(file, strategy, 1, seeds, f"{work}/size.json")
            n = max(seeds, math.ceil(rate * target_s))
            kept, tried, foreign_seen = [], 0, 0.0
            while len(kept) < rounds and tried < 3 * rounds:
                order = (1, 2) if tried % 2 == 0 else (2, 1)
                tried += 1
                got = {}
                for jobs in order:
                    got[jobs] = explore(file, strategy, jobs, n, f"{work}/j{jobs}.json")
                a, b = got[1][3], got[2][3]
                if a["trace_hashes"] != b["trace_hashes"] or a["failures"] != b["failures"]:
                    die(f"explore_table: --jobs 1 and --jobs 2 disagree on {file} ({strategy})")
                foreign = max(got[1][2], got[2][2])
                foreign_seen = max(foreign_seen, foreign)
                if foreign > foreign_max:
                    continue
                kept.append((got[1][0], got[2][0], got[1][1], got[2][1], foreign))
            if not kept:
                rows.append(f"| {Path(file).stem} | {strategy} | {n} | — | — | — | — | {foreign_seen:.2f} | 0 of {tried} |")
                continue
            r1 = statistics.median(k[0] for k in kept)
            r2 = statistics.median(k[1] for k in kept)
            ratio = statistics.median(k[1] / k[0] for k in kept)
            cpu = statistics.median(k[3] / k[2] for k in kept)
            ratios.append(ratio)
            foreign = max(k[4] for k in kept)
            rows.append(f"| {Path(file).stem} | {strategy} | {n} | {r1:.0f} | {r2:.0f} | {ratio:.2f} | {cpu:.2f} "
                        f"| {foreign:.2f} | {len(kept)} of {tried} |")
            print(rows[-1], file=sys.stderr, flush=True)

    steps = []
    fixed = Path(build) / "tools" / "sim_step_fixed"
    if fixed.exists() and subprocess.run(["which", "valgrind"], capture_output=True).returncode == 0:
        def ir(fibers, yields, mode):
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(fixed),
                                str(fibers), str(yields), mode], capture_output=True, text=True)
            return int(re.search(r"Collected : (\d+)", p.stderr).group(1))
        for fibers in (2, 64, 1024):
            cells = [f"{(ir(fibers, 400, m) - ir(fibers, 200, m)) / (fibers * 200):.0f}" for m in ("off", "hash", "full")]
            steps.append(f"| {fibers} | " + " | ".join(cells) + " |")

    below = sum(r < 1.8 for r in ratios)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    build_type = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", (Path(build) / "CMakeCache.txt").read_text(), re.M).group(1)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    cmd = f"{'ONLY=' + repr(only) + ' ' if only else ''}tools/bench/explore_table.py {build} {seeds} {target_s} {rounds}"
    out = [
        "# Exploration throughput at --jobs 1 and --jobs 2, and the cost of a traced step",
        "",
        f"Measured {started:%Y-%m-%d %H:%M}–{datetime.now(timezone.utc):%H:%M} UTC at commit {commit} with the "
        f"{build_type} build in `{build}` on {ncpu} CPUs, load average {load} when it ended, by:",
        "",
        "```sh", cmd, "```",
        "",
        f"Each row explores seeds 1..N, N sized by a first run of seeds 1..{seeds} so that a `--jobs 1` run",
        f"lasts about {target_s} s. A round runs `--jobs 1` and `--jobs 2` back to back over those seeds (the",
        "order alternating from round to round); its ratio is its `--jobs 2` rate over its `--jobs 1` rate, and",
        "the row's *ratio* is the median of its rounds' ratios. The runs/s columns are medians too. runs/s",
        "counts every run, pct's probe runs included, over explore's own wall time (process start-up and",
        "reading the file excluded). The script fails if the two runs' trace hashes or failures differ.",
        "",
        f"*foreign*: the machine's busy CPU time (`/proc/stat`) during a run that was not this process's, as a",
        f"share of both CPUs. A round in which either run saw more than {foreign_max:.2f} of it is run again (at most",
        f"{3 * rounds} rounds a row); the *foreign* column is the largest in a kept round, and *rounds* says how",
        "many were kept of how many run. *CPU/run* is the CPU time",
        "per run at `--jobs 2` over `--jobs 1`, median of the kept rounds: what the second thread costs in work",
        "(1.00: nothing; a ratio of throughputs can reach 2 only if this stays near 1).",
        "",
        f"**{len(ratios)} rows: median ratio {statistics.median(ratios):.2f}, smallest {min(ratios):.2f}, "
        f"{below} below the target of 1.8.**" if ratios else "**no rows**",
        "",
        "| scenario | strategy | seeds | runs/s, --jobs 1 | runs/s, --jobs 2 | ratio | CPU/run | foreign | rounds |",
        "|----------|----------|------:|-----------------:|-----------------:|------:|--------:|--------:|-------:|",
        *rows,
    ]
    if steps:
        out += [
            "",
            "## Instructions per simulator step (callgrind)",
            "",
            f"`valgrind --tool=callgrind {build}/tools/sim_step_fixed FIBERS YIELDS MODE` at YIELDS 200",
            "and 400; the difference over the extra steps. `off`: nothing recorded; `hash`: the",
            "decision list recorded and the trace hashed (what every `explore` run does); `full`:",
            "the trace also formatted and kept (`run --trace`, `replay`).",
            "",
            "| fibers | off | hash | full |",
            "|---:|---:|---:|---:|",
            *steps,
        ]
    # The whole-library section (tools/bench/explore_library.py) is its own measurement: kept as it is.
    old = Path("results/explore.md").read_text() if Path("results/explore.md").exists() else ""
    kept = old[old.index(LIBRARY_SECTION):] if LIBRARY_SECTION in old else ""
    Path("results/explore.md").write_text("\n".join(out) + "\n" + ("\n" + kept if kept else ""))
    print("wrote results/explore.md")


main()
