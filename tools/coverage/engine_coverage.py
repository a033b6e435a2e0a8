#!/usr/bin/env python3
"""Engine line and branch coverage of one set of runs, and the comparison of
two such sets: the engine's own unit tests against the scenario library.

  engine_coverage.py collect BUILD_DIR SOURCE_DIR OUT.json
      reads every .gcda under BUILD_DIR (a --coverage build whose counters
      the runs just wrote) with gcov's JSON output, and keeps, for each line
      of engine/*.hpp (the components; not engine/threads/, not the tests):
      whether any run executed it, and how many of its branch outcomes were
      taken (exception edges left out: they are the compiler's, not the
      code's). A line of a template is counted over all its instantiations:
      executed when any instantiation ran it; its branch outcomes taken are
      the most any one instantiation took, out of the most it has, so a
      unit test's instantiation and the library's compare line by line.
  engine_coverage.py compare UNIT.json LIBRARY.json [--explained FILE] [--markdown OUT.md]
      lists the engine lines, and the lines with branch outcomes, that the
      unit tests reach and the library does not, each with its source text.
      A gap that --explained explains is reported with its reason; each
      entry of that file is one line (# starts a comment), matched against
      the source, not line numbers, so it survives edits above it:
        engine/FILE.hpp function NAME -- REASON   every line of a function
                                                   whose demangled name has NAME
        engine/FILE.hpp line TEXT -- REASON       a line whose text contains TEXT
      Exits 1 when a gap is not explained (naming each), 0 otherwise.
  engine_coverage.py beyond A.json B.json NAME_A NAME_B
      what each of two sets of runs reaches that the other does not: engine
      lines run, and branch outcomes taken (per line, the outcomes one takes
      past the other's), as a markdown table and the lines themselves.
"""
import json
import os
import subprocess
import sys
import tempfile


def engine_file(path, source):
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(source))
    parts = rel.split(os.sep)
    if len(parts) == 2 and parts[0] == "engine" and parts[1].endswith(".hpp"):
        return rel
    return None


def collect(build, source, out):
    lines = {}  # "file:line" -> [executed, taken, total, [function names], text]
    gcdas = []
    for root, _, files in os.walk(build):
        gcdas += [os.path.abspath(os.path.join(root, f)) for f in files if f.endswith(".gcda")]
    gcdas.sort()
    with tempfile.TemporaryDirectory() as tmp:
        for gcda in gcdas:
            res = subprocess.run(["gcov", "-j", "-t", "-b", "-o", os.path.dirname(gcda), gcda],
                                 cwd=tmp, capture_output=True, text=True)
            if res.returncode != 0 or not res.stdout.strip():
                continue
            decoder = json.JSONDecoder()
            text, at = res.stdout, 0
            while at < len(text):
                while at < len(text) and text[at].isspace():
                    at += 1
                if at >= len(text):
                    break
                doc, at = decoder.raw_decode(text, at)
                for f in doc.get("files", []):
                    rel = engine_file(f["file"], source)
                    if rel is None:
                        continue
                    for ln in f["lines"]:
                        key = f"{rel}:{ln['line_number']}"
                        entry = lines.setdefault(key, [False, 0, 0, [], ""])
                        entry[0] = entry[0] or ln["count"] > 0
                        fn = ln.get("function_name", "")
                        if fn and fn not in entry[3]:
                            entry[3].append(fn)
                        outcomes = [b for b in ln.get("branches", []) if not b.get("throw")]
                        entry[1] = max(entry[1], sum(1 for b in outcomes if b["count"] > 0))
                        entry[2] = max(entry[2], len(outcomes))
    # gcov's JSON names functions mangled: demangle them all in one c++filt call.
    mangled = sorted({fn for entry in lines.values() for fn in entry[3]})
    if mangled:
        res = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n", capture_output=True, text=True, check=True)
        readable = dict(zip(mangled, res.stdout.split("\n")))
        for entry in lines.values():
            entry[3] = [readable.get(fn, fn) for fn in entry[3]]
    texts = {}
    for key, entry in lines.items():
        rel, line = key.rsplit(":", 1)
        if rel not in texts:
            with open(os.path.join(source, rel)) as fh:
                texts[rel] = fh.read().split("\n")
        src = texts[rel]
        entry[4] = src[int(line) - 1].strip() if int(line) <= len(src) else ""
        entry[3].sort()
    with open(out, "w") as fh:
        json.dump({"gcda_files": len(gcdas), "lines": lines}, fh, sort_keys=True, indent=0)
    print(f"{out}: {len(lines)} engine lines from {len(gcdas)} .gcda files")
    if not lines:
        print(f"no engine line in the .gcda files under {build}: not a --coverage build of these sources, or nothing ran",
              file=sys.stderr)
        return 1
    return 0


