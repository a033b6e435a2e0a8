// tools/scenario/crash.hpp — the processor's crash outcomes (crash_segv,
// crash_abort, crash_overflow): a real crash of the process, shared by the
// shards driver and the composed driver's shards.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

// A real crash of the process (behaviour outcomes crash_*), to test that the
// harness still reports the seed, the reason and the rerun command.
// Deep enough to run off any fiber stack into its guard page; the bound only
// keeps the compiler from calling it infinite recursion.
[[gnu::noinline]] inline std::uint64_t descend(std::uint64_t depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == UINT64_MAX) return 0;
  return descend(depth + 1) + static_cast<std::uint64_t>(frame[0]);
}

// no_sanitize: UBSan would stop at the null store first, and gcc's UBSan
// runtime does not run ASan's death callback (the crash report), while a real
// SIGSEGV goes through ASan's handler, which does.
[[noreturn]] __attribute__((no_sanitize("undefined"))) inline void crash(outcome_kind how) {
  if (how == outcome_kind::crash_abort) std::abort();
  if (how == outcome_kind::crash_overflow) (void)descend(0);
  // Both volatile: the compiler may neither assume the pointer is null nor
  // drop the store before abort(), so the kernel answers it with SIGSEGV.
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
  std::abort();  // not reached
}

}  // namespace lockstep::scenario
