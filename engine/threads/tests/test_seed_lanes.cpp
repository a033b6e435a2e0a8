// Goal: the lane router keeps, on the real threads backend (two pinned cores),
// every promise velo's LaneRouter tests pin down — per-key order, keys in
// parallel, idle reaping that never takes a lane with work, per-key capacity,
// teardown on drop, a lane outliving its consumer's caught failures — and,
// beyond the seed, what an uncaught one does on this backend. Same names and
// checks as the simulator's port (engine/tests/test_lanes.cpp); the
// seed's `wait_for` polls with 1 ms sleeps up to a generous deadline and fails
// the test with its label. Nothing is timed: where the seed relied on a sleep
// lasting, a handler here waits on a gate the test opens; where it asserts
// something does not happen, it waits a multiple of the TTL, which slowness
// (TSan, a loaded box) can only make a weaker check, never a false failure.
//
// Boost.Test is not thread-safe: assertions are made only on main's fiber or
// after run(); handlers and producers record into atomics and locked logs.
// What a lane touches lives outside run()'s main, so it outlives the lanes
// still draining after main returns.
#define BOOST_TEST_MODULE threads_seed_lanes
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "engine/threads/runtime.hpp"

using namespace lockstep;
using lockstep::threads::runtime;

namespace {

constexpr std::int64_t ms = 1'000'000;
/// How long any wait may take before it counts as a failure: generous, as CI
/// runs these under ThreadSanitizer (10-30x slower).
constexpr std::int64_t patience_ns = 20'000 * ms;

struct counting_observer final : lane_observer {
  std::atomic<int> created{0};
  std::atomic<int> closed{0};
  void lane_created() override { created.fetch_add(1); }
  void lane_closed() override { closed.fetch_add(1); }
};

template <class K, class T>
using router_t = lane_router<runtime, K, T>;

lane_router_config<std::uint64_t> cfg(std::optional<std::int64_t> ttl_ns, std::shared_ptr<counting_observer> obs) {
  lane_router_config<std::uint64_t> c;
  c.idle_ttl_ns = ttl_ns;
  c.observer = std::move(obs);
  return c;
}

/// Spreads lanes over the cores by key, so lanes of distinct keys run in parallel.
std::uint32_t by_key(const std::uint64_t& key) { return static_cast<std::uint32_t>(key); }

/// Polls `pred` every millisecond until it holds (true) or `limit_ns` passes
/// (false). Asserts nothing, so lanes and producers may call it too.
template <class Pred>
bool poll_until(runtime& rt, Pred pred, std::int64_t limit_ns = patience_ns) {
  const std::int64_t deadline = rt.now() + limit_ns;
  while (!pred()) {
    if (rt.now() >= deadline) return pred();
    rt.sleep_for(ms);
  }
  return true;
}

/// The seed's wait_for: fails the test with `label` rather than hanging. Main's fiber only.
template <class Pred>
void wait_for(runtime& rt, const char* label, Pred pred) {
  BOOST_REQUIRE_MESSAGE(poll_until(rt, pred), "timed out waiting for: " << label);
}

/// A latch fibers can wait on, bounded: open() releases every waiter, present
/// and future. Each released waiter passes the wake on (notify_one stores a
/// permit when nobody waits, so neither the opener's wake nor a pass is lost).
class gate {
 public:
  explicit gate(runtime& rt) : rt_(rt), open_(rt, false), wake_(rt) {}
  void open() {
    open_.store(true);
    wake_.notify_one();
  }
  [[nodiscard]] bool is_open() const { return open_.load(); }
  /// True once open; false if `limit_ns` passes first (the caller reports it).
  bool wait(std::int64_t limit_ns = patience_ns) {
    const std::int64_t deadline = rt_.now() + limit_ns;
    while (!open_.load()) {
      if (!wake_.notified_until(deadline)) return open_.load();
    }
    wake_.notify_one();  // to the next waiter; a spare permit only costs a recheck
    return true;
  }

 private:
  runtime& rt_;
  runtime::atomic<bool> open_;
  runtime::notify wake_;
};

/// A vector appended to by lanes and read by the test, under a runtime::mutex.
template <class T>
class shared_log {
 public:
  explicit shared_log(runtime& rt) : mu_(rt) {}
  void push(T v) {
    std::lock_guard<runtime::mutex> hold(mu_);
    items_.push_back(std::move(v));
  }
  [[nodiscard]] std::size_t size() {
    std::lock_guard<runtime::mutex> hold(mu_);
    return items_.size();
  }
  [[nodiscard]] std::vector<T> snapshot() {
    std::lock_guard<runtime::mutex> hold(mu_);
    return items_;
  }

