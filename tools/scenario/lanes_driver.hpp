// tools/scenario/lanes_driver.hpp — runs a lane-router scenario as the main
// fiber of a run (simulated or on threads): builds the real lane_router (engine/lanes.hpp),
// or one of its canaries (tools/scenario/lane_canaries.hpp) when the scenario
// plants one, with the consumer of behaviour.consumer (lane_parts.hpp: it
// takes its duration and fails as its outcomes say, containing its own
// panics); spawns the actors on their cores and runs their steps; then the
// liveness phase (every admitted item handled and, when lanes reap or the
// router was dropped, every lane closed, within liveness_ns; then the router
// is dropped and every lane must close within liveness_ns again); then the
// oracles over the event log (lane_oracles.hpp) and, under fifo, `expect`.
// A violation fails the run through check() (event_log.hpp), naming the
// oracle. One source for both backends: instantiated for sim::runtime and
// threads::runtime.
#pragma once

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario must hold lanes, and its actors' cores must be below rt.cores()
/// (scenario_reader.hpp: read_scenario and check_run_settings).
template <class Rt>
void run_lanes_scenario(Rt& rt, const scenario& s);
extern template void run_lanes_scenario<sim::runtime>(sim::runtime&, const scenario&);
extern template void run_lanes_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
