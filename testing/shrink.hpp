// Schedule shrinking for a failing test case (the library's side of
// `lockstep shrink`'s schedule phase): rerun the failure under the guided
// strategy (sim/strategy_guided.cpp) and take preemptions out while it still
// fails the same way: first by cutting the decision list short before its
// k-th preemption (past the cut no fiber is preempted), then one preemption
// at a time (the preempted fiber goes on instead). Greedy and deterministic.
// "The same way": the same failure kind, and for an assertion the same line.
#pragma once

#include <cstdint>

#include "explore.hpp"
#include "test_record.hpp"

namespace lockstep::testing {

struct shrink_result {
  bool shrunk = false;  ///< fewer preemptions than the record's run
  std::size_t preemptions_before = 0;
  std::size_t preemptions_after = 0;
  std::uint64_t runs = 0;  ///< candidate runs made
  test_record record;      ///< the smaller failing run (the input's when nothing shrank); replays with replay()
};

shrink_result shrink(const test_record& failing, const test_body& body, std::uint64_t max_runs = 500);

}  // namespace lockstep::testing
