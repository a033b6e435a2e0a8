#!/usr/bin/env python3
"""Checks a `lockstep trace --format perfetto` export against the run's own
trace (JSON Lines): it is Chrome trace-event JSON (the JSON Object Format),
every fiber of the trace has one named track, every key its track(s), every
step and component event is there, slices on a track nest or follow each
other (never overlap part-way, which the viewers cannot draw), and the failure
is one global instant naming its oracle.

  check_perfetto.py EXPORT.json TRACE.jsonl [ORACLE]

ORACLE: the failure must be "oracle ORACLE"; without it there must be none.
Prints one line per problem and exits 1 if there is any.
"""
import collections
import json
import sys

COMPONENTS = ("shards.", "lanes.", "flight.")


def main():
    export_path, trace_path = sys.argv[1], sys.argv[2]
    oracle = sys.argv[3] if len(sys.argv) > 3 else None
    problems = []

    def problem(msg):
        problems.append(msg)

    with open(export_path, encoding="utf-8") as f:
        doc = json.load(f)
    with open(trace_path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]

    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        print("not the JSON Object Format: no traceEvents list")
        return 1
    if doc.get("displayTimeUnit") != "ns":
        problem("displayTimeUnit is %r, expected 'ns'" % doc.get("displayTimeUnit"))
    events = doc["traceEvents"]

    for i, e in enumerate(events):
        where = "traceEvents[%d]" % i
        if not isinstance(e, dict):
            problem(where + ": not an object")
            continue
        if not isinstance(e.get("name"), str) or not e["name"]:
            problem(where + ": no name")
        ph = e.get("ph")
        if ph not in ("X", "B", "E", "i", "M"):
            problem(where + ": ph %r" % ph)
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int):
                problem(where + ": %s is not an integer" % k)
        if ph != "M":
            ts = e.get("ts")
            if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts < 0:
                problem(where + ": ts %r" % ts)
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or isinstance(dur, bool) or dur < 0:
                problem(where + ": dur %r" % dur)
        if ph == "i" and e.get("s") not in ("t", "p", "g"):
            problem(where + ": instant scope %r" % e.get("s"))
        if "args" in e and not isinstance(e["args"], dict):
            problem(where + ": args is not an object")

    meta = [e for e in events if e.get("ph") == "M"]
    thread_names = collections.defaultdict(list)
    for e in meta:
        if e["name"] == "thread_name":
            thread_names[(e["pid"], e["tid"])].append(e["args"]["name"])
    process_names = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    if process_names.get(1) != "fibers":
        problem("pid 1 is not named 'fibers'")

    # One named track per fiber the trace mentions.
    fibers = sorted({line["fiber"] for line in lines if "fiber" in line})
    fiber_tracks = {tid: names for (pid, tid), names in thread_names.items() if pid == 1}
    for fiber in fibers:
        names = [n for names in fiber_tracks.values() for n in names if n.split(" ")[0] == "#%d" % fiber]
        if len(names) != 1:
            problem("fiber %d has %d thread_name events, expected 1" % (fiber, len(names)))
    if len(fiber_tracks) != len(fibers):
        problem("%d fiber tracks for %d fibers" % (len(fiber_tracks), len(fibers)))

    # Every key of the components' events has a track in pid 2, and every
    # event in pid 2 is on a named track.
    keys = sorted({line["key"] for line in lines
                   if line["ev"].startswith(COMPONENTS) and "key" in line})
    key_track_names = [n for (pid, _), names in thread_names.items() if pid == 2 for n in names]
    for key in keys:
        if "key %d" % key not in key_track_names:
            problem("no track named 'key %d'" % key)
    if keys and process_names.get(2) != "keys":
        problem("pid 2 is not named 'keys'")
    for e in events:
        if e.get("ph") != "M" and (e["pid"], e["tid"]) not in thread_names and e.get("s") not in ("g", "p"):
            problem("event %r on an unnamed track pid %d tid %d" % (e["name"], e["pid"], e["tid"]))

    # Every step is a run slice; every component event is an instant of its name.
    steps = sum(1 for line in lines if line["ev"] == "step")
    runs = sum(1 for e in events if e.get("ph") == "X" and e["name"] == "run")
    if runs != steps:
        problem("%d run slices for %d steps" % (runs, steps))
    wanted = collections.Counter(line["ev"] for line in lines if line["ev"].startswith(COMPONENTS))
    got = collections.Counter(e["name"] for e in events if e.get("ph") == "i" and e["name"].startswith(COMPONENTS))
    if wanted != got:
        problem("component instants %s, trace events %s" % (dict(got), dict(wanted)))
    if not wanted:
        problem("the trace has no component events (a scenario run should)")
    key_slices = [e for e in events if e.get("ph") == "X" and e["pid"] == 2]
    if not key_slices:
        problem("no slices on the key tracks")

    # Slices on one track nest or follow each other (microseconds with 3
    # decimals: compare in integer nanoseconds).
    by_track = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            start = round(e["ts"] * 1000)
            by_track[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000), e["name"]))
    for track, slices in by_track.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in slices:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                problem("on track %s, %r [%d, %d] overlaps %r [%d, %d] part-way"
                        % (track, name, start, end, stack[-1][2], stack[-1][0], stack[-1][1]))
                break
            stack.append((start, end, name))

    failures = [e for e in events if e.get("cat") == "failure"]
    if oracle is None:
        if failures:
            problem("a failure instant in a run that held")
    else:
        if len(failures) != 1:
            problem("%d failure instants, expected 1" % len(failures))
        else:
            f = failures[0]
            if f.get("ph") != "i" or f.get("s") != "g":
                problem("the failure is not a global instant")
            args = f.get("args", {})
            if args.get("reason") != "oracle " + oracle:
                problem("the failure's reason is %r, expected 'oracle %s'" % (args.get("reason"), oracle))
            if oracle not in args.get("message", ""):
                problem("the failure's message does not name %s" % oracle)
            fail_lines = [line for line in lines if line["ev"] == "fail"]
            if not fail_lines or round(f["ts"] * 1000) != fail_lines[0]["t"]:
                problem("the failure instant is not at the trace's fail time")

    for p in problems[:20]:
        print(p)
    if not problems:
        print("perfetto export ok: %d events, %d fibers, %d keys, %d key slices"
              % (len(events), len(fibers), len(keys), len(key_slices)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
