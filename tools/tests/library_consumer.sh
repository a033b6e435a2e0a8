#!/usr/bin/env bash
# lockstep as a library, from the user's side: install the build into a
# temporary prefix, configure and build tools/examples/ against it with
# find_package(lockstep) only, run its tests (they must pass), then the
# planted-bug build: each planted test must fail, print a replay command, and
# that command, run as printed, must reproduce the record's trace hash.
#
#   library_consumer.sh BUILD_DIR SOURCE_DIR CXX BUILD_KIND
set -u
build=$1 src=$2 cxx=$3 kind=$4
if [[ $kind != plain ]]; then
  # Sanitizer builds install nothing (their targets link the sanitizer
  # exit-code object, which is not part of the package), and a consumer would
  # need the same sanitizer flags: the plain build covers the package.
  echo "skipped: a $kind build has no install rules"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "library_consumer: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install failed"; }
[[ -f $work/prefix/lib/cmake/lockstep/lockstepConfig.cmake && -f $work/prefix/lib/cmake/lockstep/lockstepConfigVersion.cmake ]] ||
  fail "no package config under $work/prefix/lib/cmake/lockstep"
[[ -f $work/prefix/include/lockstep/sim/runtime.hpp ]] || fail "no <lockstep/sim/runtime.hpp> in the prefix"
[[ -f $work/prefix/include/lockstep/std.hpp ]] || fail "no <lockstep/std.hpp> in the prefix"
# Installed headers find each other relatively: a repo-root include
# ("sim/x.hpp") would only work with the source tree on the include path.
if grep -rnE '^#include "(engine|sim|testing)/' "$work/prefix/include/lockstep"; then
  fail "an installed header includes by repository path (see above): make it relative"
fi
# Only the prefix: no path into the source or build tree reaches the example.
cmake -S "$src/tools/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DEXAMPLE_WERROR=ON > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the example failed"; }
if grep -rq -- "$src/engine\|$src/sim\|$src/testing" "$work/example/CMakeFiles" 2>/dev/null; then
  fail "the example's build reaches into the source tree"
fi
cmake --build "$work/example" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the example failed"; }

cd "$work/example" || exit 1
./example_tests --color_output=no > fixed.log 2>&1 || { cat fixed.log; fail "example_tests failed: the fixed code must hold on every seed"; }
./example_on_threads > on_threads.log 2>&1 || { cat on_threads.log; fail "example_on_threads failed: the std-named code must hold on real threads"; }
grep -q "^on_threads: 200 rounds on 2 cores: held$" on_threads.log || { cat on_threads.log; fail "example_on_threads: no verdict"; }
if [[ -x example_gtest ]]; then
  ./example_gtest > gtest.log 2>&1 || { cat gtest.log; fail "example_gtest failed"; }
fi

