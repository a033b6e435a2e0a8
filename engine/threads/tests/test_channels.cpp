// Goal: channel, watch and oneshot carry values between fibers on the two
// cores with the seam's semantics: every item exactly once and in order per
// producer, backpressure, disconnect either way, close, deadlines, attach;
// watch's late subscriber and end; oneshot's value and dropped sender.
#define BOOST_TEST_MODULE threads_channels
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/util.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::testing::until_parked;

namespace {
constexpr std::int64_t ms = 1'000'000;
using chan = runtime::channel<std::uint64_t>;
}  // namespace

BOOST_AUTO_TEST_CASE(recv_parked_on_core_0_is_woken_by_a_send_from_core_1) {
  runtime rt(2);
  std::optional<std::uint64_t> got;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    auto r = rt.spawn("receiver", [&, rx = std::move(rx)]() mutable { got = rx.recv(); });
    until_parked(rt, r);
    auto s = rt.spawn_on(1, "sender", [&, tx = std::move(tx)]() mutable { BOOST_TEST(tx.send(7).ok()); });
    s.join();
    r.join();
  });
  BOOST_TEST(got.value_or(0) == 7U);
}

void many_producers(std::optional<std::size_t> capacity) {
  // 8 producers, 4 on each core, each sending its own increasing sequence;
  // one receiver on core 0. Every item arrives once, each producer's in order.
  constexpr std::uint64_t producers = 8, per_producer = 20000;
  runtime rt(2);
  std::vector<std::uint64_t> next(producers, 0);
  std::uint64_t received = 0, out_of_order = 0;
  std::atomic<int> refused{0};  // Boost.Test is not thread-safe: fibers on both cores only count
  rt.run([&] {
    auto [tx, rx] = capacity ? chan::bounded(rt, *capacity) : chan::unbounded(rt);
    std::vector<runtime::task> ts;
    for (std::uint64_t p = 0; p < producers; ++p) {
      ts.push_back(rt.spawn_on(static_cast<std::uint32_t>(p % 2), "producer", [&refused, p, tx = tx]() mutable {
        for (std::uint64_t i = 0; i < per_producer; ++i) {
          if (!tx.send(p << 32 | i).ok()) refused.fetch_add(1);
        }
      }));
    }
    tx.reset();  // the producers hold the only senders now
    while (auto v = rx.recv()) {
      const std::uint64_t p = *v >> 32, i = *v & 0xffffffffU;
      if (i != next[p]) ++out_of_order;
      next[p] = i + 1;
      ++received;
    }
    for (auto& t : ts) t.join();
  });
  BOOST_TEST(received == producers * per_producer);
  BOOST_TEST(out_of_order == 0U);
  BOOST_TEST(refused.load() == 0);
  for (std::uint64_t p = 0; p < producers; ++p) BOOST_TEST(next[p] == per_producer);
}

BOOST_AUTO_TEST_CASE(unbounded_many_producers_on_both_cores_exactly_once_in_order) { many_producers(std::nullopt); }

BOOST_AUTO_TEST_CASE(bounded_many_producers_on_both_cores_exactly_once_in_order) { many_producers(4); }

