#!/usr/bin/env bash
# Installs exactly the Debian packages lockstep needs that are missing.
# Idempotent: when everything is present it only prints "bootstrap: nothing to install".
#
#   tools/bootstrap.sh [demo|all]        what `tools/dev demo` needs (the CLI), or everything (default)
#   tools/bootstrap.sh --list [demo|all] print that list of packages, install nothing
set -euo pipefail

# The CLI and the libraries: what `tools/dev demo` builds.
demo_packages=(
  cmake make ninja-build g++     # build (Ninja: tools/dev)
  libboost-context-dev           # fibers
  libcli11-dev                   # the lockstep CLI
  nlohmann-json3-dev             # scenarios, traces, failure records
  libxxhash-dev                  # the trace hash (XXH3, header-only)
)
# Everything else `tools/dev test` builds and runs.
test_packages=(
  clang                          # the second compiler for the determinism cross-check, ASan, TSan
  libboost-test-dev              # unit tests
  libgtest-dev                   # the example consumer's GoogleTest case (tools/examples)
  librapidcheck-dev              # property tests
  libbenchmark-dev               # benchmarks
  libclang-rt-14-dev             # clang's sanitizer runtimes
  libfuzzer-14-dev               # libFuzzer, for the readers' fuzz target (tools/fuzz)
  python3-jsonschema             # the independent schema check of the bundled scenarios (ctest)
  libxml2-utils                  # xmllint: explore's JUnit checked against its XSD (ctest)
  python3-junitparser            # explore's JUnit read back by a JUnit parser (ctest)
  pkg-config dpkg-dev            # package_install: lockstep.pc read back, the .deb's Depends (dpkg-shlibdeps)
  python3-yaml                   # docs_check: the CI recipes in docs/ci/ parsed
)

list_only=0
if [ "${1:-}" = --list ]; then
  list_only=1
  shift
fi
case "${1:-all}" in
  demo) packages=("${demo_packages[@]}") ;;
  all) packages=("${demo_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: tools/bootstrap.sh [--list] [demo|all]" >&2; exit 2 ;;
esac
if [ "$list_only" -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
updated=0
apt_update() {
  if [ "$updated" -eq 0 ]; then
    $sudo apt-get update -qq
    updated=1
  fi
}

if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# valijson (JSON Schema validation of scenario files) is header-only, but
# Debian's libvalijson-dev depends on the dev packages of every JSON library
# it has an adapter for — Qt5, Poco (and through it MariaDB and PostgreSQL),
# jsoncpp, yaml-cpp, picojson, rapidjson — several hundred MB that lockstep
# never includes (it uses only the nlohmann adapter). Where the package is
# not installed, Debian's own .deb is unpacked into .deps/valijson instead,
# which CMake looks in (tools/CMakeLists.txt).
root=$(cd "$(dirname "$0")/.." && pwd)
valijson_dir="$root/.deps/valijson"
if [ -f /usr/include/valijson/validator.hpp ] || [ -f "$valijson_dir/usr/include/valijson/validator.hpp" ]; then
  [ ${#missing[@]} -gt 0 ] || echo "bootstrap: nothing to install"
  exit 0
fi
echo "bootstrap: unpacking Debian's libvalijson-dev (headers only) into .deps/valijson"
apt_update
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get download runs unsandboxed as root; a world-writable directory keeps it quiet.
chmod 777 "$work"
(cd "$work" && apt-get download -qq libvalijson-dev)
rm -rf "$valijson_dir"
mkdir -p "$valijson_dir"
dpkg-deb -x "$work"/libvalijson-dev_*.deb "$valijson_dir"
test -f "$valijson_dir/usr/include/valijson/validator.hpp"