for t in pool_one_connection_three_clients relacy_lost_update relacy_single_flight relacy_three_windows \
         work_queue_two_producers_two_consumers lazy_config_three_readers std_lost_update std_plain_int_lost_update \
         relacy_std_lost_update relacy_std_single_flight relacy_std_three_windows; do
  if ./example_tests_planted --color_output=no --run_test="$t" > "planted-$t.log" 2>&1; then
    cat "planted-$t.log"
    fail "$t: the planted bug was not found"
  fi
  grep -q "lockstep: $t failed: seed=" "planted-$t.log" || { cat "planted-$t.log"; fail "$t: no seed in the report"; }
  cmd=$(sed -n 's/^  replay: //p' "planted-$t.log" | head -1)
  record=$(sed -n 's/^  record: //p' "planted-$t.log" | head -1)
  [[ -n $cmd && -f $record ]] || { cat "planted-$t.log"; fail "$t: no replay command or record"; }
  hash=$(sed -n 's/.*"trace_hash": "\([0-9a-f]*\)".*/\1/p' "$record")
  [[ ${#hash} == 16 ]] || fail "$t: no trace hash in $record"
  # As printed: the command line is run by a shell, from another directory.
  (cd "$work" && sh -c "$cmd --color_output=no") > "replay-$t.log" 2>&1
  rc=$?
  grep -q "reproduced: the same trace hash $hash " "replay-$t.log" || { cat "replay-$t.log"; fail "$t: '$cmd' did not reproduce trace hash $hash"; }
  [[ $rc != 0 ]] || fail "$t: the replayed failure passed the test"
  echo "$t: found, replayed with: $cmd (trace hash $hash)"
done

# A failure is shrunk to fewer preemptions when it can be, in a record of its
# own whose printed replay command reproduces it.
shrunk_cmd=$(sed -n 's/^  shrunk replay: //p' planted-*.log | head -1)
[[ -n $shrunk_cmd ]] || fail "no planted failure was shrunk"
(cd "$work" && sh -c "$shrunk_cmd --color_output=no") > shrunk-replay.log 2>&1 &&
  { cat shrunk-replay.log; fail "'$shrunk_cmd' passed"; }
grep -q "reproduced: the same trace hash" shrunk-replay.log || { cat shrunk-replay.log; fail "'$shrunk_cmd' did not reproduce"; }
echo "$(grep -h '^  shrunk: ' planted-*.log | head -1 | cut -c3-60)... replayed with: $shrunk_cmd"

# A test record's run in ui.perfetto.dev: the replay writes its trace
# (LOCKSTEP_TRACE), the installed CLI converts it.
LOCKSTEP_REPLAY="$(sed -n 's/^  record: //p' planted-std_lost_update.log | head -1)" LOCKSTEP_TRACE="$work/lost.jsonl" \
  ./example_tests_planted --run_test=std_lost_update > traced.log 2>&1
"$work/prefix/bin/lockstep" trace "$work/lost.jsonl" -o "$work/lost.json" > convert.log 2>&1 &&
  grep -q '"traceEvents"' "$work/lost.json" && grep -q '"cat":"failure"' "$work/lost.json" ||
  { cat traced.log convert.log; fail "a test record's trace was not converted for Perfetto"; }
echo "lockstep trace: a test record's replay trace converted to $(wc -c < "$work/lost.json") bytes of trace-event JSON"

# A record kept from a bug that has since been fixed: replayed against the
# fixed binary it diverges (the fix changed the schedule); with
# LOCKSTEP_REPLAY_CONTINUE=1 the run goes on past the record and says the bug
# no longer fails (exit 0); against the planted binary it still reproduces.
kept=$(sed -n 's/^  record: //p' planted-std_lost_update.log | head -1)
LOCKSTEP_REPLAY="$kept" ./example_tests --color_output=no --run_test=std_lost_update > kept-plain.log 2>&1 &&
  { cat kept-plain.log; fail "a planted record replayed against the fix passed without LOCKSTEP_REPLAY_CONTINUE"; }
LOCKSTEP_REPLAY="$kept" LOCKSTEP_REPLAY_CONTINUE=1 ./example_tests --color_output=no --run_test=std_lost_update > kept-continue.log 2>&1 ||
  { cat kept-continue.log; fail "LOCKSTEP_REPLAY_CONTINUE=1: the fixed code did not pass"; }
grep -q "no longer fails: the continued run held" kept-continue.log || { cat kept-continue.log; fail "LOCKSTEP_REPLAY_CONTINUE=1: no 'no longer fails'"; }
LOCKSTEP_REPLAY="$kept" LOCKSTEP_REPLAY_CONTINUE=1 ./example_tests_planted --color_output=no --run_test=std_lost_update > kept-planted.log 2>&1 &&
  { cat kept-planted.log; fail "LOCKSTEP_REPLAY_CONTINUE=1 on the planted binary passed"; }
grep -q "reproduced: the same trace hash" kept-planted.log || { cat kept-planted.log; fail "LOCKSTEP_REPLAY_CONTINUE=1: the planted bug did not reproduce"; }
LOCKSTEP_REPLAY="$kept" LOCKSTEP_REPLAY_CONTINUE=yes ./example_tests --run_test=std_lost_update > bad.log 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q 'LOCKSTEP_REPLAY_CONTINUE="yes": expected 1' bad.log || { cat bad.log; fail "LOCKSTEP_REPLAY_CONTINUE=yes: expected exit 2, got $rc"; }
echo "LOCKSTEP_REPLAY_CONTINUE: a kept record of the fixed lost update: $(grep -o 'no longer fails[^(]*' kept-continue.log)"

# Each planted bug is found as what it is.
grep -q "failed: seed=.*: deadlock: .*waits at .* on condition_variable.wait of condition_variable created at" planted-work_queue_two_producers_two_consumers.log ||
  { cat planted-work_queue_two_producers_two_consumers.log; fail "the queue's lost wake-up was not reported as a deadlock"; }
grep -q "failed: seed=.*: oracle: .*config.port() == 8080" planted-lazy_config_three_readers.log ||
  { cat planted-lazy_config_three_readers.log; fail "the broken double-checked lock was not reported at its assertion"; }
grep -Eq "failed: seed=.*: data_race: data race on var 'hits' created at .*test_work_queue.cpp:[0-9]+: (read|write) by #[0-9] 'thread'" \
  planted-std_plain_int_lost_update.log ||
  { cat planted-std_plain_int_lost_update.log; fail "the unguarded plain-int update was not reported as a data race"; }
# ... and Boost.Test reports a LOCKSTEP_ASSERT at the assertion's own line, not inside lockstep's glue.
line=$(grep -n "LOCKSTEP_ASSERT(config.port() == 8080)" "$src/tools/examples/test_work_queue.cpp" | cut -d: -f1)
grep -q "test_work_queue.cpp($line): error: in \"lazy_config_three_readers\"" planted-lazy_config_three_readers.log ||
  { cat planted-lazy_config_three_readers.log; fail "the failure is not reported at test_work_queue.cpp($line)"; }

# The array queue's linearizability: the planted queue's smallest
# non-linearizable history is printed as a table (a pop returning 0, which
# nobody pushed); the fixed queue passed with example_tests above.
./example_tests_planted --color_output=no --run_test=array_queue_is_linearizable > planted-lin.log 2>&1 &&
  { cat planted-lin.log; fail "array_queue_is_linearizable: the planted queue passed"; }
grep -q "not linearizable" planted-lin.log && grep -q "pop() -> 0 \[" planted-lin.log &&
  grep -q "thread 0 .*| thread 1" planted-lin.log && grep -q "record: .*array_queue-2x1-" planted-lin.log ||
  { cat planted-lin.log; fail "array_queue_is_linearizable: no minimal history table"; }
echo "array_queue_is_linearizable: the planted queue's smallest history: $(grep -c '' planted-lin.log) lines"
if [[ -x example_prop_lin_queue ]]; then
  RC_PARAMS="seed=20261206 max_success=30" ./example_prop_lin_queue > prop-lin.log 2>&1 ||
    { cat prop-lin.log; fail "the rapidcheck property failed on the fixed queue"; }
  RC_PARAMS="seed=20261206 max_success=100" ./example_prop_lin_queue_planted > prop-lin-planted.log 2>&1 &&
    { cat prop-lin-planted.log; fail "the rapidcheck property passed on the planted queue"; }
  grep -q "not linearizable" prop-lin-planted.log || { cat prop-lin-planted.log; fail "the property's failure is not the history"; }
  # The failing case's record holds its generated program (and is named by
  # it: test_testing_api checks that two programs keep two records).
  grep -q "input: thread 0: .* | thread 1:" prop-lin-planted.log ||
    { cat prop-lin-planted.log; fail "the property's failure does not show the generated program"; }
  prop_record=$(sed -n 's/^ *record: \(.*prop_array_queue-.*\.json\)$/\1/p' prop-lin-planted.log | tail -1)
  [[ -f $prop_record ]] && grep -q '"input": "thread 0:' "$prop_record" ||
    { cat prop-lin-planted.log; fail "the property's record ($prop_record) does not hold the generated program"; }
  # One command replays the failing case: the printed LOCKSTEP_REPLAY=<record>
  # command rebuilds the program from the record's input, not from rapidcheck.
  prop_replay=$(sed -n 's/^ *replay: \(LOCKSTEP_REPLAY=.*prop_array_queue-.*\)$/\1/p' prop-lin-planted.log | tail -1)
  [[ -n $prop_replay ]] || { cat prop-lin-planted.log; fail "the property's failure prints no replay command"; }
  bash -c "$prop_replay" > prop-replay.log 2>&1
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "reproduced" prop-replay.log ||
    { echo "$prop_replay (exit $rc)"; cat prop-replay.log; fail "the property's printed replay command did not reproduce"; }
  # On the fixed queue, continued past the record: the kept record says the bug is gone.
  LOCKSTEP_REPLAY="$prop_record" LOCKSTEP_REPLAY_CONTINUE=1 ./example_prop_lin_queue > prop-fixed-replay.log 2>&1 &&
    grep -q "no longer fails" prop-fixed-replay.log ||
    { cat prop-fixed-replay.log; fail "the fixed property does not say the record no longer fails"; }
  # A record whose input the property cannot rebuild: one line, exit 2.
  sed 's/"input": "thread 0:/"input": "thread 7:/' "$prop_record" > bad-input.json
  LOCKSTEP_REPLAY=bad-input.json ./example_prop_lin_queue > prop-bad.log 2>&1
  rc=$?
  [[ $rc -eq 2 ]] && [[ $(wc -l < prop-bad.log) -eq 1 ]] && grep -q "bad-input.json: /input: expected a case" prop-bad.log ||
    { echo "exit $rc"; cat prop-bad.log; fail "a record with an input the property cannot rebuild is not refused in one line"; }
  echo "example_prop_lin_queue: holds on the fixed queue, fails on the planted one; the record holds the program and replays in one command"
fi

# A real std::mutex left in the code under test is reported by the watchdog
# (exit 3, the fiber, its last lockstep operation and line), not hung; its
# rerun command, from another directory, hangs the same way on the same seed.
timeout 120 ./example_tests_planted --color_output=no --run_test=std_mutex_misuse > planted-misuse.log 2>&1
rc=$?
[[ $rc == 3 ]] || { cat planted-misuse.log; fail "std_mutex_misuse: expected exit 3 from the watchdog, got $rc"; }
grep -q "lockstep: std_mutex_misuse: fiber #[0-9]* 'thread' ran 1 s of wall-clock time without a lockstep operation" planted-misuse.log &&
  grep -q "Its last lockstep operation: atomic\.[a-z_]* at .*test_work_queue.cpp:[0-9]*\." planted-misuse.log ||
  { cat planted-misuse.log; fail "std_mutex_misuse: the watchdog's report does not name the fiber and the line"; }
cmd=$(sed -n 's/.* Rerun: //p' planted-misuse.log)
seed=$(sed -n 's/.* Seed \([0-9]*\), strategy .*/\1/p' planted-misuse.log)
(cd "$work" && timeout 120 sh -c "$cmd --color_output=no") > rerun-misuse.log 2>&1
rc=$?
[[ $rc == 3 ]] && grep -q " Seed $seed, " rerun-misuse.log ||
  { cat rerun-misuse.log; fail "std_mutex_misuse: '$cmd' exited $rc, not 3 on seed $seed"; }
echo "std_mutex_misuse: reported by the watchdog (exit 3), rerun with: $cmd"

# Bad input is one line naming it, and exit 2.
LOCKSTEP_SEEDS=ten ./example_tests > bad.log 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q 'LOCKSTEP_SEEDS="ten": expected' bad.log || { cat bad.log; fail "LOCKSTEP_SEEDS=ten: expected exit 2 naming the variable, got $rc"; }
echo '{"lockstep_failure_record": 1}' > bad-record.json
LOCKSTEP_REPLAY=bad-record.json ./example_tests --run_test=relacy_lost_update > bad.log 2>&1
rc=$?
[[ $rc == 2 ]] && grep -q 'bad-record.json: /test: expected' bad.log || { cat bad.log; fail "a bad record: expected exit 2 naming /test, got $rc"; }
echo "library_consumer: the package builds the example, its tests pass, and every planted bug replays from its printed command"