BOOST_AUTO_TEST_CASE(bounded_channel_parks_a_sender_while_full) {
  runtime rt(2);
  bool third_sent = false;
  std::vector<std::uint64_t> got;
  rt.run([&] {
    auto [tx, rx] = chan::bounded(rt, 2);
    BOOST_TEST(tx.try_send(1).ok());
    BOOST_TEST(tx.try_send(2).ok());
    auto full = tx.try_send(3);
    BOOST_TEST((full.status == send_status::full));
    BOOST_TEST(full.returned.value_or(0) == 3U, "a refused value is handed back");
    auto s = rt.spawn_on(1, "sender", [&, tx = tx]() mutable { third_sent = tx.send(3).ok(); });
    until_parked(rt, s);
    BOOST_TEST(!third_sent);
    BOOST_TEST(rx.size() == 2U);
    got.push_back(*rx.recv());  // makes room: the parked sender completes
    s.join();
    BOOST_TEST(third_sent);
    got.push_back(*rx.recv());
    got.push_back(*rx.recv());
  });
  BOOST_TEST(got == (std::vector<std::uint64_t>{1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(a_sender_woken_for_room_that_is_cancelled_passes_the_room_on) {
  runtime rt(2);
  bool second_sent = false;
  std::vector<std::uint64_t> got;
  rt.run([&] {
    auto [tx, rx] = chan::bounded(rt, 1);
    BOOST_TEST(tx.try_send(1).ok());
    auto first = rt.spawn("first", [tx = tx]() mutable { (void)tx.send(2); });
    until_parked(rt, first);
    auto second = rt.spawn_on(1, "second", [&, tx = tx]() mutable { second_sent = tx.send(3).ok(); });
    until_parked(rt, second);
    // `first` shares core 0 with main, so it cannot run between these two:
    // it is woken for the free slot and then cancelled before it takes it.
    got.push_back(*rx.recv());
    first.cancel();
    first.join();
    second.join();
    got.push_back(*rx.recv());
  });
  BOOST_TEST(second_sent, "the slot the cancelled sender was woken for reaches the next sender");
  BOOST_TEST(got == (std::vector<std::uint64_t>{1, 3}));
}

BOOST_AUTO_TEST_CASE(recv_drains_then_reports_the_end_when_every_sender_is_gone) {
  runtime rt(2);
  std::vector<std::uint64_t> got;
  bool ended = false, try_closed = false;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      while (auto v = rx.recv()) got.push_back(*v);
      ended = true;
      try_closed = rx.try_recv().status == recv_status::closed;
    });
    auto copy = tx;
    BOOST_TEST(tx.send(1).ok());
    BOOST_TEST(copy.send(2).ok());
    tx.reset();
    until_parked(rt, r);
    BOOST_TEST(!ended, "one sender is still alive");
    copy.reset();
    r.join();
  });
  BOOST_TEST(got == (std::vector<std::uint64_t>{1, 2}));
  BOOST_TEST(ended);
  BOOST_TEST(try_closed);
}

BOOST_AUTO_TEST_CASE(a_dropped_receiver_refuses_sends_and_frees_a_parked_sender) {
  runtime rt(2);
  std::optional<send_outcome<std::uint64_t>> parked;
  rt.run([&] {
    auto [tx, rx] = chan::bounded(rt, 1);
    BOOST_TEST(tx.send(1).ok());
    auto s = rt.spawn_on(1, "sender", [&, tx = tx]() mutable { parked = tx.send(2); });
    until_parked(rt, s);
    { auto gone = std::move(rx); }
    s.join();
    auto after = tx.send(3);
    BOOST_TEST((after.status == send_status::closed));
    BOOST_TEST(after.returned.value_or(0) == 3U);
    BOOST_TEST(tx.is_closed());
  });
  BOOST_REQUIRE(parked.has_value());
  BOOST_TEST((parked->status == send_status::closed));
  BOOST_TEST(parked->returned.value_or(0) == 2U);
}

