// Goal: the executor's model — spawn, join, yield, sleep, the virtual clock,
// cores that interleave only at scheduling points — behaves as documented.
#define BOOST_TEST_MODULE sim_executor
#include <boost/test/unit_test.hpp>

#include <array>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

BOOST_AUTO_TEST_CASE(spawn_and_join_run_children_to_completion) {
  std::vector<int> done;
  auto r = run(config(1), [&](runtime& rt) {
    std::vector<task> tasks;
    for (int i = 0; i < 5; ++i) tasks.push_back(rt.spawn("child", [&done, i] { done.push_back(i); }));
    for (auto& t : tasks) t.join();
    BOOST_TEST(done.size() == 5u);
  });
  BOOST_TEST(r.ok());
  std::sort(done.begin(), done.end());
  BOOST_TEST(done == (std::vector<int>{0, 1, 2, 3, 4}));
}

BOOST_AUTO_TEST_CASE(time_jumps_to_the_earliest_timer_when_nothing_can_run) {
  std::vector<std::int64_t> woke;
  auto r = run(config(2), [&](runtime& rt) {
    auto a = rt.spawn("a", [&] { rt.sleep_for(300); woke.push_back(rt.now()); });
    auto b = rt.spawn("b", [&] { rt.sleep_for(100); woke.push_back(rt.now()); });
    a.join();
    b.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woke == (std::vector<std::int64_t>{100, 300}));
  BOOST_TEST(r.end_time_ns == 300);
}

BOOST_AUTO_TEST_CASE(the_longest_sleep_waits_instead_of_wrapping_into_the_past) {
  bool returned = false;
  auto r = run(config(1), [&](runtime& rt) {
    auto sleeper = rt.spawn("sleeper", [&] {
      rt.sleep_for(1);  // from t = 0 the sum would not wrap
      rt.sleep_for(std::numeric_limits<std::int64_t>::max());
      returned = true;
    });
    rt.sleep_for(10);
    BOOST_TEST(!returned);
    sleeper.cancel();
    sleeper.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(!returned);
}

BOOST_AUTO_TEST_CASE(fibers_on_one_core_switch_only_where_they_block) {
  // Two fibers on core 0 each do many atomic operations (scheduling points)
  // without blocking: with one core they can never interleave.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<int> order;
    auto r = run(config(seed, "random", 1), [&](runtime& rt) {
      atomic<int> counter(rt, 0);
      auto body = [&](int who) {
        for (int i = 0; i < 10; ++i) {
          counter.fetch_add(1);
          order.push_back(who);
        }
      };
      auto a = rt.spawn("a", [&] { body(0); });
      auto b = rt.spawn("b", [&] { body(1); });
      a.join();
      b.join();
    });
    BOOST_TEST(r.ok());
    int switches = 0;
    for (std::size_t i = 1; i < order.size(); ++i) switches += order[i] != order[i - 1];
    BOOST_TEST(switches == 1);
  }
}

BOOST_AUTO_TEST_CASE(fibers_on_different_cores_interleave_at_scheduling_points) {
  bool interleaved = false;
  for (std::uint64_t seed = 0; seed < 20 && !interleaved; ++seed) {
    std::vector<int> order;
    auto r = run(config(seed, "random", 2), [&](runtime& rt) {
      atomic<int> counter(rt, 0);
      auto body = [&](int who) {
        for (int i = 0; i < 10; ++i) {
          counter.fetch_add(1);
          order.push_back(who);
        }
      };
      auto a = rt.spawn_on(0, "a", [&] { body(0); });
      auto b = rt.spawn_on(1, "b", [&] { body(1); });
      a.join();
      b.join();
    });
    BOOST_TEST(r.ok());
    int switches = 0;
    for (std::size_t i = 1; i < order.size(); ++i) switches += order[i] != order[i - 1];
    interleaved = switches > 1;
  }
  BOOST_TEST(interleaved);
}

BOOST_AUTO_TEST_CASE(yield_lets_other_ready_fibers_on_the_core_run) {
  std::vector<int> order;
  auto r = run(config(0, "fifo"), [&](runtime& rt) {
    auto a = rt.spawn("a", [&] { order.push_back(1); rt.yield_now(); order.push_back(3); });
    auto b = rt.spawn("b", [&] { order.push_back(2); rt.yield_now(); order.push_back(4); });
    a.join();
    b.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(order == (std::vector<int>{1, 2, 3, 4}));
}

BOOST_AUTO_TEST_CASE(the_program_random_stream_is_seeded) {
  auto draw = [](std::uint64_t seed) {
    std::vector<std::uint64_t> v;
    run(config(seed), [&](runtime& rt) { for (int i = 0; i < 4; ++i) v.push_back(rt.random()); });
    return v;
  };
  BOOST_TEST(draw(7) == draw(7));
  BOOST_TEST(draw(7) != draw(8));
}

BOOST_AUTO_TEST_CASE(spawn_on_a_missing_core_is_an_error) {
  auto r = run(config(0, "random", 2), [&](runtime& rt) { rt.spawn_on(5, "x", [] {}); });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::uncaught_exception);
  BOOST_TEST(r.failed->message.find("core 5") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(invariants_hold_at_every_scheduling_point) {
  auto r = run(config(3, "random", 3), [&](runtime& rt) {
    mutex m(rt);
    int shared = 0;
    std::vector<task> tasks;
    for (std::uint32_t i = 0; i < 6; ++i) {
      tasks.push_back(rt.spawn_on(i % 3, "w", [&] {
        for (int k = 0; k < 20; ++k) {
          std::lock_guard g(m);
          rt.exec().check_invariants();
          ++shared;
          if (k % 5 == 0) rt.sleep_for(10);
        }
      }));
    }
    for (auto& t : tasks) t.join();
    BOOST_TEST(shared == 120);
  });
  BOOST_TEST(r.ok());
}

// unique_function stores small bodies inline and large ones on the heap; a
// move must carry the callable (and its captures) exactly once either way.
namespace {
struct counted {
  static inline int alive = 0;
  std::shared_ptr<int> hits;
  explicit counted(std::shared_ptr<int> h) : hits(std::move(h)) { ++alive; }
  counted(counted&& o) noexcept : hits(std::move(o.hits)) { ++alive; }
  counted(const counted&) = delete;
  ~counted() { --alive; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(unique_function_moves_small_and_large_bodies_once) {
  auto hits = std::make_shared<int>(0);
  {
    unique_function a([c = counted(hits)] { ++*c.hits; });
    std::array<char, 256> pad{};
    pad[0] = 1;
    unique_function b([c = counted(hits), pad] { *c.hits += pad[0]; });
    BOOST_TEST(counted::alive == 2);
    unique_function a2(std::move(a));
    unique_function b2;
    b2 = std::move(b);
    BOOST_TEST(!a);
    BOOST_TEST(!b);
    BOOST_TEST(counted::alive == 2);
    a2();
    b2();
    BOOST_TEST(*hits == 2);
    b2 = std::move(a2);  // destroys the large body, takes the small one
    BOOST_TEST(counted::alive == 1);
    b2();
    BOOST_TEST(*hits == 3);
  }
  BOOST_TEST(counted::alive == 0);
  BOOST_TEST(hits.use_count() == 1);
}

// A run reuses the fiber records of the last run on its thread: nothing of an
// earlier run's fibers (names, cancellation, joiners, timers) may leak into
// the next. The same run on a new thread (nothing to reuse) gives the same trace.
BOOST_AUTO_TEST_CASE(a_run_after_a_cancelled_run_starts_from_clean_records) {
  auto program = [](runtime& rt) {
    auto t = rt.spawn_on(1, "worker", [&] { rt.sleep_for(10); });
    auto u = rt.spawn_on(0, "peer", [&] { rt.yield_now(); });
    t.join();
    u.join();
    BOOST_TEST(rt.now() == 10);
  };
  run_config c = config(3, "random", 2);
  c.trace = trace_mode::full;
  run_result on_new_thread;
  // A second OS thread is the point: it has no spares to reuse.
  std::thread([&] { on_new_thread = run(c, program); }).join();  // determinism-rules: allow

  const auto dirty = run(config(2, "random", 2), [](runtime& rt) {
    std::vector<task> sleepers;
    for (int i = 0; i < 8; ++i) sleepers.push_back(rt.spawn_on(1, "sleeper", [&] { rt.sleep_for(1'000'000); }));
    for (auto& t : sleepers) t.cancel();
  });  // the sleepers are still alive when main returns: teardown unwinds them
  BOOST_TEST(dirty.ok(), (dirty.failed ? dirty.failed->message : ""));
  const auto after = run(c, program);
  BOOST_TEST(on_new_thread.ok());
  BOOST_TEST(after.ok());
  BOOST_TEST(after.trace_text == on_new_thread.trace_text);
}

// sim::run reuses this thread's executor (executor_lease): after any run,
// however it ended, the next behaves exactly as on a freshly built executor,
// for every strategy: same trace bytes, decisions, steps, clock, failure,
// probes and program randomness.
BOOST_AUTO_TEST_CASE(a_reused_executor_runs_as_a_fresh_one_after_any_run) {
  auto probe_program = [](runtime& rt) {
    auto a = rt.spawn_on(1, "a", [&] {
      rt.sleep_for(static_cast<std::int64_t>(rt.random() % 50));
      rt.probe(0);
      rt.yield_now();
    });
    auto b = rt.spawn_on(0, "b", [&] {
      for (int i = 0; i < 3; ++i) rt.yield_now();
      rt.probe(1);
    });
    a.join();
    b.join();
    check(rt.random() % 7 != 7, "never", "fails");
  };
  // Runs that leave state behind: an oracle failure with fibers asleep and
  // a mutex held (teardown), a deadlock, an exhausted step budget, probes,
  // program draws and timers still pending.
  auto failing = [](runtime& rt) {
    mutex m(rt);
    m.lock();
    [[maybe_unused]] auto sleeper = rt.spawn_on(1, "sleeper", [&] { rt.sleep_for(1'000'000); });
    [[maybe_unused]] auto waiter = rt.spawn_on(1, "waiter", [&] { m.lock(); m.unlock(); });
    rt.probe(2);
    (void)rt.random();
    rt.sleep_for(5);
    check(false, "planted", "fails on purpose");
  };
  auto deadlocked = [](runtime& rt) {
    mutex m(rt);
    m.lock();
    auto child = rt.spawn_on(1, "child", [&] { m.lock(); m.unlock(); });
    child.join();
  };
  auto spinning = [](runtime& rt) {
    [[maybe_unused]] auto spinner = rt.spawn_on(1, "spinner", [&] { for (;;) rt.yield_now(); });
    for (;;) rt.yield_now();
  };
  auto fresh_run = [&](const run_config& c) {
    executor ex(c);
    runtime rt(ex);
    return ex.run([&] { probe_program(rt); });
  };
  for (const char* strategy : {"random", "pct", "fifo", "replay"}) {
    run_config c = config(11, strategy, 2);
    c.trace = trace_mode::full;
    c.options.pct_steps = 20;
    if (std::string_view(strategy) == "replay") c.options.decisions = fresh_run(config(11, "random", 2)).decisions;
    const run_result fresh = fresh_run(c);
    BOOST_TEST_REQUIRE(fresh.ok(), (fresh.failed ? fresh.failed->message : ""));
    BOOST_TEST(fresh.probe_hits == 3u);
    for (int dirty = 0; dirty < 3; ++dirty) {
      run_config d = config(5 + dirty, dirty == 1 ? "fifo" : "pct", 2);
      d.trace = dirty == 0 ? trace_mode::hash : trace_mode::off;
      d.max_steps = 200;
      const run_result before = dirty == 0 ? run(d, failing) : dirty == 1 ? run(d, deadlocked) : run(d, spinning);
      BOOST_TEST_REQUIRE(before.failed.has_value());
      BOOST_TEST(before.failed->kind == (dirty == 0   ? failure_kind::oracle
                                         : dirty == 1 ? failure_kind::deadlock
                                                      : failure_kind::step_budget));
      const run_result reused = run(c, probe_program);
      BOOST_TEST_CONTEXT("strategy " << strategy << " after dirty run " << dirty) {
        BOOST_TEST(reused.ok(), (reused.failed ? reused.failed->message : ""));
        BOOST_TEST(reused.trace_text == fresh.trace_text);
        BOOST_TEST(reused.trace_hash == fresh.trace_hash);
        BOOST_TEST(reused.decisions == fresh.decisions);
        BOOST_TEST(reused.steps == fresh.steps);
        BOOST_TEST(reused.end_time_ns == fresh.end_time_ns);
        BOOST_TEST(reused.probe_hits == fresh.probe_hits);
        BOOST_TEST(reused.probe_orders == fresh.probe_orders);
        BOOST_TEST(reused.strategy == fresh.strategy);
      }
    }
  }
}

// A finished fiber's context parks on its stack and runs a later spawn's body
// (executor.cpp, max_parked_fibers): bodies that caught exceptions, runs with
// more fibers than are parked, and a change of stack size in between must
// all behave as on a thread that never ran anything.
BOOST_AUTO_TEST_CASE(parked_fiber_contexts_run_later_bodies_as_new_ones) {
  auto program = [](int fibers) {
    return [fibers](runtime& rt) {
      std::vector<task> tasks;
      int caught = 0;
      for (int i = 0; i < fibers; ++i) {
        tasks.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "f", [&rt, &caught, i] {
          try {
            if (i % 3 == 0) throw std::runtime_error("caught inside its body");
          } catch (const std::runtime_error&) {
            ++caught;
          }
          rt.yield_now();
          rt.sleep_for(i % 5);
        }));
      }
      for (auto& t : tasks) t.join();
      check(caught == (fibers + 2) / 3, "caught", "every third body caught its exception");
    };
  };
  struct step {
    int fibers;
    std::size_t stack_bytes;
  };
  const std::vector<step> steps{{3, 64 * 1024}, {300, 64 * 1024}, {3, 64 * 1024}, {5, 128 * 1024}, {3, 64 * 1024}};
  auto cfg = [](std::size_t i, const step& s) {
    run_config c = config(100 + i, "random", 2);
    c.trace = trace_mode::full;
    c.stack_bytes = s.stack_bytes;
    return c;
  };
  std::vector<run_result> here;
  for (std::size_t i = 0; i < steps.size(); ++i) here.push_back(run(cfg(i, steps[i]), program(steps[i].fibers)));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    run_result alone;
    // A new OS thread has nothing parked and nothing to reuse.
    std::thread([&] { alone = run(cfg(i, steps[i]), program(steps[i].fibers)); }).join();  // determinism-rules: allow
    BOOST_TEST_CONTEXT("run " << i) {
      BOOST_TEST(here[i].ok(), (here[i].failed ? here[i].failed->message : ""));
      BOOST_TEST(alone.ok());
      BOOST_TEST(here[i].trace_text == alone.trace_text);
      BOOST_TEST(here[i].decisions == alone.decisions);
    }
  }
}

// A fiber may run a whole simulation of its own (a test harness inside a
// test). Fibers hand control straight to one another now (see
// executor::switch_away), so each executor's switches must stay its own: the
// inner run's fibers never land in the outer executor's contexts, and both
// runs are exactly what they are alone.
BOOST_AUTO_TEST_CASE(a_run_nested_in_a_fiber_is_the_same_as_alone) {
  auto inner = [](runtime& rt) {
    mutex m(rt);
    int sum = 0;
    std::vector<task> tasks;
    for (int i = 0; i < 6; ++i) {
      tasks.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "inner", [&, i] {
        for (int k = 0; k < 3; ++k) {
          m.lock();
          sum += i;
          m.unlock();
          rt.yield_now();
        }
      }));
    }
    for (auto& t : tasks) t.join();
    check(sum == 45, "sum", "every inner fiber added its share");
  };
  auto inner_config = [] {
    run_config c = config(7, "random", 2);
    c.trace = trace_mode::full;
    return c;
  };
  run_result nested;
  auto outer = [&](runtime& rt) {
    std::vector<task> tasks;
    for (int i = 0; i < 4; ++i) {
      tasks.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "outer", [&rt, &nested, &inner, &inner_config, i] {
        rt.yield_now();
        if (i == 1) nested = run(inner_config(), inner);
        rt.sleep_for(i);
        rt.yield_now();
      }));
    }
    for (auto& t : tasks) t.join();
  };
  run_config oc = config(11, "random", 2);
  oc.trace = trace_mode::full;
  const run_result first = run(oc, outer);
  const run_result inner_first = nested;
  const run_result again = run(oc, outer);
  run_result alone;
  std::thread([&] { alone = run(inner_config(), inner); }).join();  // determinism-rules: allow
  BOOST_TEST(first.ok(), (first.failed ? first.failed->message : ""));
  BOOST_TEST(inner_first.ok(), (inner_first.failed ? inner_first.failed->message : ""));
  BOOST_TEST(first.trace_text == again.trace_text);
  BOOST_TEST(first.decisions == again.decisions);
  BOOST_TEST(inner_first.trace_text == alone.trace_text);
  BOOST_TEST(inner_first.decisions == alone.decisions);
  BOOST_TEST(!inner_first.decisions.empty());
}
