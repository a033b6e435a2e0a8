#include "tools/scenario/run_scenario.hpp"

#include "tools/scenario/composed_driver.hpp"
#include "tools/scenario/flights_driver.hpp"
#include "tools/scenario/lanes_driver.hpp"
#include "tools/scenario/shards_driver.hpp"

namespace lockstep::scenario {

void run_scenario(sim::runtime& rt, const scenario& s) {
  // The reader guarantees one component, or a wiring for several.
  if (s.composed()) {
    run_composed_scenario(rt, s);
  } else if (s.shards) {
    run_shards_scenario(rt, s);
  } else if (s.single_flight) {
    run_flights_scenario(rt, s);
  } else {
    run_lanes_scenario(rt, s);
  }
}

}  // namespace lockstep::scenario