// An unbounded receiver takes the whole queue at its first receive and serves
// the rest without the lock: what it took still counts in size(), comes out
// before anything sent later, moves with the receiver and is destroyed once
// when the receiver goes.
BOOST_AUTO_TEST_CASE(an_unbounded_receiver_keeps_order_size_and_ownership_of_what_it_took) {
  runtime rt(2);
  std::atomic<int> destroyed{0};
  std::vector<int> got;
  std::size_t size_after_first = 0, size_after_move = 0;
  rt.run([&] {
    using owned = std::shared_ptr<threads::testing::dtor_counter>;
    auto [tx, rx] = runtime::channel<std::pair<int, owned>>::unbounded(rt);
    const auto item = [&](int n) { return std::pair<int, owned>(n, std::make_shared<threads::testing::dtor_counter>(destroyed)); };
    for (int n = 1; n <= 3; ++n) BOOST_TEST(tx.send(item(n)).ok());
    got.push_back(rx.recv()->first);  // takes 1, 2 and 3; hands out 1
    size_after_first = rx.size();
    auto from_other_core = rt.spawn_on(1, "sender", [&, tx = tx]() mutable { BOOST_TEST(tx.send(item(4)).ok()); });
    from_other_core.join();
    auto moved = std::move(rx);
    size_after_move = moved.size();
    got.push_back(moved.try_recv().item->first);
    got.push_back(moved.recv_for(0).item->first);
    got.push_back(moved.recv()->first);
    BOOST_TEST(destroyed.load() == 4, "every value received so far was destroyed with its pair");
    for (int n = 5; n <= 6; ++n) BOOST_TEST(tx.send(item(n)).ok());
    got.push_back(moved.recv()->first);  // takes 5 and 6; hands out 5
    { auto gone = std::move(moved); }    // 6, taken and not received, goes with it
    BOOST_TEST(destroyed.load() == 6);
  });
  BOOST_TEST(got == (std::vector<int>{1, 2, 3, 4, 5}));
  BOOST_TEST(size_after_first == 2U);
  BOOST_TEST(size_after_move == 3U);
  BOOST_TEST(destroyed.load() == 6);
}

// Values still in the channel's own queue (sent, never taken) are destroyed
// when the receiver goes, on either kind of channel, and a sender keeps
// nothing after that.
BOOST_AUTO_TEST_CASE(values_still_queued_are_destroyed_with_the_receiver) {
  runtime rt(2);
  std::atomic<int> destroyed{0};
  std::vector<int> after_drop;
  rt.run([&] {
    using owned = std::shared_ptr<threads::testing::dtor_counter>;
    using chan_t = runtime::channel<owned>;
    const auto item = [&] { return std::make_shared<threads::testing::dtor_counter>(destroyed); };
    auto [utx, urx] = chan_t::unbounded(rt);
    auto [btx, brx] = chan_t::bounded(rt, 4);
    for (int n = 0; n < 3; ++n) BOOST_TEST(utx.send(item()).ok());
    for (int n = 0; n < 2; ++n) BOOST_TEST(btx.send(item()).ok());
    after_drop.push_back(destroyed.load());
    { auto gone = std::move(urx); }
    after_drop.push_back(destroyed.load());
    { auto gone = std::move(brx); }
    after_drop.push_back(destroyed.load());
    auto refused = utx.send(item());
    BOOST_TEST((refused.status == send_status::closed));
    refused.returned.reset();
    after_drop.push_back(destroyed.load());
  });
  BOOST_TEST(after_drop == (std::vector<int>{0, 3, 5, 6}));
}

BOOST_AUTO_TEST_CASE(close_refuses_sends_and_still_drains_what_is_queued) {
  runtime rt(2);
  std::vector<std::uint64_t> got;
  bool refused = false;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    BOOST_TEST(tx.send(1).ok());
    BOOST_TEST(tx.send(2).ok());
    rx.close();
    auto s = rt.spawn_on(1, "late", [&, tx = tx]() mutable { refused = tx.send(3).status == send_status::closed; });
    s.join();
    while (auto v = rx.recv()) got.push_back(*v);  // ends although senders live
  });
  BOOST_TEST(refused);
  BOOST_TEST(got == (std::vector<std::uint64_t>{1, 2}));
}

BOOST_AUTO_TEST_CASE(recv_until_times_out_after_its_deadline) {
  runtime rt(2);
  recv_status status = recv_status::item;
  std::int64_t deadline = 0, returned = 0;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      deadline = rt.now() + 2 * ms;
      status = rx.recv_until(deadline).status;
      returned = rt.now();
    });
    r.join();
  });
  BOOST_TEST((status == recv_status::timed_out));
  BOOST_TEST(returned >= deadline);
}

