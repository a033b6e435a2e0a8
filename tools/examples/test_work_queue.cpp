// The work queue, written against std's names, tested under lockstep by
// switching its namespace alias to lockstep::sim_std: its threads preempt,
// its condition variables may wake spuriously, and with EXAMPLE_PLANTED_BUG=1
// the queue's notify_one-instead-of-notify_all and the configuration's broken
// double-checked lock must each be found with a replayable seed.
#include <lockstep/std.hpp>
#include <lockstep/testing/boost_test.hpp>
#include <mutex>

#define EXAMPLE_CC lockstep::sim_std
#include "lazy_config.hpp"
#include "work_queue.hpp"

namespace cc = lockstep::sim_std;

// Two producers, two consumers, a queue of one: every item arrives once.
LOCKSTEP_TEST_CASE(work_queue_two_producers_two_consumers, .runs = 500) {
  example::work_queue<int> q(1);
  cc::atomic<int> sum{0};
  auto produce = [&](int first) {
    for (int i = first; i < first + 2; ++i) q.push(i);
  };
  auto consume = [&] {
    for (int i = 0; i < 2; ++i) sum += q.pop();
  };
  cc::thread p1(produce, 1), p2(produce, 10), c1(consume), c2(consume);
  p1.join();
  p2.join();
  c1.join();
  c2.join();
  LOCKSTEP_ASSERT(sum.load() == 1 + 2 + 10 + 11);
}

// Three threads ask for the port at once: every one reads the built value.
LOCKSTEP_TEST_CASE(lazy_config_three_readers) {
  example::lazy_config config;
  auto reader = [&] { LOCKSTEP_ASSERT(config.port() == 8080); };
  cc::thread a(reader), b(reader), c(reader);
  a.join();
  b.join();
  c.join();
}

// Two threads each do x.store(x.load() + 1): with EXAMPLE_PLANTED_BUG=1 a lost
// update (a thread is preempted between its load and its store), else under a mutex.
LOCKSTEP_TEST_CASE(std_lost_update) {
  cc::atomic<int> x{0};
  cc::mutex m;
  auto bump = [&] {
#if !EXAMPLE_PLANTED_BUG
    cc::lock_guard<cc::mutex> g(m);
#endif
    x.store(x.load() + 1);
  };
  cc::thread t0(bump), t1(bump);
  t0.join();
  t1.join();
  LOCKSTEP_ASSERT(x.load() == 2);
}

// The same lost update on a plain int, shared through lockstep::var (which is
// how lockstep sees plain memory): with EXAMPLE_PLANTED_BUG=1 the unguarded
// `hits += 1` of two threads is reported as a data race, naming both lines,
// on the first seed; else a mutex orders the two updates.
LOCKSTEP_TEST_CASE(std_plain_int_lost_update) {
  lockstep::var<int> hits{0, "hits"};
  cc::mutex m;
  auto bump = [&] {
#if !EXAMPLE_PLANTED_BUG
    cc::lock_guard<cc::mutex> g(m);
#endif
    hits += 1;
  };
  cc::thread t0(bump), t1(bump);
  t0.join();
  t1.join();
  LOCKSTEP_ASSERT(hits.load() == 2);
}

// A real std::mutex left in code under test (EXAMPLE_PLANTED_BUG=1): lockstep
// cannot see it, so when one simulated thread holds it across a lockstep
// operation and another takes it, the one OS thread that runs the simulation
// blocks. The watchdog reports it after .hang_limit_s seconds (the fiber, its
// last lockstep operation and line, the seed, a rerun command) and exits 3:
// never a silent hang. Fixed: the simulated mutex.
LOCKSTEP_TEST_CASE(std_mutex_misuse, .runs = 100, .hang_limit_s = 1) {
#if EXAMPLE_PLANTED_BUG
  std::mutex m;
#else
  cc::mutex m;
#endif
  cc::atomic<int> served{0};
  auto serve = [&] {
    if (served.load() == 2) return;  // never: a lockstep operation before taking m
    std::lock_guard<decltype(m)> g(m);
    served.fetch_add(1);  // a lockstep operation while holding m
  };
  cc::thread a(serve), b(serve);
  a.join();
  b.join();
  LOCKSTEP_ASSERT(served.load() == 2);
}
