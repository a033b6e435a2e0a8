// The array queue checked for linearizability: lockstep generates small
// programs of push and pop calls (two or three threads, smallest first),
// explores each over many schedules and checks every history against a
// std::deque. With EXAMPLE_PLANTED_BUG=1 it fails, printing the smallest
// non-linearizable history as a table of threads by calls.
#include <boost/test/unit_test.hpp>
#include <lockstep/std.hpp>

#define EXAMPLE_CC lockstep::sim_std
#include "queue_spec.hpp"

BOOST_AUTO_TEST_CASE(array_queue_is_linearizable) {
  namespace lin = lockstep::testing::lin;
  const auto spec = example::queue_spec();
  lin::check_options o;
  o.programs_per_size = 5;
  o.explore.runs = 100;
  o.explore.record_dir = "lockstep-failures";
  const lin::check_result r = lin::check("array_queue", spec, o);
  BOOST_TEST(r.linearizable, "lockstep: " << r.report);
}