 private:
  runtime::mutex mu_;
  std::vector<T> items_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(lane_preserves_per_key_order) {
  constexpr std::uint64_t keys = 4;
  constexpr std::uint32_t per_key = 250;
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<std::pair<std::uint64_t, std::uint32_t>> log(rt);
  int refused = 0;
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // keys 0 and 2 on core 0 (with main), 1 and 3 on core 1
    router_t<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> router(
        rt,
        [&](std::pair<std::uint64_t, std::uint32_t> item) {
          rt.yield_now();  // every chance to reorder
          log.push(item);
        },
        c);
    for (std::uint32_t seq = 0; seq < per_key; ++seq)
      for (std::uint64_t key = 0; key < keys; ++key) refused += router.route(key, {key, seq}).ok() ? 0 : 1;
    wait_for(rt, "all items handled", [&] { return log.size() == keys * per_key; });
  });
  BOOST_TEST(refused == 0);
  BOOST_TEST(obs->created.load() == static_cast<int>(keys));
  std::map<std::uint64_t, std::vector<std::uint32_t>> grouped;
  for (auto& [key, seq] : log.snapshot()) grouped[key].push_back(seq);
  std::vector<std::uint32_t> expected(per_key);
  for (std::uint32_t i = 0; i < per_key; ++i) expected[i] = i;
  for (std::uint64_t key = 0; key < keys; ++key) {
    BOOST_TEST(grouped[key] == expected, "key " << key << " was reordered");
  }
}

BOOST_AUTO_TEST_CASE(distinct_keys_run_concurrently) {
  // A two-party barrier: each key's handler waits, inside the handler, until
  // the other key's handler has started. Were the keys to share a lane, the
  // first would wait out its bound alone and report that it never met the other.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  runtime::atomic<int> arrived(rt, 0);
  gate both(rt);
  std::atomic<int> met{0}, done{0};
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // key 1 on core 1, key 2 on core 0
    router_t<std::uint64_t, int> router(
        rt,
        [&](int) {
          if (arrived.fetch_add(1) + 1 == 2) both.open();
          if (both.wait(patience_ns / 2)) met.fetch_add(1);  // shorter than main's wait: its own verdict
          done.fetch_add(1);
        },
        c);
    BOOST_TEST(router.route(1, 0).ok());
    BOOST_TEST(router.route(2, 0).ok());
    wait_for(rt, "both handlers returned", [&] { return done.load() == 2; });
  });
  BOOST_TEST(met.load() == 2, "each key's handler must have run while the other key's was in flight (met: "
                                   << met.load() << " of 2)");
  BOOST_TEST(obs->created.load() == 2);
}

BOOST_AUTO_TEST_CASE(idle_lane_is_reaped) {
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  std::atomic<int> handled{0};
  rt.run([&] {
    router_t<std::uint64_t, int> router(rt, [&](int) { handled.fetch_add(1); }, cfg(50 * ms, obs));
    BOOST_TEST(router.route(7, 0).ok());
    wait_for(rt, "item handled", [&] { return handled.load() == 1; });
    wait_for(rt, "lane reaped", [&] { return router.lane_count() == 0; });
    // The reap leaves the map first; lane_closed() follows as the lane's fiber ends.
    wait_for(rt, "lane closed", [&] { return obs->closed.load() >= 1; });
    BOOST_TEST(obs->created.load() == 1);
    BOOST_TEST(obs->closed.load() == 1);
  });
}

BOOST_AUTO_TEST_CASE(no_reap_while_pending) {
  // A backlog keeps the lane alive although each handler outlasts the TTL 20
  // times over. The lane runs on core 0 with main (default placement), so all
  // five routes land before it takes the first: a stall of main's thread
  // cannot open a gap in the backlog.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<int> log(rt);
  rt.run([&] {
    router_t<std::uint64_t, int> router(
        rt,
        [&](int seq) {
          rt.sleep_for(20 * ms);
          log.push(seq);
        },
        cfg(1 * ms, obs));
    for (int seq = 0; seq < 5; ++seq) BOOST_TEST(router.route(1, seq).ok());
    wait_for(rt, "all items handled", [&] { return log.size() == 5; });
  });
  BOOST_TEST(log.snapshot() == (std::vector<int>{0, 1, 2, 3, 4}));
  BOOST_TEST(obs->created.load() == 1, "the lane must not be reaped and rebuilt while work is queued");
}

