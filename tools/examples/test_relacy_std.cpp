// The three tests of the Relacy comparison again (test_relacy_ports.cpp holds
// them on lockstep's runtime), written against the standard's names through
// lockstep::sim_std, as a user who already has std::thread code would write
// them: std::thread in place of Relacy's threads, std::atomic and std::mutex
// in place of rl::atomic and rl::mutex. EXAMPLE_PLANTED_BUG=1 selects
// Relacy's buggy variants, which must fail; the fixed ones must hold.
#include <lockstep/sim/std.hpp>
#include <lockstep/testing/boost_test.hpp>

#ifndef EXAMPLE_PLANTED_BUG
#define EXAMPLE_PLANTED_BUG 0
#endif

namespace cc = lockstep::sim_std;

namespace {
constexpr bool planted = EXAMPLE_PLANTED_BUG != 0;
enum : int { running = 0, publishing = 1, cancelled = 2, done = 3 };
}  // namespace

// (a) lost update: two threads each do x.store(x.load() + 1).
LOCKSTEP_TEST_CASE(relacy_std_lost_update) {
  cc::atomic<int> x{0};
  cc::mutex m;
  auto body = [&] {
    if constexpr (!planted) m.lock();
    int v = x.load();
    x.store(v + 1);
    if constexpr (!planted) m.unlock();
  };
  cc::thread t0(body), t1(body);
  t0.join();
  t1.join();
  LOCKSTEP_ASSERT(x.load() == 2);
}

// (b) single flight: a worker and a canceller each claim the state; not both may win.
LOCKSTEP_TEST_CASE(relacy_std_single_flight) {
  cc::atomic<int> state{running};
  cc::mutex m;
  int result = 0;  // guarded by m
  bool published = false, was_cancelled = false;
  auto claim = [&](int to) {
    if constexpr (planted) {
      if (state.load() != running) return false;
      state.store(to);
      return true;
    } else {
      int expected = running;
      return state.compare_exchange_strong(expected, to);
    }
  };
  cc::thread worker([&] {
    if (claim(publishing)) {
      cc::lock_guard<cc::mutex> g(m);
      result = 42;
      state.store(done);
      published = true;
    }
  });
  cc::thread canceller([&] {
    if (claim(cancelled)) {
      cc::lock_guard<cc::mutex> g(m);
      result = -1;
      was_cancelled = true;
    }
  });
  worker.join();
  canceller.join();
  (void)result;
  LOCKSTEP_ASSERT(!(published && was_cancelled));
}

// (c) three preemptions, each in a one-operation window (test_relacy_ports.cpp
// says how the 20 operations per thread are laid out).
LOCKSTEP_TEST_CASE(relacy_std_three_windows, .runs = 20000, .strategies = {"random"}) {
  cc::atomic<int> a{0}, b{0}, c{0};
  cc::atomic<int> pad[3];
  cc::mutex m;
  int rc = 0;
  auto pads = [&](int t, int n) {
    for (int i = 0; i < n; ++i) pad[t].fetch_add(1);
  };
  auto guarded = [&](auto f) {
    if constexpr (!planted) m.lock();
    f();
    if constexpr (!planted) m.unlock();
  };
  cc::thread t0([&] {
    pads(0, 5);
    guarded([&] {
      a.store(1);
      a.store(0);
    });
    guarded([&] { rc = c.load(); });
    pads(0, 12);
  });
  cc::thread t1([&] {
    pads(1, 10);
    int ra = 0;
    guarded([&] { ra = a.load(); });
    guarded([&] {
      if (ra == 1) {
        b.store(1);
        b.store(0);
      } else {
        pads(1, 2);
      }
    });
    pads(1, 7);
  });
  cc::thread t2([&] {
    pads(2, 15);
    int rb = 0;
    guarded([&] { rb = b.load(); });
    guarded([&] {
      if (rb == 1) {
        c.store(1);
        c.store(0);
      } else {
        pads(2, 2);
      }
    });
    pads(2, 2);
  });
  t0.join();
  t1.join();
  t2.join();
  LOCKSTEP_ASSERT(rc != 1);
}