BOOST_AUTO_TEST_CASE(recv_until_returns_an_item_sent_from_the_other_core_before_the_deadline) {
  runtime rt(2);
  recv_outcome<std::uint64_t> got{recv_status::empty, std::nullopt};
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      got = rx.recv_until(rt.now() + 3600'000 * ms);
    });
    until_parked(rt, r);
    BOOST_TEST(tx.send(5).ok());
    r.join();
  });
  BOOST_TEST((got.status == recv_status::item));
  BOOST_TEST(got.item.value_or(0) == 5U);
}

BOOST_AUTO_TEST_CASE(recv_for_times_out_a_ttl_after_it_starts_waiting_and_a_zero_ttl_at_once) {
  runtime rt(2);
  recv_status waited = recv_status::item, zero = recv_status::item;
  std::int64_t called = 0, returned = 0;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      zero = rx.recv_for(0).status;
      called = rt.now();
      waited = rx.recv_for(2 * ms).status;
      returned = rt.now();
    });
    r.join();
  });
  BOOST_TEST((zero == recv_status::timed_out));
  BOOST_TEST((waited == recv_status::timed_out));
  BOOST_TEST(returned - called >= 2 * ms);
}

BOOST_AUTO_TEST_CASE(recv_for_takes_a_queued_item_even_with_no_ttl_and_waits_for_one_from_the_other_core) {
  runtime rt(2);
  recv_outcome<std::uint64_t> queued{recv_status::empty, std::nullopt}, sent{recv_status::empty, std::nullopt};
  recv_status after_drop = recv_status::item;
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    BOOST_TEST(tx.send(4).ok());
    auto r = rt.spawn_on(1, "receiver", [&, rx = std::move(rx)]() mutable {
      queued = rx.recv_for(0);
      // The longest ttl there is: the deadline saturates instead of wrapping
      // into the past (which would time out at once).
      sent = rx.recv_for(std::numeric_limits<std::int64_t>::max());
      after_drop = rx.recv_for(std::numeric_limits<std::int64_t>::max()).status;
    });
    // Not until_parked: a wrapped deadline would time out without parking.
    while (!r.is_waiting() && !r.finished()) rt.yield_now();
    BOOST_TEST(tx.send(5).ok());
    tx.reset();  // whether it parks again first or not, the end comes after 5
    r.join();
  });
  BOOST_TEST((queued.status == recv_status::item));
  BOOST_TEST(queued.item.value_or(0) == 4U);
  BOOST_TEST((sent.status == recv_status::item));
  BOOST_TEST(sent.item.value_or(0) == 5U);
  BOOST_TEST((after_drop == recv_status::closed));
}

BOOST_AUTO_TEST_CASE(an_attached_notify_is_signalled_on_arrival_and_at_the_end) {
  // A select over two channels: try_recv each, and wait on the notify only
  // after a pass that took nothing. A notify stores one permit however many
  // signals arrive while nobody waits, so a loop that waits after every pass
  // strands what arrived behind a merged permit: b's last arrival and its end
  // can land between two waits. This test waited after every pass and hung
  // in 2 runs of 5,000 (20 of 5,000 before the channels' batch take).
  runtime rt(2);
  std::vector<std::uint64_t> got;
  int ends = 0;
  rt.run([&] {
    auto [tx_a, rx_a] = chan::unbounded(rt);
    auto [tx_b, rx_b] = chan::bounded(rt, 1);
    auto r = rt.spawn("selector", [&, rx_a = std::move(rx_a), rx_b = std::move(rx_b)]() mutable {
      runtime::notify ready(rt);
      rx_a.attach(ready);
      rx_b.attach(ready);
      while (ends < 2) {
        ends = 0;
        bool took = false;
        for (auto* rx : {&rx_a, &rx_b}) {
          auto o = rx->try_recv();
          if (o.status == recv_status::item) {
            got.push_back(*o.item);
            took = true;
          }
          if (o.status == recv_status::closed) ++ends;
        }
        if (ends < 2 && !took) ready.notified();
      }
    });
    auto a = rt.spawn_on(1, "a", [&, tx = std::move(tx_a)]() mutable {
      for (std::uint64_t i = 0; i < 100; ++i) BOOST_TEST(tx.send(i).ok());
    });
    auto b = rt.spawn_on(1, "b", [&, tx = std::move(tx_b)]() mutable {
      for (std::uint64_t i = 1000; i < 1100; ++i) BOOST_TEST(tx.send(i).ok());
    });
    a.join();
    b.join();
    r.join();
  });
  BOOST_TEST(got.size() == 200U);
  BOOST_TEST(ends == 2);
}

