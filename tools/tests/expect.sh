# Sourced by the CLI test scripts (cli_regressions.sh, scenario_cli.sh): the
# case runner they share. Each case runs in the current directory, writes
# `out` and `err`, and counts into $cases and $failures.
#
# expect NAME RC TEXT -- CMD...: CMD exits RC and TEXT is in its stdout or
# stderr; a bad input (RC 2) prints exactly one line on stderr. A case that
# does not finish within $case_timeout seconds (default 300) fails: a hang is
# a defect too (a FIFO opened for reading once hung the CLI).
failures=0
cases=0
case_timeout=${case_timeout:-300}

fail() {
  echo "FAIL [$name]: $*"
  echo "  stdout: $(tail -c 600 out)"
  echo "  stderr: $(head -c 600 err)"
  failures=$((failures + 1))
}

expect() {
  name=$1 rc=$2 text=$3
  shift 4
  cases=$((cases + 1))
  timeout "$case_timeout" "$@" >out 2>err
  local got=$?
  if [ "$got" -ne "$rc" ]; then
    fail "exit code $got, expected $rc"
    return
  fi
  if ! grep -qF -- "$text" err && ! grep -qF -- "$text" out; then
    fail "output does not contain: $text"
    return
  fi
  if [ "$rc" -eq 2 ] && [ "$(wc -l <err)" -ne 1 ]; then
    fail "expected one line on stderr, got $(wc -l <err)"
  fi
}
