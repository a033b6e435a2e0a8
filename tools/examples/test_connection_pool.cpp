// The pool's tests under lockstep: each body is explored over seeds with the
// random and pct strategies (LOCKSTEP_TEST_CASE); with EXAMPLE_PLANTED_BUG=1
// the lost wake-up in release() must make them fail with a replayable seed.
#define BOOST_TEST_MODULE example
#include <lockstep/sim/runtime.hpp>
#include <lockstep/testing/boost_test.hpp>

#include "connection_pool.hpp"

namespace sim = lockstep::sim;

// Three clients on three cores share one connection, twice each: no
// connection is ever held twice, every client finishes (a lost wake-up is a
// deadlock), and the connection is idle again at the end.
LOCKSTEP_TEST_CASE(pool_one_connection_three_clients, .cores = 3) {
  example::connection_pool<sim::runtime> pool(rt, 1);
  sim::atomic<int> holders(rt, 0);
  auto client = [&] {
    for (int round = 0; round < 2; ++round) {
      const int c = pool.acquire();
      LOCKSTEP_ASSERT_MSG(holders.fetch_add(1) == 0, "connection " + std::to_string(c) + " held twice");
      holders.fetch_sub(1);
      pool.release(c);
    }
  };
  sim::task a = rt.spawn_on(0, "client-a", client);
  sim::task b = rt.spawn_on(1, "client-b", client);
  sim::task c = rt.spawn_on(2, "client-c", client);
  a.join();
  b.join();
  c.join();
  LOCKSTEP_ASSERT(pool.idle() == 1);
}

// Two connections, four clients on two cores: the pool never hands out more
// than it has.
LOCKSTEP_TEST_CASE(pool_never_over_committed, .cores = 2, .runs = 300) {
  example::connection_pool<sim::runtime> pool(rt, 2);
  sim::atomic<int> holders(rt, 0);
  std::vector<sim::task> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "client", [&] {
      const int c = pool.acquire();
      LOCKSTEP_ASSERT(holders.fetch_add(1) < 2);
      rt.yield_now();
      holders.fetch_sub(1);
      pool.release(c);
    }));
  }
  for (auto& t : clients) t.join();
  LOCKSTEP_ASSERT(pool.idle() == 2);
}
