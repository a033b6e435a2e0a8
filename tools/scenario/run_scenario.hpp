// tools/scenario/run_scenario.hpp — runs a scenario as the main fiber of a
// run, with the driver of the component its system holds: the lane router
// (lanes_driver.hpp), the shard scheduler (shards_driver.hpp) or the
// single-flight table (flights_driver.hpp). One driver source serves both
// backends (event_log.hpp): a simulated run (sim::runtime) and a run on the
// real pinned threads (threads::runtime, run_threads_scenario).
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
/// hold under the simulator's fifo schedule only), the lane router's
/// canaries (models written for the simulator), panic_policy "abort" (on
/// threads it ends the process, as the seed's PanicPolicy::Abort does).
/// Throws cli::input_error naming the file and the pointer.
void check_threads_settings(const scenario& s);

/// `s` with every duration (steps, behaviour, system timings, liveness_ns)
/// multiplied by `scale`, saturating: a threads run's clock is real, and a
/// virtual nanosecond is shorter than a thread's wake-up.
scenario scaled_durations(const scenario& s, std::uint64_t scale);

/// Runs `s` (checked and scaled) on a threads::runtime of `cores` cores (one
/// pinned OS thread each). It returns when every oracle held; a violated one
/// ends the process with its exit code (event_log.hpp: threads_verdict).
void run_threads_scenario(const scenario& s, std::uint32_t cores);

}  // namespace lockstep::scenario
