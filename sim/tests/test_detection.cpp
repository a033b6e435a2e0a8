// Goal: every way a run can go wrong is detected, classified and explained
// with the seed — deadlock (naming each blocked fiber and what it waits on),
// step budget, virtual-time budget, uncaught exception, abort — and after
// each one the run returns and every fiber has been torn down, running the
// destructors in its frames.
#define BOOST_TEST_MODULE sim_detection
#include <boost/test/unit_test.hpp>

#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

// Counts live instances, so a test can see that teardown ran every destructor.
int live = 0;
int ever = 0;
struct tracked {
  tracked() { ++live, ++ever; }
  tracked(const tracked&) { ++live, ++ever; }
  tracked& operator=(const tracked&) = default;
  ~tracked() { --live; }
};
void reset_counts() { live = ever = 0; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// State the fibers share lives on the heap and is owned by each of them, so
// these tests hold whatever order teardown unwinds in (it is youngest first;
// see the teardown-order test at the end).
struct two_locks {
  explicit two_locks(runtime& rt) : m1(rt), m2(rt) {}
  mutex m1;
  mutex m2;
};

run_result abba(std::uint64_t seed) {
  return run(config(seed, "random", 2), [](runtime& rt) {
    tracked in_main;
    auto st = std::make_shared<two_locks>(rt);
    auto a = rt.spawn_on(0, "a", [st, t = tracked{}] {
      tracked in_frame;
      std::lock_guard g1(st->m1);
      std::lock_guard g2(st->m2);
    });
    auto b = rt.spawn_on(1, "b", [st, t = tracked{}] {
      tracked in_frame;
      std::lock_guard g2(st->m2);
      std::lock_guard g1(st->m1);
    });
    a.join();
    b.join();
  });
}

}  // namespace

// --- deadlock ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(abba_deadlock_is_found_and_each_blocked_fiber_named) {
  int deadlocks = 0;
  int clean = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      reset_counts();
      const run_result r = abba(seed);
      BOOST_TEST(live == 0);
      BOOST_TEST(ever >= 5);
      if (r.ok()) {
        ++clean;
        continue;
      }
      ++deadlocks;
      BOOST_TEST(r.failed->kind == failure_kind::deadlock);
      const std::string& msg = r.failed->message;
      BOOST_TEST(contains(msg, "'a' waits on mutex.lock"), msg);
      BOOST_TEST(contains(msg, "'b' waits on mutex.lock"), msg);
      BOOST_TEST(contains(msg, "'main' waits on the end of fiber #"), msg);
      BOOST_TEST(contains(msg, "seed " + std::to_string(seed) + ","), msg);
      // Reports print the kind first ("deadlock: <message>"): it printed "deadlock: deadlock:".
      BOOST_TEST(msg.rfind("deadlock", 0) != 0, msg);
      BOOST_TEST(r.seed == seed);
    }
  }
  BOOST_TEST_MESSAGE("ABBA: " << deadlocks << " deadlocks, " << clean << " clean runs in 300 seeds");
  BOOST_TEST(deadlocks > 0);
  BOOST_TEST(clean > 0);  // most orders do not deadlock: the detector is not crying wolf
}

