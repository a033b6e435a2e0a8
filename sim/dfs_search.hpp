// The bounded search's loop (dfs.hpp): one run per schedule until the tree is
// exhausted, a run fails, or the caller's budget ends it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dfs.hpp"
#include "executor.hpp"

namespace lockstep::sim {

/// What a bounded search found.
struct dfs_outcome {
  std::uint64_t schedules = 0;        ///< runs made
  bool exhausted = false;             ///< every schedule within the bounds ran, none failed
  std::optional<run_result> failure;  ///< the first failing run; its decisions replay it
  std::string nondeterminism;         ///< set when the program did not repeat itself
  std::uint64_t fair_tail_runs = 0;   ///< runs that reached the fair tail
  std::uint64_t sleep_blocked_runs = 0;  ///< dpor: runs ended without branching, every runnable fiber asleep
  std::size_t deepest = 0;            ///< decisions on the longest path
  std::string position;               ///< where it stopped, when it stopped early
};

/// Searches the schedules of `config` (its seed, cores and budgets; strategy
/// and options.dfs are set here) within `bounds`. `run_one(config)` runs the
/// program once; `stop()` is asked after each run that held, as is
/// `max_schedules` (0: none). `start`: resume at a position (dfs_tree::start_at).
template <class RunOne, class Stop>
dfs_outcome search_dfs(run_config config, const dfs_bounds& bounds, std::uint64_t max_schedules, RunOne&& run_one,
                       Stop&& stop, std::vector<std::uint32_t> start = {}) {
  auto tree = std::make_shared<dfs_tree>(bounds);
  tree->start_at(std::move(start));
  config.strategy = "dfs";
  config.options.dfs = tree;
  dfs_outcome out;
  for (;;) {
    run_result r = run_one(static_cast<const run_config&>(config));
    ++out.schedules;
    if (!r.ok()) {
      out.failure = std::move(r);
      break;
    }
    if (!tree->advance()) {
      out.nondeterminism = tree->nondeterminism();
      out.exhausted = out.nondeterminism.empty();
      break;
    }
    if ((max_schedules != 0 && out.schedules >= max_schedules) || stop()) {
      out.position = tree->position();
      break;
    }
  }
  out.fair_tail_runs = tree->fair_tail_runs();
  out.sleep_blocked_runs = tree->sleep_blocked_runs();
  out.deepest = tree->deepest();
  return out;
}

}  // namespace lockstep::sim
