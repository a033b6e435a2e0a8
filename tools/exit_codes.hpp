// Exit codes of every lockstep command, in one place (after TigerBeetle's
// vopr: correctness, liveness and nondeterminism are told apart), so a script
// can act on them. `lockstep --help` and docs/cli.md list the same table.
#pragma once

#include "sim/executor.hpp"

namespace lockstep::cli {

/// Every property held (for `replay`: the recorded failure no longer reproduces).
inline constexpr int exit_held = 0;
/// A property failed: an oracle, an uncaught exception, an abort, a resource
/// limit, a crash (for `replay`: the recorded failure reproduced, same bytes).
inline constexpr int exit_failed = 1;
/// Bad input or usage: the message names the file or flag, the JSON pointer
/// and what was expected.
inline constexpr int exit_bad_input = 2;
/// Liveness: a deadlock, or the step or virtual-time budget ran out.
inline constexpr int exit_liveness = 3;
/// Nondeterminism: a replay that diverged, a determinism check that differed.
inline constexpr int exit_nondeterminism = 4;
/// What sanitizer builds exit with on a report (their default options, linked
/// into every executable: tools/sanitizer_exit_code.cpp): a code no run uses.
inline constexpr int exit_sanitizer = 86;

/// An explore stopped by signal `sig` (SIGINT, SIGTERM) before it found any
/// failure: 128 + sig, as a shell reports a process the signal ended (130,
/// 143), so a cancelled CI job never reads as one that held.
constexpr int exit_interrupted(int sig) { return 128 + sig; }

/// The exit code a failed run of this kind gives.
constexpr int exit_code_of(sim::failure_kind kind) {
  switch (kind) {
    case sim::failure_kind::deadlock:
    case sim::failure_kind::step_budget:
    case sim::failure_kind::time_budget:
    case sim::failure_kind::liveness:
      return exit_liveness;
    case sim::failure_kind::replay_divergence:
      return exit_nondeterminism;
    case sim::failure_kind::uncaught_exception:
    case sim::failure_kind::abort:
    case sim::failure_kind::oracle:
    case sim::failure_kind::resource_exhausted:
    case sim::failure_kind::data_race:
      return exit_failed;
  }
  return exit_failed;
}

}  // namespace lockstep::cli
