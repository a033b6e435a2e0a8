#!/usr/bin/env bash
# The same seed must give the same bytes with g++ and clang++, at -O0 and -O2.
# Builds the determinism test and the CLI with clang++ -O0, then compares the
# trace hashes of a fixed set of runs with those of the given g++ build.
set -euo pipefail
gxx_build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
clang_build=build-clang-O0
cmake -S . -B "$clang_build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g" -DLOCKSTEP_WERROR=ON -DLOCKSTEP_BENCH=OFF >/dev/null
cmake --build "$clang_build" -j"${LOCKSTEP_JOBS:-$(nproc)}" --target test_sim_determinism lockstep

hashes() {  # build dir -> the hash lines of the fixed set
  local dir=$1
  LOCKSTEP_PRINT_HASHES=1 "$dir/sim/test_sim_determinism" --log_level=nothing --report_level=no | grep '^determinism '
  for program in pipeline grommet velo probation; do
    for strategy in random pct fifo; do
      "$dir/tools/lockstep" check-determinism --program "$program" --strategy "$strategy" --seeds 10 --cores 2
      "$dir/tools/lockstep" check-determinism --program "$program" --strategy "$strategy" --seeds 3 --cores 3
    done
    "$dir/tools/lockstep" check-determinism --program "$program" --options '{"canary":true}' --seeds 5 --cores 2
  done
}

a=$(mktemp) b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT
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
