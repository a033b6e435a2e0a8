// tools/scenario/flights_driver.hpp — runs a single-flight scenario as the
// main fiber of a run (simulated or on threads): builds the real single_flight table
// (engine/single_flight.hpp), with the bug a canary names planted in it
// (engine/plant.hpp). Each join step starts waiter fibers on its actor's core; a waiter that
// leads starts the worker, which does what behaviour.worker says; a waiter
// with leave_after_ns is cancelled that long after it starts (it drops its
// share). Then the liveness phase: every waiter and worker must have ended
// within liveness_ns; then the oracles over the log (flight_oracles.hpp)
// and, under fifo, `expect`. The table's own check_invariants() is never
// called, so the oracles stand alone.
#pragma once

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario must hold single_flight, and its actors' cores must be below
/// rt.cores() (scenario_reader.hpp: read_scenario and check_run_settings).
template <class Rt>
void run_flights_scenario(Rt& rt, const scenario& s);
extern template void run_flights_scenario<sim::runtime>(sim::runtime&, const scenario&);
extern template void run_flights_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
