// Goal: mutex, atomic, notify and cancellation_token synchronize fibers
// across the two cores: a fiber on one core parks, one on the other wakes it.
#define BOOST_TEST_MODULE threads_sync
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/util.hpp"

using lockstep::threads::runtime;
using lockstep::threads::testing::until_parked;

namespace {
constexpr std::int64_t ms = 1'000'000;
}

BOOST_AUTO_TEST_CASE(mutex_parks_a_fiber_on_core_0_until_core_1_unlocks) {
  runtime rt(2);
  std::vector<int> order;
  rt.run([&] {
    runtime::mutex mu(rt);
    runtime::notify release(rt);
    runtime::notify held(rt);
    auto holder = rt.spawn_on(1, "holder", [&] {
      std::lock_guard<runtime::mutex> g(mu);
      held.notify_one();
      release.notified();
      order.push_back(1);
    });
    held.notified();
    auto blocked = rt.spawn_on(0, "blocked", [&] {
      std::lock_guard<runtime::mutex> g(mu);
      order.push_back(2);
    });
    until_parked(rt, blocked);
    BOOST_TEST(!mu.try_lock(), "held by the fiber on core 1");
    release.notify_one();
    holder.join();
    blocked.join();
    BOOST_TEST(mu.try_lock());
    mu.unlock();
  });
  BOOST_TEST(order == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(a_contended_mutex_parks_the_fiber_not_its_thread) {
  // While `blocked` waits for the mutex on core 1, another fiber of core 1
  // still runs: only the fiber is parked.
  runtime rt(2);
  bool neighbour_ran_while_blocked = false;
  rt.run([&] {
    runtime::mutex mu(rt);
    mu.lock();
    auto blocked = rt.spawn_on(1, "blocked", [&] { std::lock_guard<runtime::mutex> g(mu); });
    until_parked(rt, blocked);
    auto neighbour = rt.spawn_on(1, "neighbour", [&] { neighbour_ran_while_blocked = !blocked.finished(); });
    neighbour.join();
    mu.unlock();
    blocked.join();
  });
  BOOST_TEST(neighbour_ran_while_blocked);
}

BOOST_AUTO_TEST_CASE(mutex_excludes_across_cores_and_loses_no_update) {
  // `plain` is an ordinary int: only the mutex orders its accesses (TSan
  // would report a race if it did not).
  runtime rt(2);
  long plain = 0;
  int overlaps = 0;
  constexpr int fibers = 8, rounds = 5000;
  rt.run([&] {
    runtime::mutex mu(rt);
    int inside = 0;
    std::vector<runtime::task> ts;
    for (int i = 0; i < fibers; ++i) {
      ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "adder", [&] {
        for (int r = 0; r < rounds; ++r) {
          std::lock_guard<runtime::mutex> g(mu);
          if (++inside != 1) ++overlaps;
          ++plain;
          if (r % 64 == 0) rt.yield_now();  // park others behind us now and then
          --inside;
        }
      }));
    }
    for (auto& t : ts) t.join();
  });
  BOOST_TEST(plain == static_cast<long>(fibers) * rounds);
  BOOST_TEST(overlaps == 0);
}

BOOST_AUTO_TEST_CASE(mutex_relocked_by_its_owner_is_refused) {
  runtime rt(1);
  bool threw = false;
  rt.run([&] {
    runtime::mutex mu(rt);
    std::lock_guard<runtime::mutex> g(mu);
    try {
      mu.lock();
    } catch (const std::logic_error&) {
      threw = true;
    }
  });
  BOOST_TEST(threw);
}

BOOST_AUTO_TEST_CASE(mutex_shared_by_fibers_and_a_plain_thread_excludes_and_wakes_every_parker) {
  // A thread off the runtime spins for the mutex while fibers of both cores
  // park on it: the word that says "a fiber may be parked" must survive the
  // thread's barging, or a parked fiber is never woken and join() hangs.
  runtime rt(2);
  long plain = 0;
  int overlaps = 0;
  constexpr int fibers = 6, rounds = 4000;
  rt.run([&] {
    runtime::mutex mu(rt);
    int inside = 0;
    const auto one_round = [&](int r) {
      std::lock_guard<runtime::mutex> g(mu);
      if (++inside != 1) ++overlaps;
      ++plain;
      if (r % 32 == 0 && lockstep::threads::detail::this_fiber() != nullptr) rt.yield_now();
      --inside;
    };
    std::vector<runtime::task> ts;
    for (int i = 0; i < fibers; ++i) {
      ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "adder", [&] {
        for (int r = 0; r < rounds; ++r) one_round(r);
      }));
    }
    std::thread outsider([&] {
      for (int r = 0; r < rounds; ++r) one_round(r);
    });
    for (auto& t : ts) t.join();
    outsider.join();  // main's core may block here: the outsider needs no fiber of it
  });
  BOOST_TEST(plain == static_cast<long>(fibers + 1) * rounds);
  BOOST_TEST(overlaps == 0);
}

