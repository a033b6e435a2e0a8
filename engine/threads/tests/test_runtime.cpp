// Goal: the threads runtime's own operations — run, spawn placement, join,
// yield, sleep, cancellation of a sleeper and of an unstarted fiber, the
// teardown of fibers left when main returns, and escaped exceptions; fiber
// bodies, the pool of fiber records, and one fiber's wait record reused;
// the timer heap, and a timed wait ended early.
#define BOOST_TEST_MODULE threads_runtime
#include <boost/test/unit_test.hpp>

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/threads/record_pool.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/timer_heap.hpp"
#include "engine/threads/tests/util.hpp"

using lockstep::threads::runtime;
using lockstep::threads::testing::dtor_counter;
using lockstep::threads::testing::until_parked;

namespace {
constexpr std::int64_t ms = 1'000'000;
}

BOOST_AUTO_TEST_CASE(main_runs_on_core_0_and_run_returns_after_it) {
  runtime rt(2);
  BOOST_TEST(rt.cores() == 2U);
  bool ran = false;
  std::uint32_t core = 99;
  rt.run([&] {
    ran = true;
    core = rt.current_core();
  });
  BOOST_TEST(ran);
  BOOST_TEST(core == 0U);
}

BOOST_AUTO_TEST_CASE(default_core_count_is_the_hardware_concurrency) {
  runtime rt;
  BOOST_TEST(rt.cores() == std::max(1U, std::thread::hardware_concurrency()));
}

BOOST_AUTO_TEST_CASE(spawn_on_places_a_fiber_on_that_core_and_spawn_keeps_the_callers_core) {
  runtime rt(2);
  std::uint32_t on_one = 99, child_of_one = 99, on_zero = 99;
  std::thread::id main_thread, one_thread;
  rt.run([&] {
    main_thread = std::this_thread::get_id();
    auto a = rt.spawn_on(1, "a", [&] {
      on_one = rt.current_core();
      one_thread = std::this_thread::get_id();
      auto b = rt.spawn("b", [&] { child_of_one = rt.current_core(); });
      b.join();
    });
    auto c = rt.spawn("c", [&] { on_zero = rt.current_core(); });
    a.join();
    c.join();
  });
  BOOST_TEST(on_one == 1U);
  BOOST_TEST(child_of_one == 1U);
  BOOST_TEST(on_zero == 0U);
  BOOST_TEST((main_thread != one_thread), "core 1 must be another OS thread");
}

