#!/usr/bin/env bash
# lockstep installed, from a user's side: `cmake --install` into a scratch
# prefix, then the installed CLI (--version, a bundled scenario from
# share/lockstep/scenarios, the schema beside it), pkg-config's view, a
# project registering scenario files as CTest tests with
# lockstep_add_scenarios (held files pass, a planted bug fails, naming its
# seed), and the .deb `cpack -G DEB` makes: its contents and its Depends,
# the CLI run from it unpacked into a scratch root, and apt-get's simulated
# install of it.
#
#   package_install.sh BUILD_DIR SOURCE_DIR BUILD_KIND
set -u
build=$1 src=$2 kind=$3
if [[ $kind != plain ]]; then
  echo "skipped: a $kind build has no install rules"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "package_install: $*" >&2; failures=$((failures + 1)); }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; echo "install failed"; exit 1; }
L=$prefix/bin/lockstep
[[ -x $L ]] || { echo "no lockstep CLI in $prefix/bin"; exit 1; }
"$L" --version | grep -q "^lockstep [0-9]" || fail "the installed CLI has no --version"
share=$prefix/share/lockstep
[[ -f $share/schema/scenario.schema.json ]] || fail "no schema under share/lockstep/schema"
[[ -f $share/scenarios/README.md && -f $share/scenarios/canaries/shards_skip_final_flush.json ]] ||
  fail "the bundled scenarios (with README.md and canaries/) are not under share/lockstep/scenarios"