BOOST_AUTO_TEST_CASE(a_broadcast_to_more_waiters_than_one_batch_wakes_each_once_in_order_per_core) {
  // notify_waiters hands remote waiters to their home in batches (64 at a
  // time): every waiter must wake exactly once, and each core must run its
  // waiters in the order they parked.
  runtime rt(2);
  constexpr int waiters = 150;  // 75 per core: more than one batch on the other core
  std::vector<int> ran[2];      // each written by its own core's thread only
  std::atomic<int> woke{0};
  rt.run([&] {
    runtime::notify n(rt);
    std::vector<runtime::task> ts;
    for (int i = 0; i < waiters; ++i) {
      const auto core = static_cast<std::uint32_t>(i % 2);
      ts.push_back(rt.spawn_on(core, "w", [&, i, core] {
        n.notified();
        ran[core].push_back(i);
        woke.fetch_add(1);
      }));
      until_parked(rt, ts.back());  // so the parking order is the spawn order
    }
    n.notify_waiters();
    for (auto& t : ts) t.join();
  });
  BOOST_TEST(woke.load() == waiters);
  for (int core = 0; core < 2; ++core) {
    std::vector<int> expected;
    for (int i = core; i < waiters; i += 2) expected.push_back(i);
    BOOST_TEST(ran[core] == expected);
  }
}

BOOST_AUTO_TEST_CASE(atomic_fetch_add_from_both_cores_is_exact) {
  runtime rt(2);
  long total = 0;
  rt.run([&] {
    runtime::atomic<long> n(rt, 0);
    std::vector<runtime::task> ts;
    for (std::uint32_t c = 0; c < 2; ++c) {
      ts.push_back(rt.spawn_on(c, "inc", [&] {
        for (int i = 0; i < 100000; ++i) n.fetch_add(1);
        for (int i = 0; i < 1000; ++i) n.fetch_sub(1);
      }));
    }
    for (auto& t : ts) t.join();
    long expected = n.load();
    BOOST_TEST(!n.compare_exchange(--expected, 0));
    BOOST_TEST(expected == n.load(), "a failed compare_exchange reports the current value");
    BOOST_TEST(n.exchange(7) == 2 * 99000L);
    total = n.load();
  });
  BOOST_TEST(total == 7);
}

BOOST_AUTO_TEST_CASE(notify_one_wakes_a_waiter_parked_on_the_other_core) {
  runtime rt(2);
  bool woke = false;
  rt.run([&] {
    runtime::notify n(rt);
    auto w = rt.spawn_on(1, "waiter", [&] {
      n.notified();
      woke = true;
    });
    until_parked(rt, w);
    BOOST_TEST(!woke);
    n.notify_one();
    w.join();
  });
  BOOST_TEST(woke);
}

BOOST_AUTO_TEST_CASE(notify_one_without_a_waiter_stores_a_single_permit) {
  runtime rt(2);
  bool first = false, second = true;
  rt.run([&] {
    runtime::notify n(rt);
    n.notify_one();
    n.notify_one();  // permits do not add up
    auto t = rt.spawn_on(1, "taker", [&] {
      first = n.notified_until(rt.now() + 3600'000 * ms);
      second = n.notified_until(rt.now() + 1 * ms);
    });
    t.join();
  });
  BOOST_TEST(first, "the stored permit is taken at once");
  BOOST_TEST(!second, "only one permit was stored");
}

BOOST_AUTO_TEST_CASE(notify_waiters_wakes_the_current_waiters_and_stores_nothing) {
  runtime rt(2);
  std::atomic<int> woke{0};
  bool later = true;
  rt.run([&] {
    runtime::notify n(rt);
    std::vector<runtime::task> ts;
    for (int i = 0; i < 6; ++i) {
      ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "w", [&] {
        n.notified();
        woke.fetch_add(1);
      }));
    }
    for (auto& t : ts) until_parked(rt, t);
    n.notify_waiters();
    for (auto& t : ts) t.join();
    later = n.notified_until(rt.now() + 1 * ms);
  });
  BOOST_TEST(woke.load() == 6);
  BOOST_TEST(!later, "notify_waiters leaves no permit");
}