def order(key):
    f, line = key.rsplit(":", 1)
    return (f, int(line))


def compare(unit_path, lib_path, explained_path, markdown):
    unit = json.load(open(unit_path))["lines"]
    lib = json.load(open(lib_path))["lines"]
    rules = []  # (file, kind, pattern, reason)
    if explained_path:
        for number, raw in enumerate(open(explained_path), 1):
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            head, sep, reason = raw.partition(" -- ")
            parts = head.split(" ", 2)
            if not sep or len(parts) != 3 or parts[1] not in ("function", "line"):
                print(f"{explained_path}:{number}: expected 'engine/FILE.hpp function|line TEXT -- REASON'",
                      file=sys.stderr)
                sys.exit(2)
            rules.append((parts[0], parts[1], parts[2], reason.strip(), [0]))

    def reason_for(key, entry):
        f = key.rsplit(":", 1)[0]
        for rule in rules:
            rf, kind, pattern, reason, used = rule
            if rf != f:
                continue
            if (kind == "function" and any(pattern in fn for fn in entry[3])) or (kind == "line" and pattern in entry[4]):
                used[0] += 1
                return reason
        return None

    def stats(data):
        executable = [k for k in data]
        run = [k for k, v in data.items() if v[0]]
        outcomes = sum(v[2] for v in data.values())
        taken = sum(v[1] for v in data.values())
        return len(run), len(executable), taken, outcomes

    lines_only, branches_only = [], []
    for key, u in unit.items():
        l = lib.get(key, [False, 0, 0, [], ""])
        if u[0] and not l[0]:
            lines_only.append((key, reason_for(key, u)))
        elif u[1] > l[1]:
            branches_only.append((key, u[1], l[1], max(u[2], l[2]), reason_for(key, u)))
    lines_only.sort(key=lambda t: order(t[0]))
    branches_only.sort(key=lambda t: order(t[0]))
    unexplained = [k for k, why in lines_only if why is None] + [b[0] for b in branches_only if b[4] is None]
    unused = [f"{r[0]} {r[1]} {r[2]}" for r in rules if r[4][0] == 0]

    per_file = {}
    for name, data in (("unit", unit), ("library", lib)):
        for key, v in data.items():
            f = key.rsplit(":", 1)[0]
            s = per_file.setdefault(f, {"unit": [0, 0, 0, 0], "library": [0, 0, 0, 0]})[name]
            s[0] += 1 if v[0] else 0
            s[1] += 1
            s[2] += v[1]
            s[3] += v[2]

    out = ["# Engine coverage: the unit tests against the scenario library", "",
           "Lines and branch outcomes of `engine/*.hpp` (the components; not the threads backend) reached by the",
           "engine's own unit tests (`engine/tests`) and by `lockstep explore` of every library file",
           "(`scenarios/*.json`) over seeds 1..300 under random and pct (a file with `expect` once under fifo),",
           "from a g++ -O0 `--coverage` build. A template's line counts over all its instantiations; its branch",
           "outcomes are the most any one instantiation took. Exception edges are left out. Written by:", "",
           "```sh", "tools/coverage/compare.sh build-cov . results/engine_coverage.md   # build-cov: -DLOCKSTEP_COVERAGE=ON",
           "```", "",
           "Every gap below is explained in `tools/coverage/explained.txt` (matched by source text, not line",
           "number); an unexplained one fails the `engine_coverage` test (CI's coverage stage).", ""]
    ur, ue, ut, uo = stats(unit)
    lr, le, lt, lo = stats(lib)
    out.append("| engine file | unit tests: lines | library: lines | unit tests: branch outcomes | library: branch outcomes |")
    out.append("|---|---:|---:|---:|---:|")
    for f in sorted(per_file):
        u, l = per_file[f]["unit"], per_file[f]["library"]
        out.append(f"| `{f}` | {u[0]} / {u[1]} | {l[0]} / {l[1]} | {u[2]} / {u[3]} | {l[2]} / {l[3]} |")
    out.append(f"| **all** | **{ur} / {ue}** | **{lr} / {le}** | **{ut} / {uo}** | **{lt} / {lo}** |")
    out.append("")
    out.append(f"Lines the unit tests run and the library does not: {len(lines_only)}; lines where the unit tests"
               f" take more branch outcomes than the library: {len(branches_only)}; explained:"
               f" {len(lines_only) + len(branches_only) - len(unexplained)}; not explained: {len(unexplained)}.")
    out.append("")
    for key, why in lines_only:
        out.append(f"- line `{key}` `{unit[key][4]}`: not run by the library" + (f"; {why}" if why else " (NOT EXPLAINED)"))
    for key, ut_, lt_, tot, why in branches_only:
        out.append(f"- branches `{key}` `{unit[key][4]}`: unit tests take {ut_} of {tot} outcomes, the library {lt_}" +
                   (f"; {why}" if why else " (NOT EXPLAINED)"))
    text = "\n".join(out) + "\n"
    if markdown:
        with open(markdown, "w") as fh:
            fh.write(text)
    print(text)
    if unused:
        print("explanations that match no gap (remove them): " + "; ".join(unused))
    if unexplained:
        print(f"{len(unexplained)} engine lines reached by the unit tests only, unexplained: " +
              " ".join(unexplained[:40]) + (" ..." if len(unexplained) > 40 else ""))
        return 1
    return 0