BOOST_AUTO_TEST_CASE(watch_late_subscriber_reads_the_latest_value) {
  runtime rt(2);
  int late = 0, seen_after_change = 0;
  std::atomic<bool> changed{false};  // polled by main while the waiter runs on core 1
  bool ended = true;
  rt.run([&] {
    auto w = std::make_unique<runtime::watch<int>>(rt, 0);
    w->send_replace(1);
    w->send_replace(2);  // nobody subscribed: still stored
    auto rx = w->subscribe();
    late = rx.borrow_and_update();
    auto waiter = rt.spawn_on(1, "waiter", [&, rx]() mutable {
      changed = rx.changed();
      seen_after_change = rx.borrow_and_update();
      ended = rx.changed();  // false once the watch is gone with nothing newer
    });
    until_parked(rt, waiter);
    w->send_replace(3);
    // Wait for the waiter to park again (its second changed()), then drop the sender.
    while (!changed || !waiter.is_waiting()) rt.yield_now();
    w.reset();
    waiter.join();
  });
  BOOST_TEST(late == 2);
  BOOST_TEST(changed.load());
  BOOST_TEST(seen_after_change == 3);
  BOOST_TEST(!ended);
}

namespace {
// Two words that a torn read would show apart: every send stores a == b.
struct pair_value {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};
}  // namespace

// Which values a watch reads without its lock: those whose every byte is value.
static_assert(threads::detail::seqlock_codec<std::uint64_t>::usable);
static_assert(threads::detail::seqlock_codec<std::optional<std::uint64_t>>::usable);
static_assert(threads::detail::seqlock_codec<std::optional<pair_value>>::usable);
static_assert(!threads::detail::seqlock_codec<std::string>::usable);
struct padded {
  std::uint8_t tag;
  std::uint64_t value;
};
static_assert(!threads::detail::seqlock_codec<padded>::usable);

BOOST_AUTO_TEST_CASE(watch_reads_without_the_lock_never_see_a_send_half_written) {
  // The sender on core 0 stores {i, i} as fast as it can; the reader on core
  // 1 borrows meanwhile. A seqlock that let a read through mid-write would
  // show a != b, or a version that went back.
  runtime rt(2);
  constexpr std::uint64_t sends = 200'000;
  std::uint64_t torn = 0, backwards = 0, reads = 0, last_seen = 0;
  std::atomic<bool> done{false}, reading{false};
  rt.run([&] {
    runtime::watch<std::optional<pair_value>> w(rt, std::nullopt);
    auto rx = w.subscribe();
    auto reader = rt.spawn_on(1, "reader", [&, rx]() mutable {
      std::uint64_t prev = 0;
      while (!done.load()) {
        const std::optional<pair_value> v = rx.borrow_and_update();
        ++reads;
        reading = true;
        if (!v) continue;
        if (v->a != v->b) ++torn;
        if (v->a < prev) ++backwards;
        prev = v->a;
      }
      last_seen = rx.borrow_and_update()->a;
    });
    while (!reading.load()) rt.yield_now();  // the reads must overlap the sends
    for (std::uint64_t i = 1; i <= sends; ++i) w.send_replace(pair_value{i, i});
    done = true;
    reader.join();
  });
  BOOST_TEST(torn == 0U);
  BOOST_TEST(backwards == 0U);
  BOOST_TEST(reads > 0U);
  BOOST_TEST(last_seen == sends);
}