namespace {
/// The CPUs the calling thread may run on.
std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(each_core_thread_is_pinned_to_one_cpu) {
  const std::vector<int> allowed = affinity();
  runtime rt(2);
  std::vector<int> on_zero, on_one;
  rt.run([&] {
    on_zero = affinity();
    auto t = rt.spawn_on(1, "one", [&] { on_one = affinity(); });
    t.join();
  });
  BOOST_TEST(!rt.pinning_refused());
  BOOST_REQUIRE(on_zero.size() == 1U);
  BOOST_REQUIRE(on_one.size() == 1U);
  BOOST_TEST(on_zero[0] == allowed[0]);
  BOOST_TEST(on_one[0] == allowed[1 % allowed.size()]);
}

BOOST_AUTO_TEST_CASE(a_refused_pin_runs_unpinned) {
  // No CPU has this number: pinning fails, one line goes to stderr, and the
  // threads keep the process's whole affinity.
  lockstep::threads::runtime_config cfg;
  cfg.cores = 2;
  cfg.cpus = {CPU_SETSIZE + 7};
  runtime rt(cfg);
  std::size_t width = 0;
  bool ran = false;
  rt.run([&] {
    auto t = rt.spawn_on(1, "one", [&] {
      width = affinity().size();
      ran = true;
    });
    t.join();
  });
  BOOST_TEST(rt.pinning_refused());
  BOOST_TEST(ran);
  BOOST_TEST(width == affinity().size());
}

BOOST_AUTO_TEST_CASE(spawn_on_a_core_out_of_range_throws) {
  runtime rt(2);
  bool threw = false;
  rt.run([&] {
    try {
      (void)rt.spawn_on(2, "nowhere", [] {});
    } catch (const std::out_of_range&) {
      threw = true;
    }
  });
  BOOST_TEST(threw);
}

BOOST_AUTO_TEST_CASE(join_parks_until_a_fiber_on_the_other_core_ends) {
  runtime rt(2);
  bool finished_before = true, finished_after = false;
  int value = 0;
  rt.run([&] {
    runtime::notify go(rt);
    auto child = rt.spawn_on(1, "child", [&] {
      go.notified();
      value = 42;
    });
    auto joiner = rt.spawn("joiner", [&] { child.join(); });
    until_parked(rt, joiner);
    finished_before = child.finished();
    go.notify_one();
    joiner.join();
    finished_after = child.finished();
  });
  BOOST_TEST(!finished_before);
  BOOST_TEST(finished_after);
  BOOST_TEST(value == 42);
}

BOOST_AUTO_TEST_CASE(yield_runs_the_other_ready_fibers_of_the_core_first) {
  // One core's run queue is FIFO: two fibers that yield alternate exactly.
  runtime rt(2);
  std::string log;
  rt.run([&] {
    auto a = rt.spawn("a", [&] {
      for (int i = 0; i < 3; ++i) {
        log += 'a';
        rt.yield_now();
      }
    });
    auto b = rt.spawn("b", [&] {
      for (int i = 0; i < 3; ++i) {
        log += 'b';
        rt.yield_now();
      }
    });
    a.join();
    b.join();
  });
  BOOST_TEST(log == "ababab");
}

BOOST_AUTO_TEST_CASE(sleep_returns_once_steady_clock_passed_the_deadline) {
  runtime rt(2);
  std::int64_t start = 0, woke = 0, deadline = 0, woke_until = 0;
  rt.run([&] {
    auto t = rt.spawn_on(1, "sleeper", [&] {
      start = rt.now();
      rt.sleep_for(3 * ms);
      woke = rt.now();
      deadline = rt.now() + 2 * ms;
      rt.sleep_until(deadline);
      woke_until = rt.now();
    });
    t.join();
  });
  BOOST_TEST(woke >= start + 3 * ms);
  BOOST_TEST(woke_until >= deadline);
}

namespace {
// The first multiple of `tick` at or after `t` (t >= 0).
std::int64_t tick_at_or_after(std::int64_t t, std::int64_t tick) { return (t + tick - 1) / tick * tick; }
}  // namespace

BOOST_AUTO_TEST_CASE(timers_fire_on_the_first_tick_at_or_after_their_deadline_in_deadline_order) {
  runtime rt(2);  // the default resolution: 1 ms
  constexpr int sleeps = 20;
  std::vector<std::int64_t> deadlines, woke;
  deadlines.reserve(sleeps);
  woke.reserve(sleeps);
  std::vector<int> order;
  order.reserve(2);
  rt.run([&] {
    auto t = rt.spawn_on(1, "sleeper", [&] {
      // Each a 100 us wait: exact timers end most of them well before the
      // next millisecond.
      for (int i = 0; i < sleeps; ++i) {
        deadlines.push_back(rt.now() + ms / 10);
        rt.sleep_until(deadlines.back());
        woke.push_back(rt.now());
      }
    });
    t.join();
    // Two waits due within one tick, the later deadline entered first: they
    // end together, at the tick, and in deadline order. The tick is 5 ms off,
    // so both are entered before it on a loaded machine too.
    const std::int64_t tick = tick_at_or_after(rt.now(), ms) + 5 * ms;
    auto later = rt.spawn_on(1, "later", [&] {
      rt.sleep_until(tick + ms * 6 / 10);
      order.push_back(2);
    });
    while (!later.is_waiting()) rt.yield_now();
    auto sooner = rt.spawn_on(1, "sooner", [&] {
      rt.sleep_until(tick + ms * 3 / 10);
      order.push_back(1);
    });
    later.join();
    sooner.join();
  });
  BOOST_REQUIRE_EQUAL(woke.size(), static_cast<std::size_t>(sleeps));
  // A wait whose deadline passed before it began (the thread lost its CPU
  // for 100 us) returns at once, so not every one need reach the tick.
  int at_the_tick = 0;
  for (int i = 0; i < sleeps; ++i) {
    BOOST_TEST(woke[i] >= deadlines[i]);
    if (woke[i] >= tick_at_or_after(deadlines[i], ms)) ++at_the_tick;
  }
  BOOST_TEST(at_the_tick >= sleeps - 3);
  BOOST_TEST((order == std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(a_gather_window_or_timer_resolution_below_0_or_above_a_second_is_refused) {
  using field = std::int64_t lockstep::threads::runtime_config::*;
  const std::pair<field, std::string> fields[] = {
      {&lockstep::threads::runtime_config::foreign_wake_gather_ns, "foreign_wake_gather_ns"},
      {&lockstep::threads::runtime_config::timer_resolution_ns, "timer_resolution_ns"}};
  for (const auto& [member, name] : fields) {
    for (const std::int64_t ns : {std::int64_t{-1}, std::int64_t{1'000'000'001}}) {
      lockstep::threads::runtime_config cfg;
      cfg.cores = 2;
      cfg.*member = ns;
      const std::string expected = name + " must be from 0 to 1000000000 ns, got " + std::to_string(ns);
      BOOST_CHECK_EXCEPTION(runtime{cfg}, std::invalid_argument, [&expected](const std::invalid_argument& e) {
        return std::string(e.what()).find(expected) != std::string::npos;
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(the_longest_sleep_parks_instead_of_wrapping_into_the_past) {
  runtime rt(2);
  bool returned = false, parked = false;
  rt.run([&] {
    auto t = rt.spawn_on(1, "sleeper", [&] {
      rt.sleep_for(std::numeric_limits<std::int64_t>::max());
      returned = true;
    });
    while (!t.is_waiting() && !t.finished()) rt.yield_now();
    parked = t.is_waiting();
    t.cancel();
    t.join();
  });
  BOOST_TEST(parked);
  BOOST_TEST(!returned);
}

BOOST_AUTO_TEST_CASE(many_sleepers_on_two_cores_all_wake) {
  runtime rt(2);
  std::atomic<int> woke{0};
  rt.run([&] {
    std::vector<runtime::task> ts;
    for (int i = 0; i < 200; ++i) {
      ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "s", [&, i] {
        rt.sleep_for((i % 7) * ms / 4);
        woke.fetch_add(1);
      }));
    }
    for (auto& t : ts) t.join();
  });
  BOOST_TEST(woke.load() == 200);
}

BOOST_AUTO_TEST_CASE(twenty_thousand_short_fibers_over_both_cores_all_run_once) {
  // Far more fibers over a run than a scheduler keeps stacks for: stacks are
  // reused and returned without loss.
  runtime rt(2);
  std::atomic<int> ran{0};
  rt.run([&] {
    for (int wave = 0; wave < 20; ++wave) {
      std::vector<runtime::task> ts;
      for (int i = 0; i < 1000; ++i) {
        ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "short", [&] { ran.fetch_add(1); }));
      }
      for (auto& t : ts) t.join();
    }
  });
  BOOST_TEST(ran.load() == 20000);
}

BOOST_AUTO_TEST_CASE(a_sleeper_on_the_other_core_is_cancelled_by_unwinding_once) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  bool after = false, unfinished_after_join = false;
  rt.run([&] {
    auto t = rt.spawn_on(1, "sleeper", [&] {
      dtor_counter guard(dtors);
      rt.sleep_for(3600'000 * ms);
      after = true;
    });
    until_parked(rt, t);
    t.cancel();
    t.cancel();  // a second request changes nothing
    t.join();
    unfinished_after_join = !t.finished();
  });
  BOOST_TEST(dtors.load() == 1);
  BOOST_TEST(!after);
  BOOST_TEST(!unfinished_after_join);
}

BOOST_AUTO_TEST_CASE(a_fiber_cancelled_before_it_starts_is_dropped_unrun) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  bool ran = false;
  rt.run([&] {
    // Same core as main, which does not park before cancelling: the child
    // cannot have started.
    auto guard = std::make_shared<dtor_counter>(dtors);
    auto t = rt.spawn("never", [&ran, g = std::move(guard)] { ran = true; });
    t.cancel();
    t.join();
  });
  BOOST_TEST(!ran);
  BOOST_TEST(dtors.load() == 1, "its captures are destroyed once");
}

BOOST_AUTO_TEST_CASE(fibers_alive_when_main_returns_are_cancelled_and_run_waits_for_them) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  std::atomic<bool> after{false};
  rt.run([&] {
    for (std::uint32_t core = 0; core < 2; ++core) {
      // The notify lives in the fiber's own frame: nothing borrows from main's.
      auto t = rt.spawn_on(core, "forever", [&] {
        dtor_counter guard(dtors);
        runtime::notify never(rt);
        never.notified();
        after = true;
      });
      until_parked(rt, t);
    }
  });
  BOOST_TEST(dtors.load() == 2);
  BOOST_TEST(!after.load());
}

BOOST_AUTO_TEST_CASE(a_fiber_spawned_during_teardown_is_born_cancelled) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  std::atomic<bool> child_ran{false};
  rt.run([&] {
    auto t = rt.spawn_on(1, "parent", [&] {
      struct spawn_on_exit {
        runtime& rt;
        std::atomic<int>& dtors;
        std::atomic<bool>& ran;
        ~spawn_on_exit() {
          auto g = std::make_shared<dtor_counter>(dtors);
          (void)rt.spawn("late", [this, g] { ran = true; });
        }
      } on_exit{rt, dtors, child_ran};
      runtime::notify never(rt);
      never.notified();
    });
    until_parked(rt, t);
  });
  BOOST_TEST(!child_ran.load());
  BOOST_TEST(dtors.load() == 1);
}

BOOST_AUTO_TEST_CASE(an_exception_escaping_a_fiber_is_rethrown_by_run) {
  runtime rt(2);
  bool others_ran = false;
  BOOST_CHECK_THROW(rt.run([&] {
    auto t = rt.spawn_on(1, "thrower", [] { throw std::runtime_error("boom"); });
    t.join();
    others_ran = true;
  }),
                    std::runtime_error);
  BOOST_TEST(others_ran, "the escape ends only its own fiber");
}

BOOST_AUTO_TEST_CASE(a_task_panic_ends_only_its_fiber_and_is_counted) {
  runtime rt(2);
  bool others_ran = false;
  rt.run([&] {
    auto t = rt.spawn_on(1, "lane", [] { throw lockstep::task_panic("lane consumer panicked"); });
    t.join();
    others_ran = true;
  });
  BOOST_TEST(others_ran);
  BOOST_TEST(rt.contained_task_panics() == 1U);
}

// Its destructor waits on `release`: a capture whose drop blocks.
struct blocks_when_dropped {
  runtime::notify* release;
  std::atomic<int>* dtors;
  blocks_when_dropped(runtime::notify& r, std::atomic<int>& d) : release(&r), dtors(&d) {}
  blocks_when_dropped(blocks_when_dropped&& o) noexcept : release(std::exchange(o.release, nullptr)), dtors(o.dtors) {}
  blocks_when_dropped(const blocks_when_dropped&) = delete;
  blocks_when_dropped& operator=(const blocks_when_dropped&) = delete;
  blocks_when_dropped& operator=(blocks_when_dropped&&) = delete;
  ~blocks_when_dropped() {
    if (release == nullptr) return;  // moved from
    release->notified();
    dtors->fetch_add(1);
  }
};

BOOST_AUTO_TEST_CASE(a_fiber_that_gets_no_stack_is_dropped_unrun_and_run_throws_naming_it) {
  lockstep::threads::runtime_config cfg;
  cfg.cores = 1;
  cfg.max_stacks_per_core = 2;  // main's and one more
  runtime rt(cfg);
  std::atomic<int> ran{0};
  std::atomic<int> dtors{0};
  int dropped_before_release = -1;
  bool third_waited_for_the_spare = false;
  std::string what;
  try {
    rt.run([&] {
      runtime::notify go(rt);
      auto first = rt.spawn("has-a-stack", [&] {
        ran.fetch_add(1);
        go.notified();
      });
      until_parked(rt, first);  // holds the core's second and last stack
      runtime::notify release(rt);
      auto second = rt.spawn("no-stack-1", [&ran, b = blocks_when_dropped(release, dtors)] { ran.fetch_add(1); });
      auto third = rt.spawn("no-stack-2", [&ran, g = std::make_shared<dtor_counter>(dtors)] { ran.fetch_add(1); });
      // The second is dropped on the spare stack and parks there, in its
      // capture's destructor; the third, with no stack and the spare taken,
      // waits for it.
      until_parked(rt, second);
      rt.yield_now();  // the third has had its turn (the run queue is FIFO)
      dropped_before_release = dtors.load();
      third_waited_for_the_spare = !third.finished();
      release.notify_one();
      second.join();
      third.join();
      go.notify_one();
      first.join();
    });
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  BOOST_TEST(ran.load() == 1, "only the fiber with a stack ran its body");
  BOOST_TEST(dropped_before_release == 0);
  BOOST_TEST(third_waited_for_the_spare);
  BOOST_TEST(dtors.load() == 2, "both dropped fibers' captures were destroyed, once each");
  BOOST_TEST(what.find("could not start fiber 'no-stack-1'") != std::string::npos, what);
  BOOST_TEST(what.find("max_stacks_per_core") != std::string::npos, what);
  BOOST_TEST(what.find("dropped unrun") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(stacks_the_address_space_cannot_hold_are_refused_when_the_runtime_is_made) {
  lockstep::threads::runtime_config cfg;
  cfg.cores = 1;
  cfg.stack_bytes = std::size_t{1} << 46;  // 64 TiB a stack: not even the spare can be mapped
  std::string what;
  try {
    runtime rt(cfg);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  BOOST_TEST(what.find("out of fiber stacks") != std::string::npos, what);
  BOOST_TEST(what.find("stack_bytes") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(a_runtime_runs_twice) {
  runtime rt(2);
  int runs = 0;
  for (int i = 0; i < 2; ++i) {
    rt.run([&] {
      auto t = rt.spawn_on(1, "x", [&] { ++runs; });
      t.join();
    });
  }
  BOOST_TEST(runs == 2);
}

BOOST_AUTO_TEST_CASE(random_draws_vary) {
  runtime rt(1);
  std::vector<std::uint64_t> draws;
  rt.run([&] {
    for (int i = 0; i < 8; ++i) draws.push_back(rt.random());
  });
  std::sort(draws.begin(), draws.end());
  BOOST_TEST((std::unique(draws.begin(), draws.end()) == draws.end()));
}

BOOST_AUTO_TEST_CASE(waiting_off_a_fiber_is_refused) {
  runtime rt(1);
  runtime::notify n(rt);
  BOOST_CHECK_THROW(n.notified(), std::logic_error);
  BOOST_CHECK_THROW(rt.yield_now(), std::logic_error);
  // A wait that checks only as it parks names itself too.
  auto [tx, rx] = runtime::channel<int>::unbounded(rt);
  BOOST_CHECK_EXCEPTION(rx.recv(), std::logic_error, [](const std::logic_error& e) {
    return std::string(e.what()).find("channel::receiver::recv") != std::string::npos;
  });
}

// --- fiber bodies and records ---------------------------------------------------

namespace {
// Counts live copies, so a move that leaks or destroys twice shows.
struct tracked {
  static inline int live = 0;
  tracked() { ++live; }
  tracked(tracked&& /*other*/) noexcept { ++live; }
  tracked(const tracked&) = delete;
  tracked& operator=(const tracked&) = delete;
  tracked& operator=(tracked&&) = delete;
  ~tracked() { --live; }
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_body_kept_inline_or_on_the_heap_runs_once_and_is_destroyed_once) {
  using lockstep::threads::detail::unique_function;
  int calls = 0;
  {
    // A small body is kept inside; a large one on the heap. Both move-only.
    unique_function small([t = tracked(), p = std::make_unique<int>(7), &calls] { calls += *p; });
    std::array<char, 2 * unique_function::inline_bytes> big_payload{};
    big_payload[0] = 5;
    unique_function big([t = tracked(), big_payload, &calls] { calls += big_payload[0]; });
    BOOST_TEST(tracked::live == 2);
    unique_function moved_small(std::move(small));
    unique_function moved_big(std::move(big));
    BOOST_TEST(!small);
    BOOST_TEST(!big);
    BOOST_TEST(tracked::live == 2);
    moved_small();
    moved_big();
    BOOST_TEST(calls == 12);
    unique_function assigned;
    assigned = std::move(moved_small);
    assigned = std::move(moved_big);  // ends the small body it held
    BOOST_TEST(tracked::live == 1);
    assigned();
    BOOST_TEST(calls == 17);
  }
  BOOST_TEST(tracked::live == 0);
}

BOOST_AUTO_TEST_CASE(a_record_block_given_back_is_taken_again_and_trim_frees_the_rest) {
  namespace pool = lockstep::threads::detail::record_pool;
  pool::trim(0);
  BOOST_TEST(pool::pooled() == 0U);
  void* a = pool::take();
  void* b = pool::take();
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(a) % pool::block_align == 0U);
  std::memset(a, 0xAB, pool::block_bytes);  // the whole block is the caller's
  pool::give(a);
  pool::give(b);
  BOOST_TEST(pool::pooled() == 2U);
  void* again = pool::take();
  BOOST_TEST((again == a || again == b));
  pool::give(again);
  pool::trim(1);
  BOOST_TEST(pool::pooled() == 1U);
  pool::trim(0);
  BOOST_TEST(pool::pooled() == 0U);
}

BOOST_AUTO_TEST_CASE(records_of_ended_fibers_are_reused_by_the_next_spawns_on_either_core) {
  namespace pool = lockstep::threads::detail::record_pool;
  pool::trim(0);
  runtime rt(2);
  rt.run([&] {
    for (int round = 0; round < 8; ++round) {
      std::vector<runtime::task> tasks;
      for (std::uint32_t i = 0; i < 200; ++i) tasks.push_back(rt.spawn_on(i % 2, "short", [] {}));
      for (auto& t : tasks) t.join();
    }
  });
  // Every record went back to the pool (the threads' caches are handed back
  // when they end): as many blocks as were ever made. Later rounds took
  // theirs from it: far fewer than the 1,601 records were made (core 1's
  // cache fills to 256 before it hands blocks on to core 0's spawns).
  const std::size_t pooled = pool::pooled();
  BOOST_TEST(pooled >= 201U);
  BOOST_TEST(pooled <= 800U);
}

BOOST_AUTO_TEST_CASE(one_fiber_waits_on_each_primitive_in_turn_with_its_one_wait_record) {
  // The wait record lives in the fiber's record: each wait must start clean,
  // whatever the last one left (a broadcast's mark, a link).
  runtime rt(2);
  int woken = 0;
  rt.run([&] {
    runtime::notify n(rt);
    runtime::watch<int> w(rt, 0);
    runtime::mutex m(rt);
    auto sub = w.subscribe();
    auto waiter = rt.spawn_on(1, "waiter", [&] {
      n.notified();
      ++woken;
      sub.changed();
      ++woken;
      n.notified();
      ++woken;
      std::lock_guard<runtime::mutex> hold(m);
      ++woken;
    });
    until_parked(rt, waiter);
    n.notify_one();
    until_parked(rt, waiter);
    w.send_replace(1);
    until_parked(rt, waiter);
    m.lock();
    n.notify_one();
    until_parked(rt, waiter);
    m.unlock();
    waiter.join();
  });
  BOOST_TEST(woken == 4);
}

BOOST_AUTO_TEST_CASE(a_teardown_of_thousands_of_parked_fibers_cancels_each_and_every_late_spawn_once) {
  // Each core cancels its own fibers (its sweep); a child spawned by an
  // unwinding parent lands on either core, before or after that core's
  // sweep, and must be dropped unrun either way.
  runtime rt(2);
  constexpr int parents = 2000;
  std::atomic<int> dtors{0};
  std::atomic<int> children_ran{0};
  std::atomic<int> parked{0};
  rt.run([&] {
    for (int i = 0; i < parents; ++i) {
      (void)rt.spawn_on(static_cast<std::uint32_t>(i % 2), "parent", [&, i] {
        struct spawn_on_exit {
          runtime& rt;
          std::atomic<int>& dtors;
          std::atomic<int>& ran;
          int i;
          ~spawn_on_exit() {
            auto g = std::make_shared<dtor_counter>(dtors);
            (void)rt.spawn_on(static_cast<std::uint32_t>((i + 1) % 2), "late", [this, g] { ran.fetch_add(1); });
          }
        } on_exit{rt, dtors, children_ran, i};
        dtor_counter guard(dtors);
        runtime::notify never(rt);
        parked.fetch_add(1);
        never.notified();
      });
    }
    while (parked.load() < parents) rt.yield_now();
  });
  BOOST_TEST(children_ran.load() == 0);
  BOOST_TEST(dtors.load() == 2 * parents, "each parent's guard and each child's captures, once");
}

namespace {
// Gives its block back from its destructor. Made before a thread first uses
// the record pool, it is destroyed after that thread's cache of the pool.
struct late_giver {
  void* block = nullptr;
  ~late_giver() {
    if (block != nullptr) lockstep::threads::detail::record_pool::give(block);
  }
};
thread_local late_giver late;
}  // namespace

BOOST_AUTO_TEST_CASE(a_record_freed_after_its_threads_cache_is_gone_goes_to_the_shared_pool) {
  namespace pool = lockstep::threads::detail::record_pool;
  pool::trim(0);
  std::thread t([] {
    late.block = nullptr;  // constructs `late` before the pool's cache below
    void* block = pool::take();
    late.block = block;
  });
  t.join();
  // The block was given after the thread's cache was destroyed (ASan checks
  // that no destroyed cache was touched) and is kept in the shared pool.
  BOOST_TEST(pool::pooled() == 1U);
  pool::trim(0);
}

// --- timers ---------------------------------------------------------------------

namespace {
struct timed_item {
  static constexpr std::size_t no_timer = ~std::size_t{0};
  std::size_t timer_slot = no_timer;
  int id = 0;
};
}  // namespace

BOOST_AUTO_TEST_CASE(the_timer_heap_pops_by_deadline_then_age_and_removes_from_anywhere) {
  using heap_t = lockstep::threads::detail::basic_timer_heap<timed_item>;
  constexpr int n = 500;
  std::vector<timed_item> items(n);
  std::vector<std::int64_t> deadline(n);
  heap_t heap;
  std::uint64_t x = 88172645463325252ULL;  // xorshift: varied deadlines, many equal
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    items[i].id = i;
    deadline[i] = static_cast<std::int64_t>(x % 64);
    heap.push(items[i], deadline[i]);
  }
  // Every third item leaves early, from wherever it sits.
  for (int i = 0; i < n; i += 3) heap.remove(items[i]);
  heap.remove(items[0]);  // a second remove is nothing
  BOOST_TEST(heap.size() == static_cast<std::size_t>(n - (n + 2) / 3));
  std::vector<int> order;
  while (!heap.empty()) {
    const std::int64_t due = heap.next_deadline();
    timed_item& it = heap.pop();
    BOOST_TEST(deadline[it.id] == due);
    BOOST_TEST(it.timer_slot == timed_item::no_timer);
    order.push_back(it.id);
  }
  std::vector<int> expected;
  for (int i = 0; i < n; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  // By deadline; equal deadlines in push order (ids were pushed in order).
  std::stable_sort(expected.begin(), expected.end(), [&](int a, int b) { return deadline[a] < deadline[b]; });
  BOOST_TEST(order == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_timed_wait_that_ends_early_gives_up_its_timer_and_its_fiber_record_at_once) {
  // Its timer entry used to stay until the deadline (an hour here), holding
  // the fiber's record; now the record is back in the pool when the fiber
  // and its handle are gone.
  namespace pool = lockstep::threads::detail::record_pool;
  runtime rt(1);
  std::size_t before = 0, after = 0;
  rt.run([&] {
    before = pool::pooled();  // core 0's cache: the thread running main and the receiver
    {
      auto [tx, rx] = runtime::channel<int>::unbounded(rt);
      auto r = rt.spawn("receiver", [&, rx = std::move(rx)]() mutable { (void)rx.recv_until(rt.now() + 3600'000 * ms); });
      until_parked(rt, r);
      BOOST_TEST(tx.send(1).ok());
      r.join();
    }  // the handle goes: the runtime's and the timer's references were gone already
    after = pool::pooled();
  });
  BOOST_TEST(after == before + 1);
}

namespace {
struct idle_counts {
  std::uint64_t yields = 0;
  std::uint64_t gathers = 0;
};
// Items across the cores through one slot: each side idles at almost every
// hand-off. Returns the idle yields and gathers counted during the exchange itself.
idle_counts idle_of_a_ping_pong(runtime& rt, std::uint64_t items) {
  idle_counts counts;
  rt.run([&] {
    // run() put main on core 0 from this (outside) thread. Asleep, main
    // leaves core 0 nothing to run, so it enters its idle spin, which takes
    // that push's mark: the count below starts clean.
    rt.sleep_for(1 * ms);
    const std::uint64_t before = rt.idle_yields();
    const std::uint64_t gathers_before = rt.foreign_gathers();
    auto [tx, rx] = runtime::channel<std::uint64_t>::bounded(rt, 1);
    std::uint64_t got = 0;
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      while (auto v = rx.recv()) got += *v;
    });
    for (std::uint64_t i = 1; i <= items; ++i) (void)tx.send(i);  // the sum below shows each arrived
    tx.reset();
    r.join();
    counts.yields = rt.idle_yields() - before;
    counts.gathers = rt.foreign_gathers() - gathers_before;
    BOOST_TEST(got == items * (items + 1) / 2);
  });
  return counts;
}
// A thread outside the runtime sends `items` one at a time to a receiver on
// core 1, each after the previous one was taken, so core 1 idles before
// almost every arrival. Returns the idle yields and gathers counted
// meanwhile; checks that every item arrived.
idle_counts idle_of_items_from_outside(runtime& rt, std::uint64_t items) {
  std::atomic<std::uint64_t> acked{0};
  std::atomic<int> refused{0};  // Boost.Test is not thread-safe: the outside thread only counts
  idle_counts counts;
  rt.run([&] {
    auto [tx, rx] = runtime::channel<std::uint64_t>::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      while (rx.recv()) acked.fetch_add(1);
    });
    until_parked(rt, r);
    const std::uint64_t yields_before = rt.idle_yields();
    const std::uint64_t gathers_before = rt.foreign_gathers();
    std::thread outside([&, tx = std::move(tx)]() mutable {
      for (std::uint64_t i = 0; i < items; ++i) {
        if (!tx.send(i).ok()) {
          refused.fetch_add(1);
          return;
        }
        while (acked.load() != i + 1) std::this_thread::yield();  // one item at a time
      }
    });
    r.join();  // ends once the outside thread's sender is gone
    outside.join();
    counts.yields = rt.idle_yields() - yields_before;
    counts.gathers = rt.foreign_gathers() - gathers_before;
  });
  BOOST_TEST(refused.load() == 0);
  BOOST_TEST(acked.load() == items);
  return counts;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_core_kept_busy_still_takes_a_wake_from_outside_the_runtime) {
  // Wakes from outside wait for the end of a round; a fiber that keeps
  // yielding makes the round endless, so the loop must take them anyway
  // after a bounded number of dispatches. Without that bound the receiver
  // never ran and the yielder gave up.
  runtime rt(2);
  std::atomic<bool> received{false};
  bool gave_up = true;
  rt.run([&] {
    auto [tx, rx] = runtime::channel<int>::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      if (rx.recv()) received.store(true);
    });
    until_parked(rt, r);
    auto busy = rt.spawn_on(1, "yielder", [&] {
      for (long i = 0; i < 20'000'000; ++i) {
        if (received.load()) {
          gave_up = false;
          return;
        }
        rt.yield_now();
      }
    });
    std::thread outside([tx = std::move(tx)]() mutable { (void)tx.send(1); });
    outside.join();
    busy.join();
    r.join();
  });
  BOOST_TEST(received.load());
  BOOST_TEST(!gave_up);
}

BOOST_AUTO_TEST_CASE(an_idle_core_gathers_after_a_wake_from_outside_the_runtime_and_never_after_a_siblings) {
  // A producer outside the runtime: its wakes open a gather window (by
  // default), unless the config turns it off.
  {
    runtime rt(2);
    BOOST_TEST(idle_of_items_from_outside(rt, 500).gathers > 0U);
  }
  {
    lockstep::threads::runtime_config cfg;
    cfg.cores = 2;
    cfg.foreign_wake_gather_ns = 0;
    runtime rt(cfg);
    BOOST_TEST(idle_of_items_from_outside(rt, 500).gathers == 0U);
  }
  // Hand-offs between the runtime's own cores are never delayed.
  {
    runtime rt(2);
    BOOST_TEST(idle_of_a_ping_pong(rt, 2000).gathers == 0U);
  }
}

BOOST_AUTO_TEST_CASE(an_idle_core_yields_its_cpu_only_when_its_work_may_come_from_a_thread_sharing_it) {
  // Work from pinned siblings: a yield cannot help them, and on a loaded
  // machine it lost this CPU for a time slice at almost every hand-off (160,000
  // items through a bounded channel did not finish in the minute two busy loops ran).
  // The previous build yielded in every idle spin here.
  {
    runtime rt(2);
    const std::uint64_t yields = idle_of_a_ping_pong(rt, 2000).yields;
    BOOST_TEST(!rt.pinning_refused());  // else the siblings may share CPUs, and yield
    BOOST_TEST(yields == 0U);
  }
  // Siblings that may share a CPU, unpinned or pinned to the same one: then
  // the yield hands it to them.
  {
    lockstep::threads::runtime_config cfg;
    cfg.cores = 2;
    cfg.pin = false;
    runtime rt(cfg);
    BOOST_TEST(idle_of_a_ping_pong(rt, 500).yields > 0U);
  }
  {
    lockstep::threads::runtime_config cfg;
    cfg.cores = 2;
    cfg.cpus = {affinity()[0]};
    runtime rt(cfg);
    BOOST_TEST(idle_of_a_ping_pong(rt, 500).yields > 0U);
  }
  // A thread outside the runtime (a producer like the lane router's) may share
  // this CPU: the receiving core yields while it waits for the next item.
  {
    runtime rt(2);
    BOOST_TEST(idle_of_items_from_outside(rt, 500).yields > 0U);
  }
}
