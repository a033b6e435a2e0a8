#!/usr/bin/env bash
# The demo (`tools/dev demo`) installs and builds only what the CLI needs:
# `tools/bootstrap.sh demo` lists no test, fuzz, sanitizer or benchmark
# package, and the demo's configuration (no tests, no benchmarks) succeeds
# with rapidcheck, Google Benchmark and GoogleTest made unfindable and without
# asking for Boost.Test.
#
#   demo_needs.sh SOURCE_DIR
set -u
src=$1
failures=0
fail() { echo "demo_needs: $*" >&2; failures=$((failures + 1)); }

demo=$(bash "$src/tools/bootstrap.sh" --list demo) || { echo "bootstrap.sh --list demo failed"; exit 1; }
all=$(bash "$src/tools/bootstrap.sh" --list all)
for p in clang libboost-test-dev libgtest-dev librapidcheck-dev libbenchmark-dev libfuzzer-14-dev libclang-rt-14-dev \
  python3-jsonschema python3-junitparser; do
  grep -qx "$p" <<<"$demo" && fail "the demo's bootstrap installs $p, which only the tests need"
  grep -qx "$p" <<<"$all" || fail "the full bootstrap lacks $p"
done
for p in g++ cmake libboost-context-dev libcli11-dev nlohmann-json3-dev libxxhash-dev; do
  grep -qx "$p" <<<"$demo" || fail "the demo's bootstrap lacks $p"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-demo-needs.XXXXXX")
trap 'rm -rf "$work"' EXIT
valijson=()
[ -d "$src/.deps/valijson/usr/include" ] && valijson=(-DVALIJSON_INCLUDE_DIR="$src/.deps/valijson/usr/include")
if ! cmake -S "$src" -B "$work/b" -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_TESTS=OFF -DLOCKSTEP_BENCH=OFF "${valijson[@]}" \
  -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >"$work/configure.log" 2>&1; then
  tail -20 "$work/configure.log"
  fail "the demo's configuration needs a test or benchmark package"
fi
grep -q "unit_test_framework" "$work/b/CMakeCache.txt" 2>/dev/null && fail "the demo's configuration asks for Boost.Test"

[ "$failures" -eq 0 ] && echo "demo_needs: the demo needs only the CLI's packages"
[ "$failures" -eq 0 ]
