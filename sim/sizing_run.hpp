// The run some strategies want before a seed's own (sim::needs_sizing_run):
// a random run of the same program and seed, which sizes pct's k (its length)
// or gives surw its profile (counted by the "profile" strategy, which makes
// random's very decisions). The CLI and the library run it with their own
// runner; what it is, and what it sets, is said once here.
#pragma once

#include <memory>

#include "executor.hpp"
#include "strategy.hpp"

namespace lockstep::sim {

/// The configuration of `c`'s sizing run (untraced, unrecorded). For surw it
/// also gives `c` the profile that run fills in.
inline run_config sizing_run_of(run_config& c) {
  run_config probe = c;
  probe.strategy = c.strategy == "surw" ? "profile" : "random";  // the same schedule; profile counts
  probe.trace = trace_mode::off;
  probe.record_decisions = false;
  if (c.strategy == "surw") probe.options.profile = c.options.profile = std::make_shared<run_profile>();
  return probe;
}

/// After the sizing run: pct's k becomes its length (at least 1).
inline void apply_sizing_run(run_config& c, const run_result& sizing) {
  if (c.strategy == "pct") c.options.pct_steps = sizing.steps == 0 ? 1 : sizing.steps;
}

}  // namespace lockstep::sim
