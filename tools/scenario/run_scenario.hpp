// tools/scenario/run_scenario.hpp — runs a scenario as the main fiber of a
// simulated run, with the driver of the component its system holds: the
// lane router (lanes_driver.hpp), the shard scheduler (shards_driver.hpp),
// the single-flight table (flights_driver.hpp) or a composition of them
// (composed_driver.hpp); and the whole run, with expect_failure applied.
#pragma once

#include "sim/runtime.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// The scenario as read_scenario returns it, checked by check_run_settings.
void run_scenario(sim::runtime& rt, const scenario& s);

/// One simulated run of `s`. With s.expect_failure, the verdict is turned
/// round: a run ending in the expected failure holds; one that holds, or
/// ends in another failure, fails the `expect_failure` oracle, saying what
/// was expected and what happened. The trace (and its hash) is the run's own
/// either way, so a record of it replays. A replay divergence is never
/// turned round: it is not the scenario's verdict.
sim::run_result run_scenario(const sim::run_config& config, const scenario& s);

}  // namespace lockstep::scenario
