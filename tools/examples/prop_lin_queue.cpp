// A rapidcheck property over the array queue: rapidcheck generates each
// thread's calls, lockstep explores the program's schedules, and every
// history must be linearizable. On a failure rapidcheck shrinks the program
// and prints it with lockstep's report: the record of the failing run holds
// the program (its "input"), and the printed command replays it in one step,
//   LOCKSTEP_REPLAY=<record> ./example_prop_lin_queue
// which rebuilds the program from the record instead of generating one.
// With EXAMPLE_PLANTED_BUG=1 it fails.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <lockstep/std.hpp>
#include <lockstep/testing/test_case.hpp>
#include <rapidcheck.h>

#define EXAMPLE_CC lockstep::sim_std
#include "queue_spec.hpp"

int main(int, char** argv) {
  namespace lin = lockstep::testing::lin;
  namespace lt = lockstep::testing;
  const auto spec = example::queue_spec();
  const std::string test = "prop_array_queue", rerun = lt::shell_quoted(argv[0]);
  // LOCKSTEP_REPLAY=<record>: the record's program, rebuilt from its input, replayed.
  const auto replayed = lt::replay_property_case(test, [&spec](const std::string& input) -> std::optional<lt::test_body> {
    const std::optional<lin::program> p = lin::parse_program(spec, input);
    if (!p) return std::nullopt;
    return lin::body_for(spec, *p);
  }, rerun);
  if (replayed) {
    std::fputs(replayed->report.c_str(), stdout);
    return replayed->passed ? 0 : 1;
  }
  const bool held = rc::check("every history of the array queue is linearizable", [&] {
    // Two or three threads of one to three calls: (pop?, value in 1..3).
    const auto threads = *rc::gen::inRange<std::size_t>(2, 4);
    lin::program p;
    for (std::size_t t = 0; t < threads; ++t) {
      const auto calls = *rc::gen::container<std::vector<std::pair<bool, int>>>(
          *rc::gen::inRange<std::size_t>(1, 4), rc::gen::pair(rc::gen::arbitrary<bool>(), rc::gen::inRange(1, 4)));
      std::vector<lin::call> thread;
      for (const auto& [pop, v] : calls) thread.push_back(lin::call{pop ? 1U : 0U, v});
      p.push_back(std::move(thread));
    }
    lt::test_options o;
    o.runs = 50;
    o.record_dir = "lockstep-failures";
    // The generated program, kept in the record (replay rebuilds it from
    // there); it also names the record, so each case rapidcheck tries while
    // it shrinks keeps its own.
    o.input = lin::program_text(spec, p);
    const lt::case_outcome c = lt::run_test_case(test, o, lin::body_for(spec, p), rerun);
    if (!c.passed) RC_FAIL(c.report);
  });
  return held ? 0 : 1;
}