def beyond(a_path, b_path, name_a, name_b):
    a = json.load(open(a_path))["lines"]
    b = json.load(open(b_path))["lines"]
    empty = [False, 0, 0, [], ""]

    def past(x, y):
        """Lines x runs and y does not; branch outcomes x takes past y's, line by line."""
        lines = sorted((k for k, v in x.items() if v[0] and not y.get(k, empty)[0]), key=order)
        more = sorted(((k, v[1] - y.get(k, empty)[1]) for k, v in x.items() if v[1] > y.get(k, empty)[1]),
                      key=lambda t: order(t[0]))
        return lines, more

    def total(x):
        return sum(1 for v in x.values() if v[0]), sum(v[1] for v in x.values())

    a_lines, a_more = past(a, b)
    b_lines, b_more = past(b, a)
    (al, at), (bl, bt) = total(a), total(b)
    outcomes = sum(max(v[2], b.get(k, empty)[2]) for k, v in a.items())
    out = [f"| | {name_a} | {name_b} |", "|---|---:|---:|",
           f"| engine lines run | {al} | {bl} |",
           f"| engine branch outcomes taken (of {outcomes}) | {at} | {bt} |",
           f"| lines run only here | {len(a_lines)} | {len(b_lines)} |",
           f"| branch outcomes taken past the other (lines) | {sum(n for _, n in a_more)} ({len(a_more)}) |"
           f" {sum(n for _, n in b_more)} ({len(b_more)}) |", ""]
    for name, lines, more, data in ((name_a, a_lines, a_more, a), (name_b, b_lines, b_more, b)):
        if lines or more:
            out.append(f"Reached by {name} only:")
            out.append("")
            out += [f"- line `{k}` `{data[k][4]}`" for k in lines]
            out += [f"- branches `{k}` `{data[k][4]}`: {n} more outcome{'s' if n > 1 else ''}" for k, n in more]
            out.append("")
    print("\n".join(out))
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "beyond":
        return beyond(argv[2], argv[3], argv[4], argv[5])
    if len(argv) >= 5 and argv[1] == "collect":
        return collect(argv[2], argv[3], argv[4])
    if len(argv) >= 4 and argv[1] == "compare":
        explained = markdown = None
        rest = argv[4:]
        while rest:
            if rest[0] == "--explained" and len(rest) > 1:
                explained, rest = rest[1], rest[2:]
            elif rest[0] == "--markdown" and len(rest) > 1:
                markdown, rest = rest[1], rest[2:]
            else:
                print(f"engine_coverage.py: unknown argument {rest[0]}", file=sys.stderr)
                return 2
        return compare(argv[2], argv[3], explained, markdown)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
