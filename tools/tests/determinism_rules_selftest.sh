#!/usr/bin/env bash
# Goal: the determinism-rules check fails on a raw primitive in engine code,
# names the replacement, and ignores mentions in comments and engine/threads/.
set -u
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/engine/threads" "$tmp/sim"
fail() { echo "determinism_rules_selftest: $*"; exit 1; }

printf '// std::mutex in a comment is fine\nint x;\n' >"$tmp/engine/ok.hpp"
printf '#include <mutex>\nstd::mutex raw;\n' >"$tmp/engine/threads/backend.hpp"
out=$("$check" "$tmp") || fail "a clean tree was rejected: $out"

printf 'inline std::mutex m;\n' >"$tmp/engine/bad.hpp"
out=$("$check" "$tmp") && fail "std::mutex in engine/ was not caught"
grep -q 'R::mutex' <<<"$out" || fail "the report does not name the replacement: $out"
grep -q 'engine/bad.hpp:1' <<<"$out" || fail "the report does not name the place: $out"
rm "$tmp/engine/bad.hpp"

printf 'auto h = std::hash<int>{}(1);\n' >"$tmp/sim/bad.cpp"
"$check" "$tmp" >/dev/null && fail "std::hash in sim/ was not caught"
rm "$tmp/sim/bad.cpp"

printf 'auto t = std::chrono::steady_clock::now();\n' >"$tmp/engine/clock.hpp"
"$check" "$tmp" >/dev/null && fail "a clock in engine/ was not caught"
echo "determinism_rules_selftest: 4 passed, 0 failed"
