// tools/scenario/run_scenario.hpp — runs a scenario as the main fiber of a
// simulated run, with the driver of the component its system holds: the
// lane router (lanes_driver.hpp) or the shard scheduler (shards_driver.hpp).
#pragma once

#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario as read_scenario returns it, checked by check_run_settings.
void run_scenario(sim::runtime& rt, const scenario& s);

}  // namespace lockstep::scenario
