// tools/scenario/composed_driver.hpp — runs a composed scenario as the main
// fiber of a run (simulated or on threads): the lane router in front (lanes_driver's pieces,
// lane_parts.hpp), whose consumer, for each item, joins the single-flight
// table on key % lookup_key_mod (flight_parts.hpp: the same waiter and worker
// as flights_driver) and, after an ok answer, submits the item to the shards
// (shard_parts.hpp: the same shards and processor as shards_driver), as
// system.wiring says. Each component logs into its own event log; the
// consumer logs what passed between them into a fourth (composed_events.hpp).
// Liveness covers every component in the order the items flow: the lanes
// drain and close, the flights' waiters and workers end, the shards drain,
// flush and exit — each within liveness_ns. Then every enabled oracle of every
// component over its own log, and `delivery` (composed_oracles.hpp) over all
// four. One source for both backends, through the templated parts: on
// threads each log is merged by its own sequence before the oracles read it,
// and `delivery` joins the four by item ids, never by their interleaving.
#pragma once

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario must be composed (s.composed()), its actors' cores below rt.cores().
template <class Rt>
void run_composed_scenario(Rt& rt, const scenario& s);
extern template void run_composed_scenario<sim::runtime>(sim::runtime&, const scenario&);
extern template void run_composed_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
