// tools/cli/shrinker.hpp — `lockstep shrink`'s search: make a scenario
// record's failing case smaller while it fails the same oracle.
//
// Two phases, both greedy and deterministic (no randomness, no dependence on
// the wall clock except where a budget stops the search early), repeated in
// turn until neither changes anything (or a budget runs out):
//  1. the scenario, by delta debugging over its JSON document: remove actors
//     and steps (halves, then quarters, ... then one at a time, after
//     Zeller's ddmin), lower counts, narrow and merge keys, shorten gaps and
//     durations, lower the system's settings (cores with the run's, shards,
//     classes, budgets and capacities towards 1, coalescing and the abort
//     policy off), drop submissions' deadlines and request ids. Each
//     candidate must pass the scenario reader (else it is skipped) and is run
//     with the record's seed and strategy, or once the schedule has shrunk,
//     guided by the shrunk schedule;
//  2. the schedule, with the scenario fixed: run it under the guided strategy
//     (sim/strategy_guided.cpp) and take preemptions out, first by cutting the
//     decision list short (after its end no fiber is preempted), then one at
//     a time (the preempted fiber continues instead).
// A swarm run's record holds the values it drew in its scenario: they shrink
// like any other setting.
// A candidate is kept only if it fails with the same kind and oracle (the
// message may differ) and is smaller than what it replaces.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/failure_record.hpp"

namespace lockstep::cli {

/// The sizes shrink prints before and after.
struct case_size {
  std::uint64_t actors = 0;
  std::uint64_t steps = 0;        ///< workload steps over every actor
  std::uint64_t items = 0;        ///< routes, submissions and joins: the steps' counts summed
  std::uint64_t keys = 0;         ///< distinct keys the workload can use
  std::uint64_t decisions = 0;    ///< scheduling decisions of the failing run
  std::uint64_t preemptions = 0;  ///< decisions where the running fiber could go on and another ran
  std::uint64_t cores = 0;        ///< the run's cores (the record's, which shrink lowers with system.cores)
};

/// actors, steps, items and keys of a scenario document (already read once).
case_size scenario_size(const nlohmann::json& scenario);

struct shrink_limits {
  std::uint64_t max_runs = 2000;  ///< candidate runs, not counting the checks before and after
  std::uint64_t time_ms = 60'000; ///< wall clock for the search; 0: none
};

struct shrink_outcome {
  failure_record shrunk;
  case_size before;
  case_size after;
  std::string oracle;       ///< what must keep failing: "kind" or "kind oracle"
  std::uint64_t runs = 0;   ///< candidate runs made
  std::uint64_t kept = 0;   ///< candidates kept
  std::uint64_t rounds = 0; ///< passes of the scenario phase (each after the first follows a schedule that shrank)
  bool out_of_runs = false;
  bool out_of_time = false;
};

/// What failing "the same oracle" means: the kind, and for oracle and
/// liveness failures the oracle's name (explore's failure_reason).
std::string failure_signature(const sim::failure& f);

/// Shrinks a scenario record whose replay reproduced (checked by the caller).
/// The result's record replays (lockstep replay) to its own failure.
shrink_outcome shrink_record(const failure_record& rec, const shrink_limits& limits);

}  // namespace lockstep::cli
