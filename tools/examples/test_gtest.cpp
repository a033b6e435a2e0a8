// The same pool test under GoogleTest (LOCKSTEP_TEST), to show the other
// integration; built only when GoogleTest is found.
#include <lockstep/sim/runtime.hpp>
#include <lockstep/testing/gtest.hpp>

#include "connection_pool.hpp"

namespace sim = lockstep::sim;

LOCKSTEP_TEST(pool, one_connection_three_clients, .cores = 3) {
  example::connection_pool<sim::runtime> pool(rt, 1);
  auto client = [&] {
    for (int round = 0; round < 2; ++round) pool.release(pool.acquire());
  };
  sim::task a = rt.spawn_on(0, "client-a", client);
  sim::task b = rt.spawn_on(1, "client-b", client);
  sim::task c = rt.spawn_on(2, "client-c", client);
  a.join();
  b.join();
  c.join();
  LOCKSTEP_ASSERT(pool.idle() == 1);
}