BOOST_AUTO_TEST_CASE(watch_changed_after_a_lock_free_borrow_reports_only_newer_sends) {
  runtime rt(2);
  bool changed_before = true, changed_after = false;
  std::atomic<bool> finished{false};
  std::optional<std::uint64_t> first, second;
  rt.run([&] {
    runtime::watch<std::optional<std::uint64_t>> w(rt, std::nullopt);
    auto rx = w.subscribe();
    w.send_replace(7);
    first = rx.borrow_and_update();  // marks version 1 seen
    auto waiter = rt.spawn_on(1, "waiter", [&, rx]() mutable {
      changed_after = rx.changed();
      second = rx.borrow_and_update();
      finished = true;
    });
    // It must park (version 1 was seen, nothing newer yet); had the borrow
    // not marked it seen, changed() would return at once and it would finish.
    while (!waiter.is_waiting() && !finished.load()) rt.yield_now();
    changed_before = finished.load();
    w.send_replace(8);
    waiter.join();
  });
  BOOST_TEST(first.value_or(0) == 7U);
  BOOST_TEST(!changed_before);
  BOOST_TEST(changed_after);
  BOOST_TEST(second.value_or(0) == 8U);
}

BOOST_AUTO_TEST_CASE(oneshot_carries_one_value_across_cores) {
  runtime rt(2);
  std::optional<std::string> got;
  bool sent = false;
  rt.run([&] {
    auto [tx, rx] = runtime::oneshot<std::string>::make(rt);
    auto r = rt.spawn("receiver", [&, rx = std::move(rx)]() mutable { got = rx.recv(); });
    until_parked(rt, r);
    auto s = rt.spawn_on(1, "sender", [&, tx = std::move(tx)]() mutable { sent = tx.send("hello"); });
    s.join();
    r.join();
  });
  BOOST_TEST(sent);
  BOOST_TEST(got.value_or("<none>") == "hello");
}

BOOST_AUTO_TEST_CASE(oneshot_holds_one_unread_value) {
  runtime rt(1);
  bool first = false, second = true;
  std::optional<std::string> got;
  rt.run([&] {
    auto [tx, rx] = runtime::oneshot<std::string>::make(rt);
    first = tx.send("x");
    second = tx.send("y");
    got = rx.recv();
  });
  BOOST_TEST(first);
  BOOST_TEST(!second, "a value not yet received is not replaced");
  BOOST_TEST(got.value_or("<none>") == "x");
}

BOOST_AUTO_TEST_CASE(oneshot_dropped_sender_gives_nullopt) {
  runtime rt(2);
  std::optional<int> got = 1;
  rt.run([&] {
    auto [tx, rx] = runtime::oneshot<int>::make(rt);
    auto r = rt.spawn("receiver", [&, rx = std::move(rx)]() mutable { got = rx.recv(); });
    until_parked(rt, r);
    auto s = rt.spawn_on(1, "dropper", [tx = std::move(tx)]() mutable { auto gone = std::move(tx); });
    s.join();
    r.join();
  });
  BOOST_TEST(!got.has_value());
}

BOOST_AUTO_TEST_CASE(oneshot_send_to_a_dropped_receiver_fails) {
  runtime rt(2);
  bool sent = true;
  rt.run([&] {
    auto [tx, rx] = runtime::oneshot<int>::make(rt);
    { auto gone = std::move(rx); }
    sent = tx.send(1);
  });
  BOOST_TEST(!sent);
}
