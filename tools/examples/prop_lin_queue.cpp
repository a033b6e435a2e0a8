// A rapidcheck property over the array queue: rapidcheck generates each
// thread's calls, lockstep explores the program's schedules, and every
// history must be linearizable. On a failure rapidcheck shrinks the program
// and prints it; lockstep's record of the failing run, which holds the
// program (its "input"), is named in the message. With EXAMPLE_PLANTED_BUG=1
// it fails.
#include <string>
#include <utility>
#include <vector>
#include <lockstep/std.hpp>
#include <rapidcheck.h>

#define EXAMPLE_CC lockstep::sim_std
#include "queue_spec.hpp"

int main() {
  namespace lin = lockstep::testing::lin;
  namespace lt = lockstep::testing;
  const auto spec = example::queue_spec();
  const bool held = rc::check("every history of the array queue is linearizable", [&spec] {
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
    // The generated program, kept in the record; it also names the record,
    // so each case rapidcheck tries while it shrinks keeps its own.
    for (std::size_t t = 0; t < p.size(); ++t) {
      o.input += (t == 0 ? "thread 0:" : " | thread " + std::to_string(t) + ":");
      for (const lin::call& c : p[t]) o.input += " " + lin::describe(spec, c);
    }
    const lt::explore_result r = lt::explore("prop_array_queue", o, lin::body_for(spec, p));
    if (!r.failures.empty()) {
      RC_FAIL(lt::describe(r.failures.front().record) + "\n  input: " + o.input +
              "\n  record: " + r.failures.front().record_path);
    }
  });
  return held ? 0 : 1;
}
