// The fields every lockstep failure record shares, whoever writes it: the
// CLI (a scenario's record, tools/failure_record.cpp) and the library (a
// test's record, test_record.cpp). One writer keeps the two formats from
// drifting apart; what differs (the scenario or the test's name) each adds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "../sim/executor.hpp"

namespace lockstep::testing {

/// The largest timer jitter a record (or --timer-jitter) may ask for: 1,000 virtual seconds.
inline constexpr std::uint64_t max_timer_jitter_ns = 1'000'000'000'000;

/// Writes seed, strategy, cores, pct options, budgets, timer choices, decisions, steps,
/// trace hash and, when the run failed, the failure into `j`.
inline void write_run_fields(nlohmann::json& j, const sim::run_config& config, const sim::run_result& result) {
  j["lockstep_failure_record"] = 1;
  j["seed"] = config.seed;
  j["strategy"] = config.strategy;
  j["cores"] = config.cores;
  j["pct_depth"] = config.options.pct_depth;
  j["pct_steps"] = config.options.pct_steps;
  j["max_steps"] = config.max_steps;
  j["max_time_ns"] = config.max_time_ns;
  // Written only when on: records of runs without them read as before.
  if (config.timer_ties) j["timer_ties"] = true;
  if (config.timer_jitter_ns != 0) j["timer_jitter_ns"] = config.timer_jitter_ns;
  j["decisions"] = result.decisions;
  j["steps"] = result.steps;
  j["trace_hash"] = sim::hash_hex(result.trace_hash);
  if (result.failed) {
    j["failure"] = {{"kind", std::string(sim::to_string(result.failed->kind))}, {"message", result.failed->message}};
  }
}

}  // namespace lockstep::testing