BOOST_AUTO_TEST_CASE(no_reap_while_handler_in_flight) {
  // One item whose handler runs far past the TTL with an empty queue behind
  // it. The seed's 150 ms handler sleep becomes a gate the test opens, so the
  // handler is in flight for sure when the test looks, however slow the box.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  gate started(rt), release(rt);
  std::atomic<int> finished{0}, release_timeouts{0};
  rt.run([&] {
    auto c = cfg(5 * ms, obs);
    c.place = by_key;  // key 1: core 1
    router_t<std::uint64_t, int> router(
        rt,
        [&](int) {
          started.open();
          if (!release.wait()) release_timeouts.fetch_add(1);
          finished.fetch_add(1);
        },
        c);
    BOOST_TEST(router.route(1, 0).ok());
    BOOST_REQUIRE_MESSAGE(started.wait(), "timed out waiting for: handler started");
    rt.sleep_for(60 * ms);  // 12 TTLs with the handler in flight
    BOOST_TEST(router.lane_count() == 1u, "a lane with a handler in flight must not be reaped");
    BOOST_TEST(finished.load() == 0);
    release.open();
    wait_for(rt, "handler finished", [&] { return finished.load() == 1; });
    // Beyond the seed: once the handler is done the lane is idle, and the TTL
    // that spared it above takes it now.
    wait_for(rt, "lane reaped after the handler", [&] { return router.lane_count() == 0; });
  });
  BOOST_TEST(release_timeouts.load() == 0);
  BOOST_TEST(obs->created.load() == 1);
}

BOOST_AUTO_TEST_CASE(reap_then_reuse_preserves_order) {
  // Default placement (core 0, with main): each burst is routed whole before
  // its lane runs, so the only reap is the one the test waits for.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<int> log(rt);
  rt.run([&] {
    router_t<std::uint64_t, int> router(rt, [&](int seq) { log.push(seq); }, cfg(30 * ms, obs));
    for (int seq = 0; seq < 5; ++seq) BOOST_TEST(router.route(1, seq).ok());
    wait_for(rt, "first burst handled", [&] { return log.size() == 5; });
    wait_for(rt, "lane reaped", [&] { return router.lane_count() == 0; });
    for (int seq = 5; seq < 10; ++seq) BOOST_TEST(router.route(1, seq).ok());
    wait_for(rt, "second burst handled", [&] { return log.size() == 10; });
  });
  BOOST_TEST(log.snapshot() == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  BOOST_TEST(obs->created.load() == 2, "the reaped lane should be rebuilt exactly once");
}

BOOST_AUTO_TEST_CASE(concurrent_producers_single_lane) {
  // Eight producers on both cores hammer one key while the lane reaps at a
  // 1 ms TTL; producers pause now and then so reaps and routes meet. Every
  // item is handled exactly once, each producer's items in its route order,
  // and — at most one lane per key holding work — the lane generation the
  // consumer sees never goes back. The run is cut in two halves with a reap
  // the test waits for between them, so at least one rebuild is certain.
  constexpr std::uint32_t producers = 8, per_producer = 200;
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  runtime::mutex mu(rt);  // guards the two below
  std::vector<std::pair<int, std::uint32_t>> log;  // (generation, item)
  std::map<std::uint64_t, int> generation_of_fiber;
  std::atomic<int> refused{0};
  rt.run([&] {
    router_t<std::uint64_t, std::uint32_t> router(
        rt,
        [&](std::uint32_t item) {
          // A lane is its fiber: number fibers in order of first item.
          std::lock_guard<runtime::mutex> hold(mu);
          const int next = static_cast<int>(generation_of_fiber.size());
          const int generation = generation_of_fiber.try_emplace(rt.current_fiber_id(), next).first->second;
          log.emplace_back(generation, item);
        },
        cfg(1 * ms, obs));
    auto handled = [&] {
      std::lock_guard<runtime::mutex> hold(mu);
      return log.size();
    };
    for (std::uint32_t half = 0; half < 2; ++half) {
      std::vector<runtime::task> tasks;
      for (std::uint32_t p = 0; p < producers; ++p) {
        tasks.push_back(rt.spawn_on(p % rt.cores(), "producer", [&, p, half] {
          for (std::uint32_t i = half * per_producer / 2; i < (half + 1) * per_producer / 2; ++i) {
            if (!router.route(1, p * per_producer + i).ok()) refused.fetch_add(1);
            // Pause to a point on a 1 ms grid, 1-3 ms ahead: lanes time out
            // on the same clock, so routes and reaps meet at the TTL boundary.
            if (i % 32 == 0) rt.sleep_until((rt.now() / ms + 1 + static_cast<std::int64_t>(rt.random() % 3)) * ms);
          }
        }));
      }
      for (auto& t : tasks) t.join();
      wait_for(rt, "the half's items handled", [&] { return handled() == (half + 1) * producers * per_producer / 2; });
      if (half == 0) wait_for(rt, "lane reaped between the halves", [&] { return router.lane_count() == 0; });
    }
  });
  BOOST_TEST(refused.load() == 0);
  BOOST_TEST_MESSAGE("concurrent_producers_single_lane: " << obs->created.load() << " lanes built for one key");
  BOOST_TEST(obs->created.load() >= 2, "the lane reaped between the halves was not rebuilt");
  BOOST_TEST(static_cast<int>(generation_of_fiber.size()) == obs->created.load(), "each lane built served items");
  bool monotone = true;
  for (std::size_t i = 1; i < log.size(); ++i) monotone = monotone && log[i - 1].first <= log[i].first;
  BOOST_TEST(monotone, "two lanes for one key were live at the same time");
  std::vector<std::uint32_t> items;
  for (auto& e : log) items.push_back(e.second);
  std::sort(items.begin(), items.end());
  std::vector<std::uint32_t> expected(producers * per_producer);
  for (std::uint32_t i = 0; i < expected.size(); ++i) expected[i] = i;
  BOOST_TEST(items == expected, "every item must be handled exactly once");
  // Per producer, route order is handling order.
  std::map<std::uint32_t, std::uint32_t> last;
  bool ordered = true;
  for (auto& e : log) {
    const std::uint32_t p = e.second / per_producer;
    if (last.count(p) && last[p] >= e.second) ordered = false;
    last[p] = e.second;
  }
  BOOST_TEST(ordered, "a producer's items of one key were reordered");
}

BOOST_AUTO_TEST_CASE(dropping_router_stops_lanes) {
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  std::atomic<int> handled{0};
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // lanes on both cores
    std::optional<router_t<std::uint64_t, int>> router;
    router.emplace(rt, [&](int) { handled.fetch_add(1); }, c);
    for (std::uint64_t key = 0; key < 3; ++key) BOOST_TEST(router->route(key, 0).ok());
    wait_for(rt, "items handled", [&] { return handled.load() == 3; });
    BOOST_TEST(obs->created.load() == 3);
    BOOST_TEST(obs->closed.load() == 0, "no TTL: nothing ends a lane but the drop");
    router.reset();
    wait_for(rt, "all lanes exited", [&] { return obs->closed.load() == 3; });
  });
  BOOST_TEST(handled.load() == 3);
}

