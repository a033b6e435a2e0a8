// A test case that hangs the way code under test really does: a std::mutex
// (invisible to lockstep) held across a lockstep operation, then taken by
// another simulated thread on the same OS thread. Run by
// tools/tests/hang_watchdog.sh, which expects the watchdog's report and exit 3
// instead of a hang.
#define BOOST_TEST_MODULE hang
#include <boost/test/unit_test.hpp>

#include <mutex>

#include "sim/std.hpp"
#include "testing/boost_test.hpp"

namespace cc = lockstep::sim_std;

LOCKSTEP_TEST_CASE(real_mutex_across_a_lockstep_operation, .runs = 100) {
  std::mutex real;  // the bug: a real mutex in simulated code
  cc::atomic<int> turns{0};
  auto worker = [&] {
    if (turns.load() > 2) return;  // never: a lockstep operation before the real lock
    std::lock_guard<std::mutex> g(real);
    turns.fetch_add(1);  // a lockstep operation: the other thread may run here and block for real
  };
  cc::thread a(worker), b(worker);
  a.join();
  b.join();
}

// Held and never hanging: the watchdog says nothing about a healthy test.
LOCKSTEP_TEST_CASE(healthy, .runs = 200) {
  cc::atomic<int> x{0};
  cc::thread a([&] { ++x; }), b([&] { ++x; });
  a.join();
  b.join();
  LOCKSTEP_ASSERT(x.load() == 2);
}
