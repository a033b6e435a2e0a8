// tools/scenario/run_scenario.hpp — runs a scenario as the main fiber of a
// run, with the driver of the component its system holds: the lane router
// (lanes_driver.hpp), the shard scheduler (shards_driver.hpp), the
// single-flight table (flights_driver.hpp) or, in the simulator only, a
// composition of them (composed_driver.hpp); and the whole simulated run,
// with expect_failure applied. One driver source serves both backends for a
// single component (event_log.hpp): a simulated run (sim::runtime) and a run
// on the real pinned threads (threads::runtime, run_threads_scenario).
#pragma once

#include <cstdint>

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario as read_scenario returns it, checked by check_run_settings
/// (and, on threads, by check_threads_settings and scaled by scaled_durations).
template <class Rt>
void run_scenario(Rt& rt, const scenario& s);
extern template void run_scenario<sim::runtime>(sim::runtime&, const scenario&);
extern template void run_scenario<threads::runtime>(threads::runtime&, const scenario&);

/// What cannot run on real threads: `expect` (exact counts and orders that
/// hold under the simulator's fifo schedule only), composed systems (their
/// driver is built for the simulator), `expect_failure` (a threads failure
/// ends the process, there is no verdict to turn round), the lane router's
/// canaries (models written for the simulator), panic_policy "abort" (on
/// threads it ends the process, as the seed's PanicPolicy::Abort does).
/// Throws cli::input_error naming the file and the pointer.
void check_threads_settings(const scenario& s);

/// `s` with every duration (steps, behaviour, system timings, liveness_ns)
/// multiplied by `scale`, saturating: a threads run's clock is real, and a
/// virtual nanosecond is shorter than a thread's wake-up.
scenario scaled_durations(const scenario& s, std::uint64_t scale);

/// How long a run of `s` may take before a verdict, in the scenario's own
/// time: its longest actor's own sleeps and gaps (and a liveness budget for
/// each of its wait_until steps), plus one liveness budget
/// for the workload's waits (room in a mailbox, a lane, an answer) and one
/// for each liveness phase its driver has (lanes 2, shards 1, single-flight
/// 1; composed, the sum). On the simulator the executor's budgets catch a
/// hang; a threads run has only this (run_threads_scenario's watchdog).
/// Saturates at INT64_MAX.
std::int64_t run_budget_ns(const scenario& s);

/// The watchdog's margin over a threads run's budget, in real ns: what a
/// loaded machine (or a sanitizer build) may add to a run's own waits.
inline constexpr std::int64_t watchdog_margin_ns = 10'000'000'000;

/// Runs `s` (checked and scaled) on a threads::runtime of `cores` cores (one
/// pinned OS thread each). It returns when every oracle held; a violated one
/// ends the process with its exit code (event_log.hpp: threads_verdict). A
/// watchdog thread ends a run that has no verdict run_budget_ns(s) +
/// watchdog_margin_ns after it started: liveness (exit 3), naming the phase
/// the run is in and each actor still running with the step it is in.
void run_threads_scenario(const scenario& s, std::uint32_t cores);

/// One simulated run of `s`. With s.expect_failure, the verdict is turned
/// round: a run ending in the expected failure holds; one that holds, or
/// ends in another failure, fails the `expect_failure` oracle, saying what
/// was expected and what happened. The trace (and its hash) is the run's own
/// either way, so a record of it replays. A replay divergence is never
/// turned round: it is not the scenario's verdict.
sim::run_result run_scenario(const sim::run_config& config, const scenario& s);

}  // namespace lockstep::scenario
