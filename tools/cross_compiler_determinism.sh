#!/usr/bin/env bash
# The same seed must give the same bytes with g++ and clang++, at -O0 and -O2.
# Compares the trace hashes of a fixed set of runs between a g++ -O2 build and
# a clang++ -O0 build: the one given, or the two targets it needs built here
# into build-clang-O0 (what CI does).
#   tools/cross_compiler_determinism.sh [GXX_BUILD [CLANG_O0_BUILD]]
set -euo pipefail
gxx_build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
clang_build=${2:-}
if [ -z "$clang_build" ]; then
  clang_build=build-clang-O0
  cmake -S . -B "$clang_build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0" -DLOCKSTEP_WERROR=ON -DLOCKSTEP_BENCH=OFF >/dev/null
  cmake --build "$clang_build" -j"${LOCKSTEP_BUILD_JOBS:-$(nproc)}" --target test_sim_determinism lockstep
fi
# The claim is about g++ -O2 and clang++ -O0: hold the builds to it.
cache() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt"; }
gxx_type=$(cache "$gxx_build" CMAKE_BUILD_TYPE)
gxx_flags=$(cache "$gxx_build" "CMAKE_CXX_FLAGS_$(tr '[:lower:]' '[:upper:]' <<<"$gxx_type")")
case "$(basename "$(cache "$gxx_build" CMAKE_CXX_COMPILER)")/$gxx_type/$gxx_flags" in
  g++*/RelWithDebInfo/*-O2* | c++/RelWithDebInfo/*-O2*) ;;
  *) echo "cross-compiler determinism: $gxx_build is not a g++ -O2 build ($gxx_type: $gxx_flags)" >&2; exit 1 ;;
esac
case "$(basename "$(cache "$clang_build" CMAKE_CXX_COMPILER)")/$(cache "$clang_build" CMAKE_BUILD_TYPE)/$(cache "$clang_build" CMAKE_CXX_FLAGS_DEBUG)" in
  clang++*/Debug/*-O0*) ;;
  *) echo "cross-compiler determinism: $clang_build is not a clang++ -O0 build" >&2; exit 1 ;;
esac

hashes() {  # build dir -> the hash lines of the fixed set
  local dir=$1
  LOCKSTEP_PRINT_HASHES=1 "$dir/sim/test_sim_determinism" --log_level=nothing --report_level=no | grep '^determinism '
  # The former programs' workloads also under fifo and on one core more.
  for strategy in random pct fifo; do
    "$dir/tools/lockstep" check-determinism scenarios/program_*.json --strategy "$strategy" --seeds 10
    "$dir/tools/lockstep" check-determinism scenarios/program_*.json --strategy "$strategy" --seeds 3 --cores 3
  done
  for file in scenarios/*.json scenarios/canaries/*.json; do
    strategies="random pct"
    grep -q '"expect"' "$file" && strategies=fifo  # exact expectations hold only under fifo
    for strategy in $strategies; do
      "$dir/tools/lockstep" check-determinism "$file" --strategy "$strategy" --seeds 5
    done
  done
  # Swarm files (their ranges need --swarm, which check-determinism does not
  # take): the values each seed draws and the run's trace hash.
  for file in scenarios/swarm/*.json scenarios/canaries/swarm/*.json; do
    for strategy in random pct; do
      for seed in 1 2 3 4 5; do
        # exit 1 is the canary's planted bug found: the hash is what is compared
        { "$dir/tools/lockstep" run "$file" --swarm --strategy "$strategy" --seed "$seed" --record "$rec" ||
          [ $? -eq 1 ]; } | grep '^swarm:\|trace_hash='
      done
    done
  done
}

a=$(mktemp) b=$(mktemp) rec=$(mktemp)
trap 'rm -f "$a" "$b" "$rec"' EXIT
hashes "$gxx_build" >"$a"
hashes "$clang_build" >"$b"
lines=$(wc -l <"$a")
if [ "$lines" -lt 200 ]; then
  echo "cross-compiler determinism: only $lines hash lines: the check itself is broken" >&2
  exit 1
fi
if diff -u --label "g++ ($gxx_build)" --label "clang++ -O0 ($clang_build)" "$a" "$b"; then
  echo "cross-compiler determinism: $lines runs give identical trace hashes with g++ -O2 and clang++ -O0"
else
  echo "cross-compiler determinism: trace hashes differ between compilers" >&2
  exit 1
fi