n=$(ls "$share"/scenarios/*.json | wc -l)
[[ $n -eq $(ls "$src"/scenarios/*.json | wc -l) ]] || fail "share/lockstep/scenarios holds $n of the library's files"
(cd "$work" && "$L" run "$share/scenarios/program_velo.json" --seed 3 >run.out 2>&1) ||
  fail "the installed CLI does not run an installed scenario: $(tail -3 "$work/run.out")"
(cd "$work" && "$L" explore "$share/scenarios/canaries/shards_skip_final_flush.json" --seeds 20 >canary.out 2>&1)
[[ $? -eq 1 ]] || fail "the installed CLI does not catch an installed canary"

# pkg-config: the flags name the prefix's headers and libraries, which exist.
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  cflags=$(pkg-config --cflags lockstep) libs=$(pkg-config --libs lockstep) || fail "pkg-config does not know lockstep"
  # Relocatable: the flags find the prefix from where lockstep.pc lies.
  inc=$(printf '%s\n' $cflags | sed -n 's/^-I//p' | head -1) lib=$(printf '%s\n' $libs | sed -n 's/^-L//p' | head -1)
  [[ -n $inc && $(realpath "$inc") == $(realpath "$prefix/include") && -n $lib &&
    $(realpath "$lib") == $(realpath "$prefix/lib") && $libs == *"-llockstep_sim"* ]] ||
    fail "lockstep.pc does not lead to the prefix: '$cflags' '$libs'"
  for lib in lockstep_testing lockstep_sim lockstep_threads; do
    [[ -f $prefix/lib/lib$lib.a ]] || fail "lockstep.pc names lib$lib.a, which is not installed"
  done
fi

# lockstep_add_scenarios: two held files and a planted bug, as CTest tests.
mkdir -p "$work/scen"
cp "$src/scenarios/program_velo.json" "$src/scenarios/shards_deadline_shed_fifo.json" \
  "$src/scenarios/canaries/shards_skip_final_flush.json" "$work/scen/"
cmake -S "$src/tools/tests/data/scenario_consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DSCENARIOS="$work/scen" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "configuring the consumer failed"; }
(cd "$work/consumer" && ctest -N) >"$work/list.log" 2>&1
# random + pct for each file, fifo alone for the one with `expect`: 5 tests.
for t in lockstep.program_velo.random lockstep.program_velo.pct lockstep.shards_deadline_shed_fifo.fifo \
  lockstep.shards_skip_final_flush.random lockstep.shards_skip_final_flush.pct; do
  grep -q " $t\$" "$work/list.log" || fail "lockstep_add_scenarios registered no test $t: $(grep 'Test *#' "$work/list.log" | tr '\n' ' ')"
done
grep -q "Total Tests: 5" "$work/list.log" || fail "expected 5 tests: $(tail -2 "$work/list.log")"
(cd "$work/consumer" && ctest --output-on-failure) >"$work/ctest.log" 2>&1
grep -q "3 tests failed\|tests passed, 2 tests failed" "$work/ctest.log" && ! grep -q "program_velo.*Failed\|shards_deadline_shed_fifo.*Failed" "$work/ctest.log" &&
  grep -q "failing seed .*: oracle state" "$work/ctest.log" ||
  fail "the held files must pass and the planted bug fail, naming its seed: $(grep -E 'Passed|Failed' "$work/ctest.log" | tr '\n' ' ')"

# The .deb: what it installs and what it depends on.
if command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null; then
  (cd "$work" && cpack -G DEB -B "$work/deb" --config "$build/CPackConfig.cmake") >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
  deb=$(ls "$work"/deb/lockstep_*.deb 2>/dev/null | head -1)
  if [[ -z $deb ]]; then
    fail "cpack made no lockstep_*.deb"
  else
    dpkg-deb -c "$deb" >"$work/contents" && dpkg-deb -f "$deb" Package Version Depends >"$work/control"
    for f in ./usr/bin/lockstep ./usr/share/lockstep/schema/scenario.schema.json \
      ./usr/share/lockstep/scenarios/program_velo.json ./usr/lib/cmake/lockstep/lockstepConfig.cmake \
      ./usr/lib/cmake/lockstep/lockstepScenarios.cmake ./usr/lib/pkgconfig/lockstep.pc ./usr/include/lockstep/sim/runtime.hpp; do
      grep -q " $f\$" "$work/contents" || fail "the .deb lacks $f"
    done
    grep -q "^Depends:.*libboost-context" "$work/control" || fail "the .deb's Depends lacks Boost.Context: $(cat "$work/control")"
    ! grep -qi "Depends:.*-dev" "$work/control" || fail "the .deb depends on a -dev package: $(cat "$work/control")"
    # Installed into a scratch root: the CLI runs from it, on the scenarios it brought.
    dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x could not unpack the .deb"
    R=$work/root/usr/bin/lockstep
    "$R" --version | grep -q "^lockstep [0-9]" || fail "the .deb's CLI has no --version"
    (cd "$work" && "$R" run "$work/root/usr/share/lockstep/scenarios/program_velo.json" --seed 3 >deb_run.out 2>&1) ||
      fail "the .deb's CLI does not run the .deb's scenario: $(tail -3 "$work/deb_run.out")"
    (cd "$work" && "$R" explore "$work/root/usr/share/lockstep/scenarios/canaries/shards_skip_final_flush.json" --seeds 20 \
      >deb_canary.out 2>&1)
    [[ $? -eq 1 ]] || fail "the .deb's CLI does not catch the .deb's canary"
    # What apt-get install ./lockstep_*.deb would do here (simulated: no root
    # needed, nothing changed): it resolves, installing lockstep and no -dev package.
    if command -v apt-get >/dev/null; then
      apt-get install -s "$deb" >"$work/apt.log" 2>&1 || fail "apt-get install -s refuses the .deb: $(tail -3 "$work/apt.log")"
      grep -q "^Inst lockstep " "$work/apt.log" || fail "apt-get would not install lockstep: $(tail -3 "$work/apt.log")"
      ! grep -q "^Inst .*-dev " "$work/apt.log" || fail "apt-get would pull a -dev package: $(grep '^Inst' "$work/apt.log")"
    fi
  fi
fi

[[ $failures -eq 0 ]] && echo "package_install: every check held"
[[ $failures -eq 0 ]]
