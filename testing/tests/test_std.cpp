// Goal: code written against std:: runs under lockstep by switching one
// namespace alias (lockstep::sim_std), with the standard's semantics:
// threads that preempt by default, condition variables without a permit
// and with spurious wake-ups, barging mutexes; misuse (unlocking a mutex one
// does not own, destroying a locked one, joining twice) fails the run naming
// the thread and the line; and the very same programs compile and hold
// against plain std on real threads.
#define BOOST_TEST_MODULE sim_std
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <atomic>
#include <barrier>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <semaphore>
#include <shared_mutex>
#include <thread>

#include "sim/runtime.hpp"
#include "sim/std.hpp"
#include "testing/explore.hpp"
#include "testing/tests/scratch_dir.hpp"

#define LOCKSTEP_STD_NS lockstep::sim_std
#define LOCKSTEP_PROGRAMS on_sim
#include "std_programs.hpp"
#undef LOCKSTEP_STD_NS
#undef LOCKSTEP_PROGRAMS
#define LOCKSTEP_STD_NS std
#define LOCKSTEP_PROGRAMS on_std
#include "std_programs.hpp"

namespace sim = lockstep::sim;
namespace lt = lockstep::testing;
namespace cc = lockstep::sim_std;

namespace {

std::string temp_dir(const std::string& name) {
  return lockstep::testing_scratch::scratch_dir("lockstep-sim-std-" + name);
}

/// The library's defaults (one configured core, random and pct), fewer runs.
lt::explore_result explore(const std::string& name, const std::function<void()>& program, std::uint64_t runs = 300,
                           std::vector<std::string> strategies = {"random", "pct"}) {
  lt::test_options o;
  o.runs = runs;
  o.strategies = std::move(strategies);
  o.record_dir = temp_dir(name);
  // dfs: a budget this test can afford (its trees at preemption bound 2 run to millions).
  o.preemption_bound = 1;
  o.max_schedules = 3000;
  return lt::explore(name, o, [&program](sim::runtime&) { program(); });
}

std::string first_message(const lt::explore_result& r) {
  if (r.failures.empty() || !r.failures.front().record.result.failed) return "";
  return r.failures.front().record.result.failed->message;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(threads_preempt_by_default) {
  // One configured core, as LOCKSTEP_TEST_CASE's default: a thread is still
  // preempted between its load and its store.
  const lt::explore_result r = explore("lost_update", on_sim::counter<false>);
  BOOST_TEST_MESSAGE(first_message(r));
  BOOST_TEST(r.failures.size() == 1U);
  BOOST_TEST(contains(first_message(r), "counter: an update was lost"));
  BOOST_TEST(explore("locked_counter", on_sim::counter<true>).failures.empty());
}

BOOST_AUTO_TEST_CASE(a_wait_outside_a_loop_is_caught_by_a_spurious_wakeup_and_replays) {
  const lt::explore_result r = explore("mailbox", on_sim::mailbox<true>);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(contains(first_message(r), "mailbox: the consumer woke to an empty slot"));
  const lt::replay_result again =
      lt::replay(r.failures.front().record, [](sim::runtime&) { on_sim::mailbox<true>(); });
  BOOST_TEST(again.reproduced);
  BOOST_TEST(again.run.trace_hash == r.failures.front().record.result.trace_hash);
  // The loop that re-checks holds, under every strategy.
  BOOST_TEST(explore("mailbox_fixed", on_sim::mailbox<false>, 300, {"random", "pct", "dfs"}).failures.empty());
}

BOOST_AUTO_TEST_CASE(a_notify_with_nobody_waiting_is_lost) {
  // tokio's Notify would keep a permit for the next waiter; a condition
  // variable does not: the wait below can only end by its timeout (or
  // spuriously, which the strategy draws: both outcomes must be seen).
  bool timed_out = false, woke = false;
  const lt::explore_result r = explore("lost_notify", [&] {
    cc::mutex m;
    cc::condition_variable cv;
    cv.notify_one();
    cc::unique_lock<cc::mutex> lk(m);
    const auto status = cv.wait_for(lk, cc::chrono::milliseconds(5));
    (status == cc::cv_status::timeout ? timed_out : woke) = true;
    if (status == cc::cv_status::timeout) {
      if (cc::chrono::steady_clock::now().time_since_epoch() < cc::chrono::milliseconds(5)) {
        throw std::logic_error("timed out early");
      }
    }
  });
  BOOST_TEST(r.failures.empty());
  BOOST_TEST(timed_out);
  BOOST_TEST(woke);  // a spurious wake-up, drawn by the strategy
}

BOOST_AUTO_TEST_CASE(notify_one_may_wake_a_newer_waiter_while_the_oldest_sleeps_on) {
  // The standard leaves open which waiter notify_one unblocks; a program that
  // counts on the oldest (a FIFO hand-off) is wrong on real threads. Here A
  // waits first and never stops waiting (its predicate ran once: no spurious
  // wake-up re-queued it behind B), yet B takes the one token: reachable only
  // when notify_one may pick a waiter other than the front of the queue.
  const auto program = [] {
    cc::mutex m;
    cc::condition_variable cv, arrived;  // tokens; and who waits already
    int tokens = 0, a_checks = 0, queued = 0;  // guarded by m
    char taker = '-';
    bool oldest_slept_on = false;
    auto waiter = [&](char me, int* checks) {
      cc::unique_lock<cc::mutex> lk(m);
      if (me == 'B') arrived.wait(lk, [&] { return queued == 1; });  // B waits after A
      ++queued;
      arrived.notify_all();
      cv.wait(lk, [&] {
        if (checks != nullptr) ++*checks;
        return tokens > 0;
      });
      --tokens;
      if (taker == '-') taker = me;
    };
    cc::thread a(waiter, 'A', &a_checks);
    cc::thread b(waiter, 'B', nullptr);
    {
      cc::unique_lock<cc::mutex> lk(m);
      arrived.wait(lk, [&] { return queued == 2; });
    }
    cc::this_thread::sleep_for(cc::chrono::milliseconds(1));  // both park (time moves when all wait)
    {
      cc::lock_guard<cc::mutex> g(m);
      tokens = 1;
      cv.notify_one();
    }
    cc::this_thread::sleep_for(cc::chrono::milliseconds(1));
    {
      cc::lock_guard<cc::mutex> g(m);
      oldest_slept_on = taker == 'B' && a_checks == 1;
      tokens = 2;  // let the other one through
      cv.notify_all();
    }
    a.join();
    b.join();
    if (oldest_slept_on) throw std::logic_error("the newer waiter was woken; the oldest slept on");
  };
  const lt::explore_result r = explore("notify_one_any", program, 2000);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(contains(first_message(r), "the newer waiter was woken; the oldest slept on"));
  const lt::replay_result again = lt::replay(r.failures.front().record, [&](sim::runtime&) { program(); });
  BOOST_TEST(again.reproduced);
  BOOST_TEST(again.run.trace_hash == r.failures.front().record.result.trace_hash);
}

BOOST_AUTO_TEST_CASE(a_releasing_thread_may_take_the_mutex_again_before_its_waiter) {
  // Real mutexes may be barged; sim::mutex (the engine's) hands off in order.
  bool barged = false;
  const lt::explore_result r = explore("barging", [&] {
    cc::mutex m;
    cc::atomic<int> waiting{0};
    int owner = 0;  // guarded by m
    m.lock();
    cc::thread b([&] {
      ++waiting;
      cc::lock_guard<cc::mutex> g(m);
      owner = 2;
    });
    while (waiting.load() == 0) cc::this_thread::yield();
    cc::this_thread::yield();  // give b the chance to block in lock()
    m.unlock();
    m.lock();
    if (owner == 0) barged = true;
    m.unlock();
    b.join();
  });
  BOOST_TEST(r.failures.empty());
  BOOST_TEST(barged);
}

BOOST_AUTO_TEST_CASE(correct_programs_hold_under_every_strategy) {
  for (const std::string s : {"random", "pct", "dfs"}) {
    BOOST_TEST_CONTEXT(s) {
      BOOST_TEST(first_message(explore("bounded_queue_" + s, on_sim::bounded_queue, 200, {s})) == "");
      BOOST_TEST(first_message(explore("lazy_singleton_" + s, on_sim::lazy_singleton, 200, {s})) == "");
      BOOST_TEST(first_message(explore("toolbox_" + s, on_sim::toolbox, 100, {s})) == "");
    }
  }
}

BOOST_AUTO_TEST_CASE(unlocking_a_mutex_one_does_not_own_names_the_thread_and_line) {
  const int line = __LINE__ + 5;
  const lt::explore_result r = explore("foreign_unlock", [] {
    cc::mutex m;
    m.lock();
    cc::thread t([&] {
      m.unlock();
    });
    t.join();
    m.unlock();
  }, 20);
  const std::string msg = first_message(r);
  BOOST_TEST_MESSAGE(msg);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(r.failures.front().record.result.failed->kind == sim::failure_kind::abort);
  BOOST_TEST(contains(msg, "misuse: unlock at "));
  BOOST_TEST(contains(msg, "test_std.cpp:" + std::to_string(line)));
  BOOST_TEST(contains(msg, "'thread' of mutex created at "));
  BOOST_TEST(contains(msg, "which #0 holds"));
}

BOOST_AUTO_TEST_CASE(destroying_a_locked_mutex_and_joining_twice_are_reported) {
  const lt::explore_result locked = explore("destroy_locked", [] {
    cc::mutex m;
    m.lock();
  }, 5);
  BOOST_TEST(contains(first_message(locked), "misuse: mutex created at "));
  BOOST_TEST(contains(first_message(locked), "destroyed while locked by #0"));

  const int line = __LINE__ + 4;
  const lt::explore_result twice = explore("join_twice", [] {
    cc::thread t([] {});
    t.join();
    t.join();
  }, 5);
  BOOST_TEST(contains(first_message(twice), "misuse: join at "));
  BOOST_TEST(contains(first_message(twice), "test_std.cpp:" + std::to_string(line)));
  BOOST_TEST(contains(first_message(twice), "not joinable"));

  const lt::explore_result joinable = explore("destroy_joinable", [] { cc::thread t([] {}); }, 5);
  BOOST_TEST(contains(first_message(joinable), "destroyed while joinable"));
}

BOOST_AUTO_TEST_CASE(a_deadlock_names_the_lines_where_threads_wait) {
  const int line = __LINE__ + 8;
  const int created = __LINE__ + 2;
  const lt::explore_result r = explore("lock_order", [] {
    cc::mutex a("a"), b;
    auto one = [&](cc::mutex& first, cc::mutex& second) {
      cc::name_this_thread(&first == &a ? "a-then-b" : "b-then-a");
      cc::lock_guard<cc::mutex> g1(first);
      cc::this_thread::yield();
      second.lock();
      second.unlock();
    };
    cc::thread t1(one, std::ref(a), std::ref(b)), t2(one, std::ref(b), std::ref(a));
    t1.join();
    t2.join();
  });
  const std::string msg = first_message(r);
  BOOST_TEST_MESSAGE(msg);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(r.failures.front().record.result.failed->kind == sim::failure_kind::deadlock);
  // Each object by the program's name, or by the line that created it; each
  // thread by the name it gave itself; each wait at its line.
  const std::string at = "test_std.cpp:" + std::to_string(line) + " on mutex.lock of mutex ";
  BOOST_TEST(contains(msg, "'b-then-a' waits at "));
  BOOST_TEST(contains(msg, at + "'a' created at "));
  BOOST_TEST(contains(msg, at + "created at "));
  BOOST_TEST(contains(msg, "test_std.cpp:" + std::to_string(created) + ";"));
  BOOST_TEST(contains(msg, "on the end of fiber #"));
  BOOST_TEST(!contains(msg, "(object "));
}

namespace {

// Two threads each take the same two mutexes together, in opposite orders,
// through `both(x, y)` (which leaves them locked and returns how to release
// them): taken as std::lock takes them, no schedule deadlocks.
template <class TakeBoth>
void opposite_orders_never_deadlock(const std::string& name, TakeBoth both) {
  const lt::explore_result r = explore(name, [both] {
    cc::mutex a;
    cc::mutex b;
    int n = 0;
    auto one = [&](cc::mutex& x, cc::mutex& y) {
      auto release = both(x, y);
      ++n;
      release();
    };
    cc::thread t1(one, std::ref(a), std::ref(b)), t2(one, std::ref(b), std::ref(a));
    t1.join();
    t2.join();
    LOCKSTEP_ASSERT(n == 2);
  });
  BOOST_TEST(r.failures.empty(), first_message(r));
  BOOST_TEST(r.runs > 100U);
}

}  // namespace

// scoped_lock takes several mutexes as std::lock does (no deadlock whatever
// order they are named in), and reports its operations at the guard's line,
// not inside <mutex>.
BOOST_AUTO_TEST_CASE(scoped_lock_avoids_the_deadlock_and_reports_its_line) {
  opposite_orders_never_deadlock("scoped_both", [](cc::mutex& x, cc::mutex& y) {
    auto lk = std::make_shared<cc::scoped_lock<cc::mutex, cc::mutex>>(x, y);
    return [lk]() mutable { lk.reset(); };
  });

  const int line = __LINE__ + 4;
  const lt::explore_result r = explore("scoped_line", [] {
    cc::mutex a("a"), b("b");
    auto one = [&](cc::mutex& first, cc::mutex& second) {
      cc::scoped_lock held(first);
      cc::this_thread::yield();
      second.lock();
      second.unlock();
    };
    cc::thread t1(one, std::ref(a), std::ref(b)), t2(one, std::ref(b), std::ref(a));
    t1.join();
    t2.join();
  });
  const std::string msg = first_message(r);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(r.failures.front().record.result.failed->kind == sim::failure_kind::deadlock);
  BOOST_TEST(contains(msg, "test_std.cpp:" + std::to_string(line) + "\n"), msg);  // in both histories
  BOOST_TEST(!contains(msg, "mutex:"), msg);  // no line inside <mutex> or <bits/std_mutex.h>
}

// lock and try_lock as std's free functions: several mutexes at once without
// deadlock, try_lock's index of the first it could not take (those before it
// released), and every step reported at the caller's line.
BOOST_AUTO_TEST_CASE(lock_and_try_lock_take_several_at_the_callers_line) {
  opposite_orders_never_deadlock("lock_both", [](cc::mutex& x, cc::mutex& y) {
    cc::lock(x, y);
    return [&x, &y] {
      x.unlock();
      y.unlock();
    };
  });

  const lt::explore_result tries = explore("try_lock_index", [] {
    cc::mutex a, b, c;
    LOCKSTEP_ASSERT(cc::try_lock(a, b, c) == -1);  // all three taken
    c.unlock();
    b.unlock();
    LOCKSTEP_ASSERT(cc::try_lock(b, c, a) == 2);  // a is held: b and c given back
    LOCKSTEP_ASSERT(b.try_lock() && c.try_lock());
    a.unlock();
    b.unlock();
    c.unlock();
  });
  BOOST_TEST(tries.failures.empty(), first_message(tries));

  const int line = __LINE__ + 4;
  const lt::explore_result r = explore("lock_line", [] {
    cc::mutex a("a"), b("b"), c("c");
    cc::thread t1([&] {
      cc::lock(a, b);
      c.lock();
      c.unlock();
      a.unlock();
      b.unlock();
    });
    cc::thread t2([&] {
      c.lock();
      cc::this_thread::yield();
      a.lock();
      a.unlock();
      c.unlock();
    });
    t1.join();
    t2.join();
  });
  const std::string msg = first_message(r);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(r.failures.front().record.result.failed->kind == sim::failure_kind::deadlock);
  BOOST_TEST(contains(msg, "test_std.cpp:" + std::to_string(line) + "\n"), msg);  // t1's history
  BOOST_TEST(!contains(msg, "mutex:"), msg);  // no line inside <mutex>
}

BOOST_AUTO_TEST_CASE(outside_a_simulation_the_types_refuse_in_one_line) {
  try {
    cc::mutex m;
    BOOST_FAIL("a sim_std::mutex was created outside a simulation");
  } catch (const std::logic_error& e) {
    BOOST_TEST(contains(e.what(), "lockstep::sim_std::mutex used at "));
    BOOST_TEST(contains(e.what(), "outside a simulated thread"));
  }
}

BOOST_AUTO_TEST_CASE(the_same_programs_hold_against_plain_std_on_real_threads) {
  for (int i = 0; i < 20; ++i) {
    BOOST_CHECK_NO_THROW(on_std::counter<true>());
    BOOST_CHECK_NO_THROW(on_std::mailbox<false>());
    BOOST_CHECK_NO_THROW(on_std::bounded_queue());
    BOOST_CHECK_NO_THROW(on_std::lazy_singleton());
    BOOST_CHECK_NO_THROW(on_std::toolbox());
  }
}
