#!/usr/bin/env bash
# The determinism rules as a check (after TigerBeetle's tidy.zig). Engine code
# outside engine/threads/ and the simulator may not reach raw threads, locks,
# atomics, clocks, C randomness, std:: distributions or std::hash: the
# simulator cannot see or replay those. Each hit names its replacement.
set -u
root=${1:-.}
cd "$root" || exit 2
status=0

check() {  # pattern, replacement, dirs...
  local pattern=$1 instead=$2
  shift 2
  local hits
  hits=$(grep -rnE "$pattern" "$@" --include='*.hpp' --include='*.cpp' --include='*.h' 2>/dev/null |
         grep -v '^engine/threads/' | grep -v 'determinism-rules: allow' |
         while IFS= read -r hit; do
           # Only code counts: drop a // comment, then test the pattern again.
           code=${hit#*:*:}
           code=${code%%//*}
           if printf '%s\n' "$code" | grep -qE "$pattern"; then printf '%s\n' "$hit"; fi
         done)
  if [ -n "$hits" ]; then
    echo "determinism rule broken: use $instead"
    echo "$hits" | sed 's/^/  /'
    status=1
  fi
}

check 'std::(thread|jthread)\b' "rt.spawn / rt.spawn_on" engine sim
check 'std::(mutex|shared_mutex|recursive_mutex|condition_variable)\b' "R::mutex / R::notify" engine sim
check 'std::atomic\b|<atomic>' "R::atomic<T>" engine sim
check 'std::chrono::(steady|system|high_resolution)_clock|\bclock_gettime\b|\bgettimeofday\b|\btime\(nullptr\)' "rt.now()" engine sim
check '[^_a-z]rand\(\)|\bsrand\(|std::random_device|std::mt19937|std::default_random_engine' "rt.random() / sim::prng" engine sim
check 'std::[a-z_]+_distribution' "sim::prng::below (libstdc++ and libc++ distributions differ)" engine sim
check 'std::hash\b' "lockstep::stable_hash (std::hash differs between standard libraries)" engine sim
check 'std::this_thread::sleep' "rt.sleep_until" engine sim

if [ $status -eq 0 ]; then echo "determinism rules hold in engine/ and sim/"; fi
exit $status