BOOST_AUTO_TEST_CASE(a_receiver_nobody_sends_to_is_a_deadlock) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      reset_counts();
      auto r = run(config(seed, "random", 2), [](runtime& rt) {
        auto [tx, rx] = channel<int>::bounded(rt, 4);
        auto listener = rt.spawn_on(1, "listener", [rx = std::move(rx), t = tracked{}]() mutable {
          tracked in_frame;
          (void)rx.recv();
        });
        listener.join();  // tx is alive in this frame but never used
      });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::deadlock);
      const std::string& msg = r.failed->message;
      BOOST_TEST(contains(msg, "'listener' waits on channel.recv"), msg);
      BOOST_TEST(contains(msg, "'main' waits on the end of fiber #"), msg);
      BOOST_TEST(contains(msg, "seed " + std::to_string(seed) + ","), msg);
      BOOST_TEST(live == 0);
      BOOST_TEST(ever >= 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_fiber_blocked_while_main_returns_is_not_a_deadlock) {
  // Only a stuck main fiber is a deadlock; leftovers are torn down quietly.
  reset_counts();
  auto r = run(config(1), [](runtime& rt) {
    auto [tx, rx] = channel<int>::bounded(rt, 1);
    rt.spawn("leftover", [rx = std::move(rx), t = tracked{}]() mutable { (void)rx.recv(); });
    rt.sleep_for(5);
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(live == 0);
}

// --- budgets -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(two_fibers_yielding_forever_exhaust_the_step_budget) {
  for (std::uint32_t cores = 1; cores <= 2; ++cores) {
    BOOST_TEST_CONTEXT("cores " << cores) {
      reset_counts();
      run_config c = config(9, "random", cores);
      c.max_steps = 10'000;
      auto r = run(c, [](runtime& rt) {
        auto spin = [&rt, t = tracked{}] {
          tracked in_frame;
          while (true) rt.yield_now();
        };
        auto a = rt.spawn_on(0, "a", spin);
        rt.spawn_on(rt.cores() - 1, "b", spin);
        a.join();
      });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::step_budget);
      BOOST_TEST(contains(r.failed->message, "step budget of 10000"), r.failed->message);
      BOOST_TEST(contains(r.failed->message, "seed 9,"), r.failed->message);
      BOOST_TEST(r.steps >= 10'000u);
      BOOST_TEST(live == 0);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_spin_livelock_across_cores_is_torn_down) {
  // Regression: two fibers on two cores spin on atomics, each waiting for
  // the other's flag. The step budget catches it; teardown then resumes the
  // preempted spinners, which never reach an await point (atomics are only
  // scheduling points). Teardown used to loop forever; it now has its own
  // step budget and falls back to Boost's forced unwind.
  reset_counts();
  run_config c = config(3, "random", 2);
  c.max_steps = 10'000;
  auto r = run(c, [](runtime& rt) {
    struct flags {
      explicit flags(runtime& r) : mine(r, 0), theirs(r, 0) {}
      atomic<int> mine;
      atomic<int> theirs;
    };
    auto st = std::make_shared<flags>(rt);
    auto a = rt.spawn_on(0, "a", [st, t = tracked{}] {
      while (st->theirs.load() == 0) {
      }
    });
    auto b = rt.spawn_on(1, "b", [st, t = tracked{}] {
      while (st->mine.load() == 0) {
      }
    });
    a.join();
    b.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::step_budget);
  BOOST_TEST(live == 0);
}

BOOST_AUTO_TEST_CASE(sleeping_past_the_time_budget_is_a_time_budget_failure) {
  reset_counts();
  run_config c = config(4, "random", 2);
  c.max_time_ns = 1'000'000;
  auto r = run(c, [](runtime& rt) {
    auto early = rt.spawn_on(1, "early", [&rt, t = tracked{}] { rt.sleep_for(999'999); });
    auto sleeper = rt.spawn_on(1, "sleeper", [&rt, t = tracked{}] {
      tracked in_frame;
      rt.sleep_for(5'000'000);
    });
    early.join();
    sleeper.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::time_budget);
  const std::string& msg = r.failed->message;
  BOOST_TEST(contains(msg, "virtual time budget of 1000000 ns"), msg);
  BOOST_TEST(contains(msg, "next timer is at 5000000"), msg);
  BOOST_TEST(contains(msg, "'sleeper' waits on sleep"), msg);
  BOOST_TEST(contains(msg, "seed 4,"), msg);
  BOOST_TEST(r.end_time_ns == 999'999);  // time stopped before the budget
  BOOST_TEST(live == 0);
}

// --- exceptions and abort ----------------------------------------------------

namespace {
struct custom_error : std::logic_error {
  using std::logic_error::logic_error;
};
}  // namespace

BOOST_AUTO_TEST_CASE(an_exception_escaping_a_fiber_names_the_fiber_type_and_what) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      reset_counts();
      auto r = run(config(seed, "random", 2), [](runtime& rt) {
        auto [tx, rx] = channel<int>::bounded(rt, 1);
        auto bystander = rt.spawn_on(0, "bystander", [rx = std::move(rx), t = tracked{}]() mutable {
          tracked in_frame;
          (void)rx.recv();
        });
        auto thrower = rt.spawn_on(1, "thrower", [&rt, t = tracked{}] {
          tracked in_frame;
          rt.sleep_for(10);
          throw std::runtime_error("boom at 10");
        });
        thrower.join();
        bystander.join();
      });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::uncaught_exception);
      const std::string& msg = r.failed->message;
      BOOST_TEST(contains(msg, "'thrower'"), msg);
      BOOST_TEST(contains(msg, "std::runtime_error"), msg);
      BOOST_TEST(contains(msg, "boom at 10"), msg);
      BOOST_TEST(contains(msg, "seed " + std::to_string(seed) + ","), msg);
      BOOST_TEST(live == 0);
      BOOST_TEST(ever >= 4);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_user_exception_type_is_named_demangled) {
  auto r = run(config(1), [](runtime& rt) {
    auto t = rt.spawn("worker", [] { throw custom_error("bad input 7"); });
    t.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::uncaught_exception);
  BOOST_TEST(contains(r.failed->message, "custom_error: bad input 7"), r.failed->message);
  BOOST_TEST(contains(r.failed->message, "'worker'"), r.failed->message);
}

BOOST_AUTO_TEST_CASE(a_task_panic_ends_only_its_fiber) {
  // tokio's contract: a panicking task ends, the runtime goes on. The panic is
  // counted and written to the trace; the sibling fiber runs to its end.
  struct lane_died : lockstep::task_panic {
    lane_died() : lockstep::task_panic("lane consumer panicked") {}
  };
  auto c = config(3);
  c.trace = trace_mode::full;
  std::uint64_t contained = 0;
  bool sibling_done = false;
  auto r = run(c, [&](runtime& rt) {
    auto t = rt.spawn("lane", [&rt] {
      rt.sleep_for(5);
      throw lane_died();
    });
    auto s = rt.spawn("sibling", [&] {
      rt.sleep_for(10);
      sibling_done = true;
    });
    t.join();
    s.join();
    contained = rt.contained_task_panics();
  });
  BOOST_TEST(r.ok(), (r.failed ? r.failed->message : std::string()));
  BOOST_TEST(sibling_done);
  BOOST_TEST(contained == 1U);
  BOOST_TEST(contains(r.trace_text, "\"ev\":\"task_panic\""), r.trace_text);
  BOOST_TEST(contains(r.trace_text, "\"name\":\"lane\""), r.trace_text);
  // Any other exception type still fails the run.
  auto failed = run(config(3), [](runtime& rt) {
    auto t = rt.spawn("worker", [] { throw std::runtime_error("not a task panic"); });
    t.join();
  });
  BOOST_REQUIRE(!failed.ok());
  BOOST_TEST(failed.failed->kind == failure_kind::uncaught_exception);
}

BOOST_AUTO_TEST_CASE(a_non_std_exception_is_still_reported) {
  auto r = run(config(1), [](runtime& rt) {
    auto t = rt.spawn("odd", [] { throw 42; });
    t.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::uncaught_exception);
  BOOST_TEST(contains(r.failed->message, "'odd' ended with an uncaught exception"), r.failed->message);
}

BOOST_AUTO_TEST_CASE(an_exception_from_main_is_reported) {
  reset_counts();
  auto r = run(config(2), [](runtime& rt) {
    tracked in_main;
    rt.spawn("child", [&rt, t = tracked{}] { rt.sleep_for(1'000); });
    throw std::out_of_range("main gave up");
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::uncaught_exception);
  BOOST_TEST(contains(r.failed->message, "'main'"), r.failed->message);
  BOOST_TEST(contains(r.failed->message, "std::out_of_range: main gave up"), r.failed->message);
  BOOST_TEST(live == 0);
}

BOOST_AUTO_TEST_CASE(abort_fails_the_run_with_its_reason) {
  for (std::uint32_t cores = 1; cores <= 3; ++cores) {
    BOOST_TEST_CONTEXT("cores " << cores) {
      reset_counts();
      bool after_abort = false;
      auto r = run(config(11, "random", cores), [&after_abort](runtime& rt) {
        // Someone busy on the last core, someone blocked: both are torn down.
        auto busy = rt.spawn_on(rt.cores() - 1, "busy", [&rt, t = tracked{}] {
          tracked in_frame;
          while (true) rt.yield_now();
        });
        auto checker = rt.spawn_on(0, "checker", [&rt, &after_abort, t = tracked{}] {
          tracked in_frame;
          for (int i = 0; i < 5; ++i) rt.yield_now();  // `busy` keeps time from moving
          rt.abort("invariant x > 0 broken");
          after_abort = true;
        });
        checker.join();
        busy.join();
      });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::abort);
      BOOST_TEST(contains(r.failed->message, "'checker' aborted the run: invariant x > 0 broken"),
                 r.failed->message);
      BOOST_TEST(contains(r.failed->message, "seed 11,"), r.failed->message);
      BOOST_TEST(!after_abort);
      BOOST_TEST(live == 0);
      BOOST_TEST(ever >= 4);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_failed_oracle_names_itself_the_fiber_and_the_seed) {
  reset_counts();
  auto r = run(config(8, "random", 2), [](runtime& rt) {
    auto t = rt.spawn_on(1, "checker", [t = tracked{}] {
      tracked in_frame;
      lockstep::sim::check(1 + 1 == 3, "arithmetic", "1 + 1 was not 3");
    });
    t.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::oracle);
  BOOST_TEST(contains(r.failed->message, "oracle 'arithmetic' failed in fiber 1 'checker': 1 + 1 was not 3"),
             r.failed->message);
  BOOST_TEST(contains(r.failed->message, "seed 8,"), r.failed->message);
  BOOST_TEST(live == 0);
}

BOOST_AUTO_TEST_CASE(the_first_failure_is_the_one_reported) {
  auto r = run(config(1), [](runtime& rt) {
    auto first = rt.spawn("first", [&rt] { rt.abort("first"); });
    auto second = rt.spawn("second", [&rt] {
      rt.sleep_for(1);
      rt.abort("second");
    });
    first.join();
    second.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(contains(r.failed->message, "aborted the run: first"), r.failed->message);
  BOOST_TEST(!contains(r.failed->message, "aborted the run: second"), r.failed->message);
}

BOOST_AUTO_TEST_CASE(the_trace_ends_with_the_failure) {
  auto r = run(config(3), [](runtime& rt) { rt.abort("stop"); });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(contains(r.trace_text, "{\"ev\":\"fail\",\"t\":0,\"kind\":\"abort\"}\n"), r.trace_text);
  BOOST_TEST(contains(r.trace_text, "\"outcome\":\"abort\"}\n"), r.trace_text);
}

// --- teardown order ----------------------------------------------------------

namespace {
// Addresses of the sentinels that are alive right now.
std::set<const void*> alive_sentinels;
struct sentinel {
  sentinel() { alive_sentinels.insert(this); }
  sentinel(const sentinel&) = delete;
  ~sentinel() { alive_sentinels.erase(this); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(teardown_unwinds_children_before_the_frame_they_borrow) {
  // Regression: teardown used to wake every fiber oldest first and run core
  // 0's first candidate, so the main fiber unwound before its children and a
  // child borrowing from main's frame (main owns the mutex, the channel, the
  // data, and joins its children) ran its destructors against destroyed
  // objects. Teardown now unwinds youngest first, respecting that nesting.
  int touched_dead = 0;
  int touched_alive = 0;
  auto r = run(config(1, "random", 1), [&](runtime& rt) {
    sentinel owned_by_main;
    const void* addr = &owned_by_main;
    struct checks {
      const void* addr;
      int* dead;
      int* alive;
      ~checks() { ++*(alive_sentinels.count(addr) ? alive : dead); }
    };
    auto [tx, rx] = channel<int>::bounded(rt, 1);
    auto child = rt.spawn("child", [&, rx = std::move(rx)]() mutable {
      checks c{addr, &touched_dead, &touched_alive};
      (void)rx.recv();  // nobody sends: the run deadlocks
    });
    child.join();
  });
  BOOST_TEST(!r.ok());
  BOOST_TEST(touched_alive == 1);
  BOOST_TEST(touched_dead == 0);
}
