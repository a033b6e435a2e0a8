#include "tools/scenario/run_scenario.hpp"

#include <string>

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

sim::run_result run_scenario(const sim::run_config& config, const scenario& s) {
  sim::run_result r = sim::run(config, [&s](sim::runtime& rt) { run_scenario(rt, s); });
  if (!s.expect_failure) return r;
  if (r.failed && r.failed->kind == sim::failure_kind::replay_divergence) return r;
  const failure_expectation& x = *s.expect_failure;
  const std::string wanted =
      "the run to end in " + x.kind + (x.contains.empty() ? std::string() : " with \"" + x.contains + "\"");
  if (r.failed && sim::to_string(r.failed->kind) == x.kind &&
      r.failed->message.find(x.contains) != std::string::npos) {
    r.failed.reset();  // the failure the file expects: the scenario holds
    return r;
  }
  sim::failure f;
  f.kind = sim::failure_kind::oracle;
  f.step = r.failed ? r.failed->step : r.steps;
  f.message = "oracle 'expect_failure' failed: expected " + wanted + ", but the expected " + x.kind +
              " did not happen: " +
              (r.failed ? "it ended in " + std::string(sim::to_string(r.failed->kind)) + ": " + r.failed->message
                        : std::string("every oracle held"));
  r.failed = f;
  return r;
}

}  // namespace lockstep::scenario
