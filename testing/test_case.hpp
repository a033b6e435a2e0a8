// One test case as a test framework sees it: explore the body (or, with
// LOCKSTEP_REPLAY set, replay a record) and say whether it passed and what to
// print. The framework glue (boost_test.hpp, gtest.hpp) only names the test,
// says how to rerun it, and reports the outcome its own way.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "explore.hpp"

namespace lockstep::testing {

struct case_outcome {
  bool passed = true;
  std::string report;  ///< lines to print, each ending in '\n' (empty when there is nothing to say)
  /// Where the (first) failure's assertion is, when it was a LOCKSTEP_ASSERT:
  /// the framework reports the failure at that line rather than its own.
  sim::code_site where{nullptr, 0};
  /// A replay the user asked for (LOCKSTEP_REPLAY): its verdict is printed
  /// even when it passes ("no longer fails"), not only at a verbose log level.
  bool replayed = false;
};

/// Runs test `test`: options from `o` and the environment (apply_environment);
/// each failure's report names seed, strategy, the oracle or exception, the
/// record's path and the one command that replays it:
///   LOCKSTEP_REPLAY=<record> <rerun>
/// where `rerun` runs just this test from the user's binary (e.g.
/// "./my_tests --run_test=suite/name"). With LOCKSTEP_REPLAY=<record> set the
/// record is replayed instead (a record of another test is skipped, passing);
/// LOCKSTEP_TRACE=<file> then writes the replay's JSON Lines trace. Bad input
/// (a variable, a record) prints one line naming it and exits 2.
case_outcome run_test_case(const std::string& test, test_options o, const test_body& body,
                           const std::string& rerun);

/// What rebuilds a property's case from its record: the body of the case
/// whose input (test_options::input) is `input`, or nullopt when the text is
/// not one this property writes.
using case_of_input = std::function<std::optional<test_body>(const std::string& input)>;

/// A property's side of LOCKSTEP_REPLAY, so that one command replays a
/// record of one generated case: with LOCKSTEP_REPLAY=<record> set, the case
/// is rebuilt from the record's input by `case_of` and replayed as
/// run_test_case replays (LOCKSTEP_REPLAY_CONTINUE and LOCKSTEP_TRACE too);
/// nullopt when LOCKSTEP_REPLAY is not set, and the property runs. Call it
/// before the property generates anything. A record of another test is
/// skipped (passed); one whose input `case_of` cannot rebuild is bad input
/// (one line, exit 2).
std::optional<case_outcome> replay_property_case(const std::string& test, const case_of_input& case_of,
                                                 const std::string& rerun);

}  // namespace lockstep::testing
