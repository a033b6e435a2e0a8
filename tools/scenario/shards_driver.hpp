// tools/scenario/shards_driver.hpp — runs a shard-scheduler scenario as the
// main fiber of a run (simulated or on threads): starts system.shards.count real shard
// reactors (engine/shard.hpp), shard i on core i % cores, behind the real
// router (engine/router.hpp), with a processor that does what
// behaviour.processor says and logs every call (shard_events.hpp); a
// planted bug is one of the engine's own canary switches. The actors run
// their steps; then the liveness phase: the router is dropped (if no
// shutdown step did) and every shard must drain, flush and exit within
// liveness_ns; then the oracles over the log (shard_oracles.hpp) and, under
// fifo, `expect`. The engine's own check_invariants() stays off, so the
// oracles stand alone and a run means the same in every build type.
#pragma once

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario must hold shards, and its actors' cores must be below
/// rt.cores() (scenario_reader.hpp: read_scenario and check_run_settings).
template <class Rt>
void run_shards_scenario(Rt& rt, const scenario& s);
extern template void run_shards_scenario<sim::runtime>(sim::runtime&, const scenario&);
extern template void run_shards_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
