#!/usr/bin/env bash
# The docs hold: (a) docs/cli-reference.md is what the binary prints
# (tools/docs/cli_reference.sh); (b) every relative link in README.md and
# docs/*.md names a file that exists; (c) the CI recipes in docs/ci/ parse
# (YAML, sh) and have the shape docs/ci.md describes; (d) every shell command
# in README.md and docs/*.md runs as written against this build — from a
# scratch folder per page where `scenarios` is the repository's — and exits 0
# or the code its comment names (`# exit 1`); a block after
# `<!-- doctest: skip (why) -->` is not run.
#
#   docs_check.sh LOCKSTEP_BINARY SOURCE_DIR
set -u
L=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
cases=0
fail() { echo "FAIL [$name]: $*"; failures=$((failures + 1)); }

# (a) the CLI reference
name=cli_reference_current cases=$((cases + 1))
"$src/tools/docs/cli_reference.sh" "$L" >"$work/cli-reference.md" 2>"$work/ref.err" || fail "the generator failed: $(cat "$work/ref.err")"
diff -u "$src/docs/cli-reference.md" "$work/cli-reference.md" >"$work/ref.diff" ||
  fail "docs/cli-reference.md differs from the binary's help (regenerate it): $(head -20 "$work/ref.diff")"

# (b) relative links
name=links_resolve cases=$((cases + 1))
python3 - "$src" >"$work/links.out" 2>&1 <<'PY' || fail "$(cat "$work/links.out")"
import pathlib, re, sys
src = pathlib.Path(sys.argv[1])
bad = []
for page in [src / "README.md", *sorted((src / "docs").glob("*.md"))]:
    text = page.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code are not links
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            bad.append(f"{page.relative_to(src)}: {target}")
assert not bad, "links to nothing: " + ", ".join(bad)
PY

# (c) the CI recipes: Debian's python3 has python3-yaml (tools/bootstrap.sh).
name=ci_recipes_parse cases=$((cases + 1))
/usr/bin/python3 - "$src/docs/ci" >"$work/recipes.out" 2>&1 <<'PY' || fail "$(tail -5 "$work/recipes.out")"
import pathlib, sys, yaml
ci = pathlib.Path(sys.argv[1])
gh = yaml.safe_load((ci / "github-actions.yml").read_text())
gen = yaml.safe_load((ci / "github-actions-generate.yml").read_text())
for jobs in (gh["jobs"], gen["jobs"]):  # tools/bootstrap.sh installs Debian 12's package names
    assert all(str(j.get("container", "")).startswith("debian:") for j in jobs.values()), "github: a Debian container"
assert gh["jobs"]["explore"]["strategy"]["matrix"]["shard"] == [0, 1, 2, 3], "github: the shard matrix"
assert gh["jobs"]["merge"]["needs"] == "explore", "github: merge after the shards"
steps = " ".join(str(s.get("run", "")) for s in gh["jobs"]["explore"]["steps"])
assert "--shard ${{ matrix.shard }}/4" in steps and "--json shard-" in steps, "github: each shard's summary"
gl = yaml.safe_load((ci / "gitlab-ci.yml").read_text())
assert gl["explore"]["parallel"] == 4 and "CI_NODE_INDEX - 1" in " ".join(gl["explore"]["script"]), "gitlab: shards from 0"
assert gl["merge"]["artifacts"]["reports"]["junit"] == "junit.xml", "gitlab: the JUnit report"
k8s = yaml.safe_load((ci / "k8s-indexed-job.yaml").read_text())
assert k8s["kind"] == "Job" and k8s["spec"]["completionMode"] == "Indexed", "k8s: an Indexed Job"
assert "$JOB_COMPLETION_INDEX/8" in k8s["spec"]["template"]["spec"]["containers"][0]["args"][0], "k8s: its shard"
assert k8s["spec"]["completions"] == 8
gen = yaml.safe_load((ci / "github-actions-generate.yml").read_text())
assert set(gen[True]) == {"pull_request", "schedule"}, "generate: per pull request and nightly"
runs = [str(s.get("run", "")) for s in gen["jobs"]["generate"]["steps"]]
assert any("--generate any" in r and "--time 60s" in r and "ctest -L 'property|regressions'" in r for r in runs), "generate: the budgeted pull-request run"
assert any("ctest -L soak" in r for r in runs) and "LOCKSTEP_SOAK=ON" in " ".join(runs), "generate: the nightly soak"
PY
name=ci_recipe_slurm_parses cases=$((cases + 1))
sh -n "$src/docs/ci/slurm-array.sh" 2>"$work/sh.err" && grep -q '^#SBATCH --array=0-15' "$src/docs/ci/slurm-array.sh" &&
  grep -q -- '--shard "$SLURM_ARRAY_TASK_ID/16"' "$src/docs/ci/slurm-array.sh" || fail "slurm-array.sh: $(cat "$work/sh.err")"