BOOST_AUTO_TEST_CASE(capacity_is_enforced_per_key) {
  // Admission is per lane: filling key 1 leaves key 2 alone. Handlers hold
  // at a gate, so every depth below is exact.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  gate release(rt);
  shared_log<int> handled(rt);
  std::atomic<int> release_timeouts{0};
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // key 1 on core 1, key 2 on core 0
    router_t<std::uint64_t, int> router(
        rt,
        [&](int item) {
          if (!release.wait()) release_timeouts.fetch_add(1);
          handled.push(item);
        },
        c);
    // Key 1: one item wedges in the consumer, two fill the queue, the fourth is refused.
    auto a = router.route(1, 10, 3);
    BOOST_TEST((a.ok() && a.depth == 0u));
    auto b = router.route(1, 11, 3);
    BOOST_TEST((b.ok() && b.depth == 1u));
    auto c2 = router.route(1, 12, 3);
    BOOST_TEST((c2.ok() && c2.depth == 2u));
    auto d = router.route(1, 13, 3);
    BOOST_TEST(!d.ok(), "a full lane must hand the item back");
    BOOST_TEST((d.returned && *d.returned == 13));
    auto e = router.route(2, 20, 3);  // key 2 is untouched by key 1's backlog
    BOOST_TEST((e.ok() && e.depth == 0u));
    auto f = router.route(1, 14);  // no capacity: never refused, even when saturated
    BOOST_TEST((f.ok() && f.depth == 3u));
    release.open();
    wait_for(rt, "all admitted items handled", [&] { return handled.size() == 5; });
  });
  BOOST_TEST(release_timeouts.load() == 0);
  std::map<int, std::vector<int>> grouped;
  for (int item : handled.snapshot()) grouped[item / 10].push_back(item);
  BOOST_TEST(grouped[1] == (std::vector<int>{10, 11, 12, 14}), "key 1 lost or reordered");
  BOOST_TEST(grouped[2] == (std::vector<int>{20}));
}

