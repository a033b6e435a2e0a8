#!/usr/bin/env bash
# Installs exactly the Debian packages lockstep needs that are missing.
# Idempotent: when everything is present it only prints "bootstrap: nothing to install".
set -euo pipefail

packages=(
  cmake make g++ clang           # build, and the second compiler for the determinism cross-check
  libboost-context-dev           # fibers
  libboost-test-dev              # unit tests
  libcli11-dev                   # the lockstep CLI
  nlohmann-json3-dev             # scenarios, traces, failure records
  librapidcheck-dev              # property tests
  libbenchmark-dev               # benchmarks
  libclang-rt-14-dev             # clang's sanitizer runtimes
  libfuzzer-14-dev               # libFuzzer, for the readers' fuzz target (tools/fuzz)
  libvalijson-dev                # JSON Schema validation of scenario files (header-only)
  python3-jsonschema             # the independent schema check of the bundled scenarios (ctest)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: nothing to install"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