# Every lockstep command line in the recipes uses flags this binary knows: run
# it on a tiny range (3 seeds) in a scratch folder.
name=ci_recipe_commands_run cases=$((cases + 1))
mkdir -p "$work/recipes" && ln -s "$src/scenarios" "$work/recipes/scenarios"
python3 - "$src/docs/ci" >"$work/recipe_cmds" <<'PY'
import pathlib, re, sys
for f in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    text = re.sub(r"\$\{\{[^}]*\}\}", "0", f.read_text().replace("\\\n", " "))
    for m in re.finditer(r"lockstep explore (\S+)([^\n;|]*)", text):
        args = m.group(2)
        args = re.sub(r"--seeds \S+", "--seeds 1..3", args)
        args = re.sub(r"--shard \S+", "--shard 0/2", args)
        args = re.sub(r"--jobs \S+", "--jobs 1", args)
        args = re.sub(r"--json \S+", "--json s.json", args)
        args = re.sub(r"\|\|.*", "", args)
        path = m.group(1).replace("/src/", "")
        print(f"{f.name}\tlockstep explore {path}{args}")
PY
[ -s "$work/recipe_cmds" ] || fail "no lockstep command found in the recipes"
while IFS=$'\t' read -r file cmd; do
  (cd "$work/recipes" && eval "\"$L\" ${cmd#lockstep }" >out 2>err)
  rc=$?
  [ $rc -le 1 ] || fail "$file: '$cmd' exited $rc: $(head -c 300 "$work/recipes/err")"
done <"$work/recipe_cmds"

# (d) every page's shell commands, in order, as written, each page from its
# own scratch folder: `scenarios` is the repository's, and `lockstep`,
# `build/tools/lockstep` and `build-release/tools/lockstep` are this build.
# One rewrite: a `--time` budget becomes 1s (a page may show `--time 1h`).
# A command exits 0, or what a comment on it says (`# exit 1: a planted bug`).
python3 - "$src" >"$work/doc_cmds" <<'PY'
import pathlib, re, sys
src = pathlib.Path(sys.argv[1])
pages = [src / "README.md", *sorted(p for p in (src / "docs").glob("*.md") if p.name != "cli-reference.md")]
for page in pages:
    lines = page.read_text().split("\n")
    skip = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- doctest: skip"):
            skip = True
        elif line.strip() == "```sh":
            # A command is a line, lines joined by a trailing backslash, or a
            # for/while/if up to its done/fi; a `# exit N` comment on any of
            # its lines is the exit code it must give.
            i += 1
            cmd, want, depth, continued = [], None, 0, False
            while lines[i].strip() != "```":
                text = lines[i]
                m = re.search(r"#\s*exit (\d+)", text)
                if m:
                    want = m.group(1)
                text = re.sub(r"(^|\s)#.*$", "", text).rstrip()
                word = text.strip().split(" ")[0] if text.strip() else ""
                depth += word in ("for", "while", "if", "until")
                depth -= word in ("done", "fi")
                piece = text[:-1].rstrip() if text.endswith("\\") else text
                if cmd and continued:
                    cmd[-1] += " " + piece.strip()
                else:
                    cmd.append(piece)
                continued = text.endswith("\\")
                if not continued and depth == 0:
                    one = "\n".join(c for c in cmd if c.strip())
                    if one.strip() and not skip:
                        one = re.sub(r"--time \S+", "--time 1s", one)
                        print(f"{page.relative_to(src)}\t{want or '-'}\t{one}".replace("\n", "\x1e"))
                    cmd, want = [], None
                i += 1
            skip = False
        elif line.startswith("```"):
            skip = False
        i += 1
PY
name=readme_has_commands cases=$((cases + 1))
[ "$(grep -c '^README.md' "$work/doc_cmds")" -ge 5 ] || fail "found $(grep -c '^README.md' "$work/doc_cmds") commands in README.md"
n=0
while IFS=$'\t' read -r page want cmd; do
  cmd=${cmd//$'\x1e'/$'\n'}
  n=$((n + 1))
  dir="$work/pages/${page//\//_}"
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir/bin" "$dir/build/tools" "$dir/build-release/tools"
    ln -s "$src/scenarios" "$dir/scenarios"
    for b in bin/lockstep build/tools/lockstep build-release/tools/lockstep; do ln -s "$L" "$dir/$b"; done
  fi
  name="doc_command_${n} (${page})" cases=$((cases + 1))
  (cd "$dir" && PATH="$dir/bin:$PATH" timeout 300 sh -c "$cmd" </dev/null >"out_$n" 2>"err_$n")
  rc=$?
  [ -n "${DOCS_CHECK_VERBOSE:-}" ] && echo "rc=$rc $page: $cmd"
  [ "$want" = - ] && want=0
  [ $rc -eq "$want" ] || fail "'$cmd' exited $rc, the page says $want: $(head -c 300 "$dir/err_$n")"
done <"$work/doc_cmds"

echo "docs_check: $cases cases, $failures failures"
[ "$failures" -eq 0 ]
