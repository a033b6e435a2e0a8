#!/usr/bin/env python3
"""Goal: every coverage probe in engine/probes.hpp is reached by at least one
bundled scenario (scenarios/*.json), and the table of who reaches what.

    coverage_probes.py check LOCKSTEP REPO [SEEDS]   # exit 1 naming each unreached probe
    coverage_probes.py table LOCKSTEP REPO [SEEDS]   # markdown for results/coverage.md

Each file runs as the demo runs it: a file with exact `expect` counts under
fifo (seeds 1..5), every other file under random and under pct (seeds
1..SEEDS, default 100). Only the library counts, not scenarios/canaries: a
probe reached only by a planted bug says nothing about the real engine.

A probe listed in AWAITING_FORMAT is one no scenario file can reach yet; the
check fails if one of them is reached after all, so the list cannot go stale.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

# Probes the scenario format cannot reach today, and why.
AWAITING_FORMAT = {}


def probe_names(repo):
    text = open(os.path.join(repo, "engine", "probes.hpp")).read()
    table = text[text.index("names = {"):text.index("};", text.index("names = {"))]
    return re.findall(r'^\s*"([a-z_]+\.[a-z_]+)",', table, re.M)


def explore(lockstep, files, strategy, seeds, out_dir):
    path = os.path.join(out_dir, strategy + ".json")
    cmd = [lockstep, "explore", *files, "--strategy", strategy, "--seeds", seeds, "--stop-after", "0",
           "--json", path]
    run = subprocess.run(cmd, cwd=out_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        sys.exit("coverage_probes: explore --strategy %s did not hold (exit %d):\n%s" %
                 (strategy, run.returncode, run.stdout[-2000:]))
    doc = json.load(open(path))
    return doc["summaries"] if "summaries" in doc else [doc]


def gather(lockstep, repo, seeds):
    lib = os.path.join(repo, "scenarios")
    files = sorted(os.path.join(lib, f) for f in os.listdir(lib) if f.endswith(".json"))
    fifo = [f for f in files if "expect" in json.load(open(f))]
    other = [f for f in files if f not in fifo]
    summaries = []
    with tempfile.TemporaryDirectory() as tmp:
        summaries += explore(lockstep, fifo, "fifo", "1..5", tmp)
        for strategy in ("random", "pct"):
            summaries += explore(lockstep, other, strategy, "1..%d" % seeds, tmp)
    return summaries


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ("check", "table"):
        sys.exit(__doc__)
    mode, lockstep, repo = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
    seeds = int(sys.argv[4]) if len(sys.argv) == 5 else 100
    names = probe_names(repo)
    summaries = gather(lockstep, repo, seeds)
    reached = {n: set() for n in names}  # probe -> scenario files
    pairs = {}  # race -> [a, b, a_then_b runs, b_then_a runs, scenarios seeing both in one summary]
    for s in summaries:
        scen = os.path.basename(s["config"]["scenario"])
        for probe, runs in s["coverage"]["probes"].items():
            if probe not in reached:
                sys.exit("coverage_probes: %s reports probe %s, which engine/probes.hpp does not list" % (scen, probe))
            if runs > 0:
                reached[probe].add(scen)
        for p in s["coverage"]["race_pairs"]:
            e = pairs.setdefault(p["race"], [p["a"], p["b"], 0, 0, set()])
            e[2] += p["a_then_b_runs"]
            e[3] += p["b_then_a_runs"]
            if p["a_then_b_runs"] > 0 and p["b_then_a_runs"] > 0:
                e[4].add(scen)
    if mode == "check":
        bad = [n for n in names if not reached[n] and n not in AWAITING_FORMAT]
        stale = [n for n in AWAITING_FORMAT if n not in names or reached[n]]
        for n in bad:
            print("probe %s: no bundled scenario reaches it" % n)
        for n in stale:
            print("probe %s: listed in AWAITING_FORMAT but %s: take it off the list" %
                  (n, "reached by " + ", ".join(sorted(reached[n])) if n in names else "not in the table"))
        if bad or stale:
            sys.exit(1)
        print("every probe of %d is reached (%d awaiting the format: %s); %d summaries" %
              (len(names), len(AWAITING_FORMAT), ", ".join(sorted(AWAITING_FORMAT)), len(summaries)))
        return
    print("| probe | bundled scenarios reaching it |")
    print("|-------|-------------------------------|")
    for n in names:
        why = AWAITING_FORMAT.get(n)
        cell = ", ".join("`%s`" % x for x in sorted(reached[n])) or ("**none**: " + why if why else "**none**")
        print("| `%s` | %s |" % (n, cell))
    print()
    print("| race | a | b | runs a then b | runs b then a | seen in both orders by |")
    print("|------|---|---|---------------|---------------|------------------------|")
    for race, (a, b, ab, ba, both) in pairs.items():
        cell = ", ".join("`%s`" % x for x in sorted(both)) or ("one order only" if (ab == 0) != (ba == 0) else "never")
        print("| %s | `%s` | `%s` | %d | %d | %s |" % (race, a, b, ab, ba, cell))


if __name__ == "__main__":
    main()
