// The three tests of the Relacy comparison (lost update, single flight, three
// preemptions), written with LOCKSTEP_TEST_CASE, to read line by line beside
// their Relacy versions (rl::test_suite, before/thread/after, RL_ASSERT): a
// Relacy thread is a fiber on its own simulated core (.cores = threads),
// before()/after() are the body's code around the spawns and joins, RL_ASSERT
// is LOCKSTEP_ASSERT. Relacy's `Buggy` template parameter is
// EXAMPLE_PLANTED_BUG here: the fixed variants must hold on every seed, the
// buggy ones must fail.
#include <lockstep/sim/runtime.hpp>
#include <lockstep/testing/boost_test.hpp>

#ifndef EXAMPLE_PLANTED_BUG
#define EXAMPLE_PLANTED_BUG 0
#endif

namespace sim = lockstep::sim;

namespace {
constexpr bool buggy = EXAMPLE_PLANTED_BUG != 0;
}  // namespace

// (a) lost update: two threads each do x.store(x.load() + 1).
// Fixed: the load and the store are one critical section under m.
LOCKSTEP_TEST_CASE(relacy_lost_update, .cores = 2) {
  sim::atomic<int> x(rt, 0);
  sim::mutex m(rt);
  auto body = [&] {
    if constexpr (buggy) {
      int v = x.load();
      x.store(v + 1);
    } else {
      m.lock();
      int v = x.load();
      x.store(v + 1);
      m.unlock();
    }
  };
  sim::task t0 = rt.spawn_on(0, "t0", body);
  sim::task t1 = rt.spawn_on(1, "t1", body);
  t0.join();
  t1.join();
  LOCKSTEP_ASSERT(x.load() == 2);
}

// (b) single flight: a worker moves RUNNING -> PUBLISHING, a canceller moves
// RUNNING -> CANCELLED, each decided by load-then-store. The winner writes the
// result slot under m. Assertion: not both succeed.
// Fixed: each transition is one compare_exchange.
namespace {
enum : int { running = 0, publishing = 1, cancelled = 2, done = 3 };
}  // namespace

LOCKSTEP_TEST_CASE(relacy_single_flight, .cores = 2) {
  sim::atomic<int> state(rt, running);
  sim::mutex m(rt);
  int result = 0;  // guarded by m
  bool published = false, was_cancelled = false;
  auto claim = [&](int to) {
    if constexpr (buggy) {
      if (state.load() != running) return false;
      state.store(to);
      return true;
    } else {
      int expected = running;
      return state.compare_exchange(expected, to);
    }
  };
  sim::task worker = rt.spawn_on(0, "worker", [&] {
    if (claim(publishing)) {
      m.lock();
      result = 42;
      m.unlock();
      state.store(done);
      published = true;
    }
  });
  sim::task canceller = rt.spawn_on(1, "canceller", [&] {
    if (claim(cancelled)) {
      m.lock();
      result = -1;
      m.unlock();
      was_cancelled = true;
    }
  });
  worker.join();
  canceller.join();
  (void)result;
  LOCKSTEP_ASSERT(!(published && was_cancelled));
}

// (c) three preemptions. Each thread runs 20 operations; "pad" is one
// operation on the thread's own atomic (pad[t].fetch_add(1)).
//   T0: 5 pads; a=1; a=0; rc=c.load();                 12 pads
//   T1: 10 pads; ra=a.load(); if (ra) {b=1; b=0} else {pad; pad}; 7 pads
//   T2: 15 pads; rb=b.load(); if (rb) {c=1; c=0} else {pad; pad}; 2 pads
// Assertion (after join): rc != 1. It fails only if three one-operation
// windows are each hit, in order. Fixed: every access to a, b, c is under m.
// Random only, and more seeds: random finds the buggy variant about once in
// 2,500 runs, and pct at its default depth 3 cannot (two change points, three
// preemptions needed; see the Relacy comparison's README).
LOCKSTEP_TEST_CASE(relacy_three_windows, .cores = 3, .runs = 20000, .strategies = {"random"}) {
  sim::atomic<int> a(rt, 0), b(rt, 0), c(rt, 0);
  sim::atomic<int> pad0(rt, 0), pad1(rt, 0), pad2(rt, 0);
  sim::mutex m(rt);
  int rc = 0;
  auto pads = [](sim::atomic<int>& p, int n) {
    for (int i = 0; i < n; ++i) p.fetch_add(1);
  };
  sim::task t0 = rt.spawn_on(0, "t0", [&] {
    pads(pad0, 5);
    if constexpr (!buggy) m.lock();
    a.store(1);
    a.store(0);
    if constexpr (!buggy) m.unlock();
    if constexpr (!buggy) m.lock();
    rc = c.load();
    if constexpr (!buggy) m.unlock();
    pads(pad0, 12);
  });
  sim::task t1 = rt.spawn_on(1, "t1", [&] {
    pads(pad1, 10);
    if constexpr (!buggy) m.lock();
    int ra = a.load();
    if constexpr (!buggy) m.unlock();
    if constexpr (!buggy) m.lock();
    if (ra == 1) {
      b.store(1);
      b.store(0);
    } else {
      pads(pad1, 2);
    }
    if constexpr (!buggy) m.unlock();
    pads(pad1, 7);
  });
  sim::task t2 = rt.spawn_on(2, "t2", [&] {
    pads(pad2, 15);
    if constexpr (!buggy) m.lock();
    int rb = b.load();
    if constexpr (!buggy) m.unlock();
    if constexpr (!buggy) m.lock();
    if (rb == 1) {
      c.store(1);
      c.store(0);
    } else {
      pads(pad2, 2);
    }
    if constexpr (!buggy) m.unlock();
    pads(pad2, 2);
  });
  t0.join();
  t1.join();
  t2.join();
  LOCKSTEP_ASSERT(rc != 1);
}