BOOST_AUTO_TEST_CASE(notified_until_times_out_after_its_deadline) {
  runtime rt(2);
  bool got = true;
  std::int64_t deadline = 0, returned = 0;
  rt.run([&] {
    runtime::notify n(rt);
    auto t = rt.spawn_on(1, "w", [&] {
      deadline = rt.now() + 2 * ms;
      got = n.notified_until(deadline);
      returned = rt.now();
    });
    t.join();
  });
  BOOST_TEST(!got);
  BOOST_TEST(returned >= deadline);
}

BOOST_AUTO_TEST_CASE(a_notification_handed_to_a_cancelled_waiter_is_passed_on) {
  // The handed waiter is cancelled before it runs again: its notification
  // must reach the next waiter instead of vanishing.
  runtime rt(2);
  bool second_woke = false;
  rt.run([&] {
    runtime::notify n(rt);
    runtime::notify gate(rt);
    auto first = rt.spawn("first", [&] { n.notified(); });
    until_parked(rt, first);
    auto second = rt.spawn_on(1, "second", [&] {
      n.notified();
      second_woke = true;
    });
    until_parked(rt, second);
    // Main keeps core 0 until it parks, so `first` cannot run between these.
    n.notify_one();
    first.cancel();
    first.join();
    second.join();
  });
  BOOST_TEST(second_woke);
}

BOOST_AUTO_TEST_CASE(cancellation_token_wakes_a_waiter_on_the_other_core) {
  runtime rt(2);
  bool woke = false, seen = false;
  rt.run([&] {
    runtime::cancellation_token token(rt);
    auto copy = token;
    auto w = rt.spawn_on(1, "waiter", [&, copy]() mutable {
      copy.cancelled();
      woke = true;
    });
    until_parked(rt, w);
    BOOST_TEST(!copy.is_cancelled());
    token.cancel();
    w.join();
    seen = copy.is_cancelled();
    copy.cancelled();  // already cancelled: returns at once
  });
  BOOST_TEST(woke);
  BOOST_TEST(seen);
}

BOOST_AUTO_TEST_CASE(cancellation_token_copies_made_at_once_on_both_cores_share_one_flag) {
  // A token's shared state is made on first need; copies taken on both cores
  // at the same moment must still end up on one flag.
  runtime rt(2);
  constexpr int rounds = 2'000;
  int unshared = 0;
  rt.run([&] {
    for (int round = 0; round < rounds; ++round) {
      runtime::cancellation_token token(rt);
      std::atomic<int> ready{0};
      std::optional<runtime::cancellation_token> there;
      auto other = rt.spawn_on(1, "copier", [&] {
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        there.emplace(token);
      });
      ready.fetch_add(1);
      while (ready.load() < 2) rt.yield_now();
      runtime::cancellation_token here(token);
      other.join();
      (round % 2 == 0 ? here : *there).cancel();
      if (!token.is_cancelled() || !here.is_cancelled() || !there->is_cancelled()) ++unshared;
    }
  });
  BOOST_TEST(unshared == 0);
}

BOOST_AUTO_TEST_CASE(a_copy_of_a_cancelled_token_is_cancelled_and_an_untouched_token_is_not) {
  runtime rt(1);
  bool fresh = true, copied = false, waited = false;
  rt.run([&] {
    runtime::cancellation_token untouched(rt);
    fresh = untouched.is_cancelled();
    runtime::cancellation_token token(rt);
    token.cancel();
    runtime::cancellation_token copy(token);
    copied = copy.is_cancelled();
    copy.cancelled();  // returns at once
    waited = true;
  });
  BOOST_TEST(!fresh);
  BOOST_TEST(copied);
  BOOST_TEST(waited);
}

BOOST_AUTO_TEST_CASE(a_moved_token_keeps_sharing_with_the_copies_made_before_the_move) {
  runtime rt(1);
  bool shared = false, untouched_moved = false;
  rt.run([&] {
    runtime::cancellation_token token(rt);
    runtime::cancellation_token copy(token);
    runtime::cancellation_token moved(std::move(token));
    moved.cancel();
    shared = copy.is_cancelled();
    runtime::cancellation_token fresh(rt);
    runtime::cancellation_token fresh_moved(std::move(fresh));
    fresh_moved.cancel();
    untouched_moved = fresh_moved.is_cancelled();
  });
  BOOST_TEST(shared);
  BOOST_TEST(untouched_moved);
}