BOOST_AUTO_TEST_CASE(capacity_frees_as_the_lane_drains) {
  // The cap bounds unfinished items, so it must reopen once the consumer has
  // worked through the backlog rather than latch shut. The seed routes again
  // as soon as it sees the first item handled; on two cores that races the
  // lane, which records the item from inside the consumer and decrements
  // pending only after it returns. So the second route is retried until
  // admitted (bounded): a latched cap still fails, and every refusal on the
  // way must report just the one item finishing.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<int> handled(rt);
  std::vector<std::size_t> refused_depths;
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // key 1: core 1
    router_t<std::uint64_t, int> router(rt, [&](int item) { handled.push(item); }, c);
    BOOST_TEST(router.route(1, 0, 1).ok());
    wait_for(rt, "first item handled", [&] { return handled.size() == 1; });
    const bool admitted = poll_until(rt, [&] {
      auto r = router.route(1, 1, 1);
      if (!r.ok()) refused_depths.push_back(r.depth);
      return r.ok();
    });
    BOOST_REQUIRE_MESSAGE(admitted, "capacity must be reusable once the lane drains");
    wait_for(rt, "second item handled", [&] { return handled.size() == 2; });
  });
  BOOST_TEST(handled.snapshot() == (std::vector<int>{0, 1}));
  for (std::size_t depth : refused_depths) BOOST_TEST(depth == 1u);
  BOOST_TEST(obs->created.load() == 1);
}

BOOST_AUTO_TEST_CASE(lane_survives_consumer_panic) {
  // The router catches nothing (a panic is an exception here); a consumer that
  // catches its own failures — as velo's OrderedDispatcher wraps the handler
  // in catch_unwind — keeps its lane alive and in order. It catches only its
  // own error type, so fiber_cancelled still goes through.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<int> log(rt);
  std::atomic<int> failures{0};
  rt.run([&] {
    auto c = cfg(std::nullopt, obs);
    c.place = by_key;  // key 1: core 1
    router_t<std::uint64_t, int> router(
        rt,
        [&](int seq) {
          try {
            if (seq == 3) throw std::runtime_error("deliberate failure");
            log.push(seq);
          } catch (const std::runtime_error&) {
            failures.fetch_add(1);
          }
        },
        c);
    for (int seq = 0; seq < 8; ++seq) BOOST_TEST(router.route(1, seq).ok());
    wait_for(rt, "surviving items handled", [&] { return log.size() == 7; });
    BOOST_TEST(router.lane_count() == 1u);
    BOOST_TEST(obs->closed.load() == 0);
  });
  BOOST_TEST(failures.load() == 1);
  BOOST_TEST(log.snapshot() == (std::vector<int>{0, 1, 2, 4, 5, 6, 7}));
  BOOST_TEST(obs->created.load() == 1, "the lane must survive a failing item");
}

BOOST_AUTO_TEST_CASE(escaping_consumer_exception_ends_the_lane_and_run_rethrows_it) {
  // Beyond the seed: the threads contract for a failure the consumer does not
  // catch. It ends that lane only — its exit guard takes it out of the map and
  // fires lane_closed(); what was queued behind it goes with it — the next
  // route for the key builds a fresh lane, and run() rethrows the exception
  // once every fiber has ended.
  runtime rt(2);
  auto obs = std::make_shared<counting_observer>();
  shared_log<int> log(rt);
  auto body = [&] {
    // Default placement (core 0, with main): all three items are queued
    // before the lane takes the first, so item 2 is behind the failure for sure.
    router_t<std::uint64_t, int> router(
        rt,
        [&](int seq) {
          if (seq == 1) throw std::runtime_error("consumer blew up");
          log.push(seq);
        },
        cfg(std::nullopt, obs));
    for (int seq = 0; seq < 3; ++seq) BOOST_TEST(router.route(1, seq).ok());
    wait_for(rt, "the failed lane closed", [&] { return obs->closed.load() == 1; });
    BOOST_TEST(router.lane_count() == 0u, "a lane ended by its consumer must leave the map");
    BOOST_TEST(router.route(1, 3).ok());
    wait_for(rt, "the fresh lane handled the next item", [&] { return log.size() == 2; });
  };
  BOOST_CHECK_EXCEPTION(rt.run(body), std::runtime_error,
                        [](const std::runtime_error& e) { return std::string(e.what()) == "consumer blew up"; });
  BOOST_TEST(log.snapshot() == (std::vector<int>{0, 3}), "item 2 was queued on the failed lane: dropped with it");
  BOOST_TEST(obs->created.load() == 2);
  BOOST_TEST(obs->closed.load() == 2);
}
