// Goal: every simulated primitive keeps the semantics engine/runtime.hpp
// promises (tokio's, for the channel family), under the schedules the
// strategies produce: mutex, atomic, bounded and unbounded channels, watch,
// oneshot, notify, cancellation token.
#define BOOST_TEST_MODULE sim_primitives
#include <boost/test/unit_test.hpp>

#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/dfs_search.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::recv_status;
using lockstep::send_status;
using lockstep::sim::testing::config;

namespace {

using int_channel = channel<int>;

// Lets the other fibers of this core run until they block: with one core a
// sleep is the only way to hand them the core without an order assumption.
void settle(runtime& rt) { rt.sleep_for(1); }

}  // namespace

// --- mutex -------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(mutex_semantics)

BOOST_AUTO_TEST_CASE(mutual_exclusion_holds_across_cores_over_many_seeds) {
  for (std::uint32_t cores = 2; cores <= 3; ++cores) {
    for (std::uint64_t seed = 0; seed < 500; ++seed) {
      BOOST_TEST_CONTEXT("seed " << seed << " cores " << cores) {
        int inside = 0;
        int max_inside = 0;
        int total = 0;
        auto r = run(config(seed, "random", cores), [&](runtime& rt) {
          mutex m(rt);
          atomic<int> tick(rt, 0);
          std::vector<task> tasks;
          for (std::uint32_t i = 0; i < 3; ++i) {
            tasks.push_back(rt.spawn_on(i % cores, "w", [&] {
              for (int k = 0; k < 8; ++k) {
                std::lock_guard g(m);
                ++inside;
                max_inside = std::max(max_inside, inside);
                tick.fetch_add(1);  // a scheduling point inside the critical section
                ++total;
                --inside;
              }
            }));
          }
          for (auto& t : tasks) t.join();
        });
        BOOST_TEST(r.ok());
        BOOST_TEST(max_inside == 1);
        BOOST_TEST(total == 24);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(canary_without_the_mutex_the_overlap_is_observed) {
  // The same program with the lock removed: if the sweep above could never
  // see two fibers inside, its assertion would prove nothing.
  bool overlapped = false;
  for (std::uint64_t seed = 0; seed < 100 && !overlapped; ++seed) {
    int inside = 0;
    auto r = run(config(seed, "random", 2), [&](runtime& rt) {
      atomic<int> tick(rt, 0);
      std::vector<task> tasks;
      for (std::uint32_t i = 0; i < 2; ++i) {
        tasks.push_back(rt.spawn_on(i, "w", [&] {
          for (int k = 0; k < 8; ++k) {
            ++inside;
            overlapped = overlapped || inside > 1;
            tick.fetch_add(1);
            --inside;
          }
        }));
      }
      for (auto& t : tasks) t.join();
    });
    BOOST_TEST(r.ok());
  }
  BOOST_TEST(overlapped);
}

BOOST_AUTO_TEST_CASE(waiters_are_handed_the_lock_in_fifo_order) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      std::vector<int> order;
      bool main_got_it_back = true;
      auto r = run(config(seed), [&](runtime& rt) {
        mutex m(rt);
        m.lock();
        std::vector<task> tasks;
        for (int i = 0; i < 3; ++i) {
          tasks.push_back(rt.spawn("w" + std::to_string(i), [&, i] {
            std::lock_guard g(m);
            order.push_back(i);
          }));
          settle(rt);  // w_i queues on the mutex before w_{i+1} exists
        }
        m.unlock();
        // Hand-off: w0 owns the mutex before it even runs, so it is not free.
        main_got_it_back = m.try_lock();
        for (auto& t : tasks) t.join();
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(order == (std::vector<int>{0, 1, 2}));
      BOOST_TEST(!main_got_it_back);
    }
  }
}

BOOST_AUTO_TEST_CASE(try_lock_fails_while_held_and_succeeds_when_free) {
  std::vector<bool> got;
  auto r = run(config(1), [&](runtime& rt) {
    mutex m(rt);
    got.push_back(m.try_lock());  // free
    auto t = rt.spawn("other", [&] { got.push_back(m.try_lock()); });  // held by main
    t.join();
    m.unlock();
    auto u = rt.spawn("other2", [&] {
      got.push_back(m.try_lock());  // free again
      m.unlock();
    });
    u.join();
    BOOST_TEST(!m.locked());
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got == (std::vector<bool>{true, false, true}));
}

BOOST_AUTO_TEST_CASE(locking_twice_from_one_fiber_throws_logic_error) {
  bool threw = false;
  auto r = run(config(1), [&](runtime& rt) {
    mutex m(rt);
    m.lock();
    try {
      m.lock();
    } catch (const std::logic_error&) {
      threw = true;
    }
    m.unlock();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(threw);
}

BOOST_AUTO_TEST_CASE(unlocking_a_mutex_one_does_not_own_fails_the_run_naming_both_fibers) {
  for (const bool held : {true, false}) {
    bool went_on = false;
    auto r = run(config(1), [&](runtime& rt) {
      mutex m(rt);
      if (held) m.lock();
      auto t = rt.spawn("intruder", [&] {
        m.unlock();
        went_on = true;  // the run stopped at the unlock: teardown runs the fiber on from there
      });
      t.join();
      if (held) m.unlock();
    });
    BOOST_TEST_CONTEXT(held) {
      BOOST_REQUIRE(r.failed.has_value());
      BOOST_TEST(r.failed->kind == failure_kind::abort);
      BOOST_TEST(r.failed->message.find("misuse: mutex.unlock by #1 'intruder' of mutex (object 1), which ") == 0,
                 r.failed->message);
      BOOST_TEST(r.failed->message.find(held ? "which #0 'main' holds" : "which is not locked") != std::string::npos,
                 r.failed->message);
      BOOST_TEST(went_on);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// --- atomic ------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(atomic_semantics)

BOOST_AUTO_TEST_CASE(operations_return_the_previous_value) {
  auto r = run(config(1), [&](runtime& rt) {
    atomic<int> a(rt, 5);
    BOOST_TEST(a.fetch_add(3) == 5);
    BOOST_TEST(a.load() == 8);
    BOOST_TEST(a.fetch_sub(2) == 8);
    BOOST_TEST(a.load() == 6);
    BOOST_TEST(a.exchange(10) == 6);
    int expected = 3;
    BOOST_TEST(!a.compare_exchange(expected, 20));
    BOOST_TEST(expected == 10);  // failure reports the current value
    BOOST_TEST(a.load() == 10);
    BOOST_TEST(a.compare_exchange(expected, 20));
    BOOST_TEST(a.load() == 20);
    a.store(-1);
    BOOST_TEST(a.load() == -1);
  });
  BOOST_TEST(r.ok());
}

namespace {
// Two fibers on two cores each add 1 five times; `racy` uses load + store.
int final_count(std::uint64_t seed, bool racy) {
  int result = -1;
  run(config(seed, "random", 2), [&](runtime& rt) {
    atomic<int> a(rt, 0);
    auto body = [&] {
      for (int k = 0; k < 5; ++k) {
        if (racy) {
          const int v = a.load();
          a.store(v + 1);
        } else {
          a.fetch_add(1);
        }
      }
    };
    auto x = rt.spawn_on(0, "x", body);
    auto y = rt.spawn_on(1, "y", body);
    x.join();
    y.join();
    result = a.load();
  });
  return result;
}
}  // namespace

BOOST_AUTO_TEST_CASE(load_then_store_loses_updates_under_some_seed) {
  int lost_in = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) lost_in += final_count(seed, true) < 10;
  BOOST_TEST(lost_in > 0);
}

BOOST_AUTO_TEST_CASE(fetch_add_never_loses_an_update) {
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) { BOOST_TEST(final_count(seed, false) == 10); }
  }
}

namespace {
// Message passing on the seam's atomics with the given orders: the outcomes
// (flag seen, data seen) over every schedule and every load's choice.
std::set<std::pair<int, int>> message_passing(std::memory_order store_flag, std::memory_order load_flag,
                                              bool seq_cst_only) {
  std::set<std::pair<int, int>> seen;
  run_config c = config(1, "random", 3);
  c.trace = trace_mode::off;
  c.seq_cst_only = seq_cst_only;
  const dfs_bounds unbounded{std::nullopt, std::nullopt, 10'000, false};
  const dfs_outcome o = search_dfs(
      c, unbounded, 0,
      [&](const run_config& rc) {
        return run(rc, [&](runtime& rt) {
          atomic<int> data(rt, 0);
          atomic<int> flag(rt, 0);
          int r1 = 0;
          int r2 = 0;
          auto w = rt.spawn_on(1, "writer", [&] {
            data.store(1, std::memory_order_relaxed);
            flag.store(1, store_flag);
          });
          auto r = rt.spawn_on(2, "reader", [&] {
            r1 = flag.load(load_flag);
            r2 = data.load(std::memory_order_relaxed);
          });
          w.join();
          r.join();
          seen.insert({r1, r2});
        });
      },
      [] { return false; });
  BOOST_TEST(o.exhausted);
  return seen;
}
}  // namespace

// The seam's atomics take the orders the threads backend runs with, and the
// simulator models them (sim/memory_model.hpp, the litmus tests in
// testing/litmus): a relaxed flag lets the reader see it before the data;
// release and acquire do not; seq_cst_only never does.
BOOST_AUTO_TEST_CASE(the_orders_engine_code_names_are_modelled) {
  const std::pair<int, int> stale{1, 0};
  const auto relaxed = message_passing(std::memory_order_relaxed, std::memory_order_relaxed, false);
  BOOST_TEST(relaxed.count(stale) == 1U);
  BOOST_TEST(relaxed.size() == 4U);
  const auto ordered = message_passing(std::memory_order_release, std::memory_order_acquire, false);
  BOOST_TEST(ordered.count(stale) == 0U);
  BOOST_TEST(ordered.size() == 3U);
  const auto sc_only = message_passing(std::memory_order_relaxed, std::memory_order_relaxed, true);
  BOOST_TEST(sc_only.count(stale) == 0U);
  BOOST_TEST(message_passing(std::memory_order_seq_cst, std::memory_order_seq_cst, false) == sc_only);
}

BOOST_AUTO_TEST_SUITE_END()

// --- bounded channel ---------------------------------------------------------

BOOST_AUTO_TEST_SUITE(bounded_channel)

BOOST_AUTO_TEST_CASE(send_suspends_while_full_and_items_arrive_in_fifo_order) {
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      int sent = 0;
      int sent_when_checked = -1;
      std::vector<int> got;
      auto r = run(config(seed, "random", 2), [&](runtime& rt) {
        auto [tx, rx] = int_channel::bounded(rt, 2);
        auto producer = rt.spawn_on(1, "producer", [&, tx = std::move(tx)]() mutable {
          for (int i = 0; i < 5; ++i) {
            BOOST_TEST(tx.send(i).ok());
            ++sent;
          }
        });
        rt.sleep_for(100);  // the producer fills the channel and blocks
        sent_when_checked = sent;
        while (auto v = rx.recv()) got.push_back(*v);
        producer.join();
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(sent_when_checked == 2);
      BOOST_TEST(got == (std::vector<int>{0, 1, 2, 3, 4}));
    }
  }
}

BOOST_AUTO_TEST_CASE(try_send_hands_the_value_back_when_full_or_closed) {
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    BOOST_TEST(tx.try_send(1).ok());
    auto full = tx.try_send(2);
    BOOST_TEST((full.status == send_status::full));
    BOOST_TEST((full.returned.has_value() && *full.returned == 2));
    rx.close();
    auto closed = tx.try_send(3);
    BOOST_TEST((closed.status == send_status::closed));
    BOOST_TEST((closed.returned.has_value() && *closed.returned == 3));
    BOOST_TEST(tx.is_closed());
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(close_refuses_sends_but_queued_items_drain) {
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 4);
    BOOST_TEST(tx.send(1).ok());
    BOOST_TEST(tx.send(2).ok());
    rx.close();
    auto refused = tx.send(3);
    BOOST_TEST((refused.status == send_status::closed));
    BOOST_TEST((refused.returned.has_value() && *refused.returned == 3));
    auto a = rx.recv();
    auto b = rx.try_recv();
    BOOST_TEST((a.has_value() && *a == 1));
    BOOST_TEST((b.status == recv_status::item && b.item.has_value() && *b.item == 2));
    BOOST_TEST(!rx.recv().has_value());  // the sender is alive, but closed + drained ends it
    BOOST_TEST((rx.try_recv().status == recv_status::closed));
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(close_wakes_a_sender_blocked_on_a_full_channel) {
  std::optional<int> handed_back;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    BOOST_TEST(tx.send(1).ok());
    auto s = rt.spawn("sender", [&, tx = tx]() mutable {
      auto out = tx.send(2);
      BOOST_TEST((out.status == send_status::closed));
      handed_back = out.returned;
    });
    settle(rt);
    rx.close();
    s.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST((handed_back.has_value() && *handed_back == 2));
}

BOOST_AUTO_TEST_CASE(dropping_every_sender_disconnects_after_draining) {
  std::vector<int> got;
  bool ended = false;
  auto r = run(config(3, "random", 2), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 8);
    auto rx_task = rt.spawn_on(1, "rx", [&, rx = std::move(rx)]() mutable {
      while (auto v = rx.recv()) got.push_back(*v);
      ended = true;
    });
    {
      auto tx2 = tx;  // a copy: the channel ends only when both are gone
      BOOST_TEST(tx.send(1).ok());
      BOOST_TEST(tx2.send(2).ok());
      tx.reset();
      rt.sleep_for(100);
      BOOST_TEST(!ended);  // tx2 is still alive
      BOOST_TEST(tx2.send(3).ok());
    }
    rx_task.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got == (std::vector<int>{1, 2, 3}));
  BOOST_TEST(ended);
}

BOOST_AUTO_TEST_CASE(dropping_the_receiver_makes_send_return_the_value) {
  std::optional<int> blocked_back;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    auto holder = std::make_unique<int_channel::receiver>(std::move(rx));
    BOOST_TEST(tx.send(1).ok());
    auto s = rt.spawn("blocked", [&, tx = tx]() mutable { blocked_back = tx.send(2).returned; });
    settle(rt);
    holder.reset();  // wakes the blocked sender
    s.join();
    auto out = tx.send(3);
    BOOST_TEST((out.status == send_status::closed));
    BOOST_TEST((out.returned.has_value() && *out.returned == 3));
    BOOST_TEST(tx.is_closed());
  });
  BOOST_TEST(r.ok());
  BOOST_TEST((blocked_back.has_value() && *blocked_back == 2));
}

BOOST_AUTO_TEST_CASE(recv_until_times_out_at_the_deadline) {
  std::int64_t woke_at = -1;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    rt.sleep_for(40);
    auto out = rx.recv_until(500);
    woke_at = rt.now();
    BOOST_TEST((out.status == recv_status::timed_out));
    BOOST_TEST(!out.item.has_value());
    // A deadline already past returns at once.
    BOOST_TEST((rx.recv_until(100).status == recv_status::timed_out));
    BOOST_TEST(rt.now() == 500);
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woke_at == 500);
}

BOOST_AUTO_TEST_CASE(recv_for_is_recv_until_now_plus_the_ttl) {
  std::int64_t woke_at = -1;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    rt.sleep_for(40);
    BOOST_TEST((rx.recv_for(460).status == recv_status::timed_out));
    woke_at = rt.now();
    BOOST_TEST((rx.recv_for(0).status == recv_status::timed_out));
    BOOST_TEST(tx.try_send(7).ok());
    auto queued = rx.recv_for(0);  // a queued item wins over a ttl already spent
    BOOST_TEST((queued.status == recv_status::item));
    BOOST_TEST(queued.item.value_or(0) == 7);
    // A ttl of "forever" clamps its deadline (UBSan would flag a wrap).
    BOOST_TEST(tx.try_send(8).ok());
    BOOST_TEST(rx.recv_for(std::numeric_limits<std::int64_t>::max()).item.value_or(0) == 8);
    BOOST_TEST(lockstep::deadline_after(rt.now(), std::numeric_limits<std::int64_t>::max()) ==
               std::numeric_limits<std::int64_t>::max());
    BOOST_TEST(rt.now() == 500);
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woke_at == 500);
}

BOOST_AUTO_TEST_CASE(recv_until_returns_an_item_that_arrives_first) {
  std::int64_t woke_at = -1;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    auto s = rt.spawn("late", [&, tx = tx]() mutable {
      rt.sleep_for(200);
      BOOST_TEST(tx.send(7).ok());
    });
    auto out = rx.recv_until(500);
    woke_at = rt.now();
    BOOST_TEST((out.status == recv_status::item));
    BOOST_TEST((out.item.has_value() && *out.item == 7));
    s.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woke_at == 200);
}

BOOST_AUTO_TEST_CASE(attached_notify_is_signalled_on_arrival_and_disconnect) {
  std::vector<std::string> seen;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    auto [tx, rx] = int_channel::bounded(rt, 4);
    rx.attach(n);
    auto s = rt.spawn("sender", [&, tx = std::move(tx)]() mutable {
      rt.sleep_for(10);
      BOOST_TEST(tx.send(5).ok());
      rt.sleep_for(10);
      tx.reset();
    });
    BOOST_TEST(n.notified_until(1000));
    BOOST_TEST(rt.now() == 10);
    auto first = rx.try_recv();
    if (first.status == recv_status::item) seen.push_back("item " + std::to_string(*first.item));
    BOOST_TEST(n.notified_until(1000));
    BOOST_TEST(rt.now() == 20);
    if (rx.try_recv().status == recv_status::closed) seen.push_back("closed");
    s.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(seen == (std::vector<std::string>{"item 5", "closed"}));
}

BOOST_AUTO_TEST_CASE(a_sender_woken_for_a_free_slot_and_then_cancelled_passes_the_slot_on) {
  // Capacity 1, two senders blocked. A recv frees the slot and wakes the first
  // sender, which is cancelled before it runs: the second must get the slot,
  // or it waits forever beside an empty channel.
  std::int64_t got_at = -1;
  std::optional<int> got;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = int_channel::bounded(rt, 1);
    BOOST_TEST(tx.send(0).ok());
    auto a = rt.spawn("a", [&, tx = tx]() mutable { (void)tx.send(1); });
    settle(rt);
    auto b = rt.spawn("b", [&, tx = tx]() mutable { (void)tx.send(2); });
    settle(rt);
    tx.reset();
    BOOST_TEST(*rx.recv() == 0);  // wakes a
    a.cancel();                   // before a runs again
    a.join();
    auto out = rx.recv_until(rt.now() + 1000);
    got_at = rt.now();
    got = out.item;
    b.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST((got.has_value() && *got == 2));
  BOOST_TEST(got_at < 1000);
}

BOOST_AUTO_TEST_CASE(capacity_zero_is_rejected) {
  auto r = run(config(1), [&](runtime& rt) {
    BOOST_CHECK_THROW(int_channel::bounded(rt, 0), std::invalid_argument);
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_SUITE_END()

// --- unbounded channel -------------------------------------------------------

BOOST_AUTO_TEST_CASE(unbounded_channel_never_blocks_a_sender_and_keeps_order) {
  std::vector<int> got;
  auto r = run(config(2, "random", 2), [&](runtime& rt) {
    auto [tx, rx] = int_channel::unbounded(rt);
    std::int64_t before = rt.now();
    for (int i = 0; i < 1000; ++i) BOOST_TEST(tx.send(i).ok());
    BOOST_TEST(rt.now() == before);
    BOOST_TEST(rx.size() == 1000u);
    auto consumer = rt.spawn_on(1, "rx", [&, rx = std::move(rx)]() mutable {
      while (auto v = rx.recv()) got.push_back(*v);
    });
    tx.reset();
    consumer.join();
  });
  BOOST_TEST(r.ok());
  BOOST_REQUIRE(got.size() == 1000u);
  for (int i = 0; i < 1000; ++i) BOOST_TEST(got[static_cast<std::size_t>(i)] == i);
}

// --- watch -------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(watch_semantics)

BOOST_AUTO_TEST_CASE(send_replace_stores_without_subscribers_and_late_subscribers_read_it) {
  auto r = run(config(1), [&](runtime& rt) {
    watch<int> w(rt, 1);
    w.send_replace(5);
    BOOST_TEST(w.borrow() == 5);
    auto rx = w.subscribe();
    BOOST_TEST(rx.borrow_and_update() == 5);
    w.send_replace(6);
    BOOST_TEST(rx.borrow_and_update() == 6);
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(changed_wakes_on_send_and_is_false_once_the_watch_is_gone) {
  std::vector<int> got;
  bool last = true;
  auto r = run(config(1), [&](runtime& rt) {
    auto w = std::make_unique<watch<int>>(rt, 0);
    auto rx = w->subscribe();
    auto t = rt.spawn("watcher", [&, rx]() mutable {
      BOOST_TEST(rx.changed());
      got.push_back(rx.borrow_and_update());
      last = rx.changed();
    });
    settle(rt);
    w->send_replace(7);
    settle(rt);
    w.reset();
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got == (std::vector<int>{7}));
  BOOST_TEST(!last);
}

BOOST_AUTO_TEST_CASE(changed_marks_the_newest_value_as_seen) {
  // tokio: changed() marks the value seen, so `while (rx.changed()) use(...)`
  // sees each value once instead of spinning on the first.
  std::vector<int> got;
  auto r = run(config(1), [&](runtime& rt) {
    auto w = std::make_unique<watch<int>>(rt, 0);
    auto t = rt.spawn("watcher", [&, rx = w->subscribe()]() mutable {
      while (got.size() < 10 && rx.changed()) got.push_back(w->borrow());
    });
    for (int v = 1; v <= 3; ++v) {
      settle(rt);
      w->send_replace(v);
    }
    settle(rt);
    w.reset();
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got == (std::vector<int>{1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(changed_reports_an_unseen_value_even_after_the_watch_is_gone) {
  std::vector<bool> results;
  auto r = run(config(1), [&](runtime& rt) {
    auto w = std::make_unique<watch<int>>(rt, 0);
    auto rx = w->subscribe();
    w->send_replace(1);
    w.reset();
    results.push_back(rx.changed());
    results.push_back(rx.changed());
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(results == (std::vector<bool>{true, false}));
}

BOOST_AUTO_TEST_SUITE_END()

// --- oneshot -----------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(oneshot_semantics)

BOOST_AUTO_TEST_CASE(the_value_is_delivered_to_a_waiting_receiver) {
  std::optional<int> got;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = oneshot<int>::make(rt);
    auto t = rt.spawn("rx", [&, rx = std::move(rx)]() mutable { got = rx.recv(); });
    settle(rt);
    BOOST_TEST(tx.send(42));
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST((got.has_value() && *got == 42));
}

BOOST_AUTO_TEST_CASE(a_dropped_sender_gives_nullopt) {
  bool got_nothing = false;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = oneshot<int>::make(rt);
    auto t = rt.spawn("rx", [&, rx = std::move(rx)]() mutable { got_nothing = !rx.recv().has_value(); });
    settle(rt);
    { auto gone = std::move(tx); }
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got_nothing);
}

BOOST_AUTO_TEST_CASE(send_to_a_dropped_receiver_fails) {
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = oneshot<int>::make(rt);
    { auto gone = std::move(rx); }
    BOOST_TEST(!tx.send(1));
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(assigning_over_a_sender_drops_the_old_one) {
  // Move-assignment replaces the sender: the receiver of the replaced one must
  // learn it was dropped, exactly as if it had been destroyed.
  bool got_nothing = false;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = oneshot<int>::make(rt);
    auto [tx2, rx2] = oneshot<int>::make(rt);
    auto t = rt.spawn("rx", [&, rx = std::move(rx)]() mutable { got_nothing = !rx.recv().has_value(); });
    settle(rt);
    tx = std::move(tx2);
    t.join();
    BOOST_TEST(tx.send(3));
    BOOST_TEST(*rx2.recv() == 3);
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(got_nothing);
}

BOOST_AUTO_TEST_SUITE_END()

// --- notify ------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(notify_semantics)

BOOST_AUTO_TEST_CASE(notify_one_without_waiters_stores_one_permit_not_two) {
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    n.notify_one();
    n.notify_one();
    n.notified();  // the permit: returns at once
    BOOST_TEST(rt.now() == 0);
    BOOST_TEST(!n.notified_until(100));  // no second permit
    BOOST_TEST(rt.now() == 100);
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(notify_waiters_wakes_every_current_waiter_and_stores_nothing) {
  int woken = 0;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    std::vector<task> tasks;
    for (int i = 0; i < 3; ++i) tasks.push_back(rt.spawn("w", [&] { n.notified(); ++woken; }));
    settle(rt);
    n.notify_waiters();
    for (auto& t : tasks) t.join();
    BOOST_TEST(!n.notified_until(rt.now() + 100));
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woken == 3);
}

BOOST_AUTO_TEST_CASE(notified_until_times_out_or_returns_when_notified) {
  std::vector<std::int64_t> at;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    BOOST_TEST(!n.notified_until(250));
    at.push_back(rt.now());
    auto t = rt.spawn("poker", [&] {
      rt.sleep_for(50);
      n.notify_one();
    });
    BOOST_TEST(n.notified_until(1000));
    at.push_back(rt.now());
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(at == (std::vector<std::int64_t>{250, 300}));
}

BOOST_AUTO_TEST_CASE(a_waiter_cancelled_after_being_notified_passes_the_permit_on) {
  bool second_woke = false;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    auto first = rt.spawn("first", [&] { n.notified(); });
    settle(rt);
    auto second = rt.spawn("second", [&] {
      n.notified();
      second_woke = true;
    });
    settle(rt);
    n.notify_one();  // goes to `first`
    first.cancel();  // before it runs
    first.join();
    second.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(second_woke);
}

BOOST_AUTO_TEST_CASE(a_cancelled_notified_waiter_with_no_successor_stores_the_permit) {
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    auto only = rt.spawn("only", [&] { n.notified(); });
    settle(rt);
    n.notify_one();
    only.cancel();
    only.join();
    const std::int64_t before = rt.now();
    BOOST_TEST(n.notified_until(before + 100));
    BOOST_TEST(rt.now() == before);
  });
  BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(a_second_notify_one_while_the_woken_waiter_has_not_run_stores_a_permit) {
  // tokio: the first notify_one is assigned to the waiter, the second finds
  // nobody waiting and stores a permit. Neither may be lost.
  bool second_returned_at_once = false;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    auto w = rt.spawn("w", [&] {
      n.notified();
      const std::int64_t t = rt.now();
      second_returned_at_once = n.notified_until(t + 100) && rt.now() == t;
    });
    settle(rt);
    n.notify_one();
    n.notify_one();
    w.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(second_returned_at_once);
}

BOOST_AUTO_TEST_CASE(a_notification_given_to_a_waiter_is_not_taken_by_a_newcomer) {
  bool waiter_woke = false;
  bool newcomer_got_one = true;
  auto r = run(config(1), [&](runtime& rt) {
    notify n(rt);
    auto w = rt.spawn("w", [&] {
      n.notified();
      waiter_woke = true;
    });
    settle(rt);
    n.notify_one();  // assigned to w, which has not run yet
    newcomer_got_one = n.notified_until(rt.now() + 50);
    w.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(waiter_woke);
  BOOST_TEST(!newcomer_got_one);
}

BOOST_AUTO_TEST_SUITE_END()

// --- cancellation token ------------------------------------------------------

BOOST_AUTO_TEST_CASE(cancellation_token_copies_share_state_and_cancel_wakes_waiters) {
  int woken = 0;
  std::vector<std::int64_t> woke_at;
  auto r = run(config(4, "random", 2), [&](runtime& rt) {
    cancellation_token token(rt);
    std::vector<task> tasks;
    for (std::uint32_t i = 0; i < 3; ++i) {
      tasks.push_back(rt.spawn_on(i % 2, "w", [&, copy = token]() mutable {
        copy.cancelled();
        ++woken;
        woke_at.push_back(rt.now());
      }));
    }
    rt.sleep_for(30);
    BOOST_TEST(woken == 0);
    cancellation_token other = token;
    BOOST_TEST(!other.is_cancelled());
    other.cancel();
    BOOST_TEST(token.is_cancelled());
    for (auto& t : tasks) t.join();
    token.cancelled();  // already cancelled: returns at once
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woken == 3);
  BOOST_TEST(woke_at == (std::vector<std::int64_t>{30, 30, 30}));
}
