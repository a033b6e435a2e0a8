// Goal: the lane router does what velo's LaneRouter tests pin down — per-key
// order, keys in parallel, idle reaping that never takes a lane with work,
// per-key capacity, teardown on drop — here under the simulator, with every
// seed-test's `wait_for` polling turned into virtual-time sleeps.
#define BOOST_TEST_MODULE engine_lanes
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep;
using sim::runtime;
using sim::testing::config;

namespace {

constexpr std::int64_t ms = 1'000'000;

struct counting_observer final : lane_observer {
  int created = 0;
  int closed = 0;
  void lane_created() override { ++created; }
  void lane_closed() override { ++closed; }
};

template <class K, class T>
using router_t = lane_router<runtime, K, T>;

lane_router_config<std::uint64_t> cfg(std::optional<std::int64_t> ttl_ns, std::shared_ptr<counting_observer> obs) {
  lane_router_config<std::uint64_t> c;
  c.idle_ttl_ns = ttl_ns;
  c.observer = std::move(obs);
  return c;
}

/// Sleeps in 1 ms virtual steps until `pred` holds; false if it never does
/// within `limit_ms` (reported by the caller, so a bug fails instead of hanging).
template <class Pred>
bool wait_for(runtime& rt, Pred pred, int limit_ms = 5000) {
  for (int i = 0; i < limit_ms; ++i) {
    if (pred()) return true;
    rt.sleep_for(ms);
  }
  return pred();
}

/// The schedules every test runs under: a few seeds of each strategy.
struct schedule {
  std::uint64_t seed;
  std::string strategy;
  std::uint32_t cores;
};
std::vector<schedule> schedules(std::uint32_t cores = 2) {
  std::vector<schedule> out;
  out.push_back({0, "fifo", 1});
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    out.push_back({seed, "random", cores});
    out.push_back({seed, "pct", cores});
  }
  return out;
}

sim::run_config run_cfg(const schedule& s) {
  auto c = config(s.seed, s.strategy, s.cores);
  c.trace = sim::trace_mode::off;
  c.options.pct_steps = 2000;
  return c;
}

/// Spreads lanes over the cores by key, so lanes of distinct keys interleave.
std::uint32_t by_key(const std::uint64_t& key) { return static_cast<std::uint32_t>(key); }

}  // namespace

BOOST_AUTO_TEST_CASE(lane_preserves_per_key_order) {
  constexpr std::uint64_t keys = 4;
  constexpr std::uint32_t per_key = 50;
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      std::vector<std::pair<std::uint64_t, std::uint32_t>> log;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        auto c = cfg(std::nullopt, std::make_shared<counting_observer>());
        c.place = by_key;
        router_t<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> router(
            rt,
            [&](std::pair<std::uint64_t, std::uint32_t> item) {
              rt.yield_now();  // every chance to reorder
              log.push_back(item);
            },
            c);
        for (std::uint32_t seq = 0; seq < per_key; ++seq)
          for (std::uint64_t key = 0; key < keys; ++key) BOOST_TEST(router.route(key, {key, seq}).ok());
        all = wait_for(rt, [&] { return log.size() == keys * per_key; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
      std::map<std::uint64_t, std::vector<std::uint32_t>> grouped;
      for (auto& [key, seq] : log) grouped[key].push_back(seq);
      std::vector<std::uint32_t> expected(per_key);
      for (std::uint32_t i = 0; i < per_key; ++i) expected[i] = i;
      for (std::uint64_t key = 0; key < keys; ++key) BOOST_TEST(grouped[key] == expected);
    }
  }
}

BOOST_AUTO_TEST_CASE(distinct_keys_run_concurrently) {
  // Both consumers wait for each other (a two-party barrier from an atomic and
  // a notify). Were the keys to share a lane, the sim reports a deadlock, so
  // completing is the assertion.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      int done = 0;
      bool both = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        runtime::atomic<int> arrived(rt, 0);
        runtime::notify last(rt);
        auto obs = std::make_shared<counting_observer>();
        router_t<std::uint64_t, int> router(
            rt,
            [&](int) {
              if (arrived.fetch_add(1) == 0) {
                last.notified();
              } else {
                last.notify_one();
              }
              ++done;
            },
            cfg(std::nullopt, obs));
        router.route(1, 0);
        router.route(2, 0);
        both = wait_for(rt, [&] { return done == 2; });
        BOOST_TEST(obs->created == 2);
      });
      BOOST_TEST(r.ok(), (r.failed ? r.failed->message : ""));
      BOOST_TEST(both);
    }
  }
}

BOOST_AUTO_TEST_CASE(idle_lane_is_reaped) {
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      int handled = 0;
      bool was_handled = false, reaped = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(rt, [&](int) { ++handled; }, cfg(50 * ms, obs));
        router.route(7, 0);
        was_handled = wait_for(rt, [&] { return handled == 1; });
        reaped = wait_for(rt, [&] { return router.lane_count() == 0; });
        BOOST_TEST(obs->created == 1);
        BOOST_TEST(obs->closed == 1);
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(was_handled);
      BOOST_TEST(reaped);
    }
  }
}

BOOST_AUTO_TEST_CASE(no_reap_while_pending) {
  // A backlog keeps the lane alive although each handler outlasts the TTL.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> log;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int seq) {
              rt.sleep_for(20 * ms);
              log.push_back(seq);
            },
            cfg(1 * ms, obs));
        for (int seq = 0; seq < 5; ++seq) router.route(1, seq);
        all = wait_for(rt, [&] { return log.size() == 5; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
      BOOST_TEST(log == (std::vector<int>{0, 1, 2, 3, 4}));
      BOOST_TEST(obs->created == 1, "the lane must not be reaped and rebuilt while work is queued");
    }
  }
}

BOOST_AUTO_TEST_CASE(no_reap_while_handler_in_flight) {
  // One item whose handler runs far past the TTL with an empty queue behind it.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      int finished = 0;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int) {
              rt.sleep_for(150 * ms);
              ++finished;
            },
            cfg(5 * ms, obs));
        router.route(1, 0);
        rt.sleep_for(60 * ms);  // well past the TTL, well before the handler ends
        BOOST_TEST(router.lane_count() == 1u, "a lane with a handler in flight must not be reaped");
        BOOST_TEST(finished == 0);
        all = wait_for(rt, [&] { return finished == 1; });
        BOOST_TEST(obs->created == 1);
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
    }
  }
}

BOOST_AUTO_TEST_CASE(reap_then_reuse_preserves_order) {
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> log;
      bool first = false, reaped = false, second = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(rt, [&](int seq) { log.push_back(seq); }, cfg(30 * ms, obs));
        for (int seq = 0; seq < 5; ++seq) router.route(1, seq);
        first = wait_for(rt, [&] { return log.size() == 5; });
        reaped = wait_for(rt, [&] { return router.lane_count() == 0; });
        for (int seq = 5; seq < 10; ++seq) router.route(1, seq);
        second = wait_for(rt, [&] { return log.size() == 10; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST((first && reaped && second));
      BOOST_TEST(log == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
      BOOST_TEST(obs->created == 2, "the reaped lane should be rebuilt exactly once");
    }
  }
}

BOOST_AUTO_TEST_CASE(concurrent_producers_single_lane) {
  // Eight producers on three cores hammer one key while the lane reaps at a
  // 1 ms TTL; producers pause now and then so reaps and routes meet. Every item is handled exactly once and — at most one lane per key
  // holding work — the lane generation the consumer sees never goes back.
  constexpr std::uint32_t producers = 8, per_producer = 200;
  int rebuilt = 0;  // lanes reaped and rebuilt, over every schedule
  for (const auto& s : schedules(3)) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<std::pair<int, std::uint32_t>> log;  // (generation, item)
      std::map<std::uint32_t, int> generation_of_fiber;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, std::uint32_t> router(
            rt,
            [&](std::uint32_t item) {
              // A lane is its fiber: number fibers in order of first item.
              const auto fiber = rt.exec().current().id;
              auto [it, fresh] = generation_of_fiber.try_emplace(fiber, static_cast<int>(generation_of_fiber.size()));
              (void)fresh;
              log.emplace_back(it->second, item);
            },
            cfg(1 * ms, obs));
        std::vector<runtime::task> tasks;
        for (std::uint32_t p = 0; p < producers; ++p) {
          tasks.push_back(rt.spawn_on(p % rt.cores(), "producer", [&, p] {
            for (std::uint32_t i = 0; i < per_producer; ++i) {
              BOOST_TEST(router.route(1, p * per_producer + i).ok());
              // Pause to a point on a 1 ms grid: lanes time out on the same
              // grid, so routes and reaps meet at the TTL boundary.
              if (i % 32 == 0) rt.sleep_until((rt.now() / ms + 1 + static_cast<std::int64_t>(rt.random() % 3)) * ms);
            }
          }));
        }
        for (auto& t : tasks) t.join();
        all = wait_for(rt, [&] { return log.size() == producers * per_producer; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
      rebuilt += obs->created - 1;
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
      BOOST_TEST(ordered);
    }
  }
  BOOST_TEST(rebuilt > 0, "the sweep never reaped a lane under load: it tests nothing");
}

BOOST_AUTO_TEST_CASE(dropping_router_stops_lanes) {
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      int handled = 0;
      bool all = false, exited = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        std::optional<router_t<std::uint64_t, int>> router;
        router.emplace(rt, [&](int) { ++handled; }, cfg(std::nullopt, obs));
        for (std::uint64_t key = 0; key < 3; ++key) router->route(key, 0);
        all = wait_for(rt, [&] { return handled == 3; });
        BOOST_TEST(obs->created == 3);
        router.reset();
        exited = wait_for(rt, [&] { return obs->closed == 3; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST((all && exited));
    }
  }
}

BOOST_AUTO_TEST_CASE(dropping_router_drains_queued_work) {
  // Beyond the seed: the contract for work queued when the router is dropped.
  // Lanes drain it (in order) before they exit; nothing admitted is lost.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<std::pair<std::uint64_t, int>> log;
      bool exited = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        std::optional<router_t<std::uint64_t, std::pair<std::uint64_t, int>>> router;
        auto c = cfg(std::nullopt, obs);
        c.place = by_key;
        router.emplace(
            rt,
            [&](std::pair<std::uint64_t, int> item) {
              rt.sleep_for(ms);
              log.push_back(item);
            },
            c);
        for (int seq = 0; seq < 5; ++seq)
          for (std::uint64_t key = 0; key < 2; ++key) router->route(key, {key, seq});
        router.reset();  // nothing handled yet: every item still queued or in flight
        exited = wait_for(rt, [&] { return obs->closed == 2; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(exited);
      std::map<std::uint64_t, std::vector<int>> grouped;
      for (auto& [key, seq] : log) grouped[key].push_back(seq);
      BOOST_TEST(grouped[0] == (std::vector<int>{0, 1, 2, 3, 4}));
      BOOST_TEST(grouped[1] == (std::vector<int>{0, 1, 2, 3, 4}));
    }
  }
}

BOOST_AUTO_TEST_CASE(capacity_is_enforced_per_key) {
  // Admission is per lane: filling key 1 leaves key 2 alone.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> handled;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        bool release = false;
        router_t<std::uint64_t, int> router(
            rt,
            [&](int item) {
              while (!release) rt.sleep_for(ms);
              handled.push_back(item);
            },
            cfg(std::nullopt, obs));
        // Key 1: one item wedges in the consumer, two fill the queue, the fourth is refused.
        auto a = router.route(1, 10, 3);
        BOOST_TEST((a.ok() && a.depth == 0u));
        auto b = router.route(1, 11, 3);
        BOOST_TEST((b.ok() && b.depth == 1u));
        auto c = router.route(1, 12, 3);
        BOOST_TEST((c.ok() && c.depth == 2u));
        auto d = router.route(1, 13, 3);
        BOOST_TEST(!d.ok(), "a full lane must hand the item back");
        BOOST_TEST((d.returned && *d.returned == 13));
        auto e = router.route(2, 20, 3);
        BOOST_TEST((e.ok() && e.depth == 0u));
        auto f = router.route(1, 14);  // no capacity: never refused, even when saturated
        BOOST_TEST((f.ok() && f.depth == 3u));
        release = true;
        all = wait_for(rt, [&] { return handled.size() == 5; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
      std::map<int, std::vector<int>> grouped;
      for (int item : handled) grouped[item / 10].push_back(item);
      BOOST_TEST(grouped[1] == (std::vector<int>{10, 11, 12, 14}), "key 1 lost or reordered");
      BOOST_TEST(grouped[2] == (std::vector<int>{20}));
    }
  }
}

BOOST_AUTO_TEST_CASE(capacity_counts_the_item_in_flight) {
  // Beyond the seed: an item the consumer is still running counts against the
  // capacity (pending falls only when the consumer returns).
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      bool started = false, release = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int) {
              started = true;
              while (!release) rt.sleep_for(ms);
            },
            cfg(std::nullopt, nullptr));
        BOOST_TEST(router.route(1, 0, 1).ok());
        BOOST_TEST(wait_for(rt, [&] { return started; }));
        auto refused = router.route(1, 1, 1);
        BOOST_TEST(!refused.ok());
        BOOST_TEST(refused.depth == 1u);
        release = true;
      });
      BOOST_TEST(r.ok());
    }
  }
}

BOOST_AUTO_TEST_CASE(capacity_frees_as_the_lane_drains) {
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> handled;
      bool first = false, second = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(rt, [&](int item) { handled.push_back(item); }, cfg(std::nullopt, obs));
        BOOST_TEST(router.route(1, 0, 1).ok());
        first = wait_for(rt, [&] { return handled.size() == 1; });
        BOOST_TEST(router.route(1, 1, 1).ok(), "capacity must be reusable once the lane drains");
        second = wait_for(rt, [&] { return handled.size() == 2; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST((first && second));
      BOOST_TEST(handled == (std::vector<int>{0, 1}));
    }
  }
}

BOOST_AUTO_TEST_CASE(lane_survives_consumer_panic) {
  // The router catches nothing; a consumer that catches its own failures
  // keeps its lane alive and in order.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> log;
      bool all = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int seq) {
              try {
                if (seq == 3) throw std::runtime_error("deliberate failure");
                log.push_back(seq);
              } catch (const std::runtime_error&) {
              }
            },
            cfg(std::nullopt, obs));
        for (int seq = 0; seq < 8; ++seq) router.route(1, seq);
        all = wait_for(rt, [&] { return log.size() == 7; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(all);
      BOOST_TEST(log == (std::vector<int>{0, 1, 2, 4, 5, 6, 7}));
      BOOST_TEST(obs->created == 1, "the lane must survive a failing item");
    }
  }
}

BOOST_AUTO_TEST_CASE(cancelled_lane_leaves_the_map) {
  // A lane fiber cancelled mid-consumer runs its exit guard: the entry leaves
  // the map (ignoring pending), so the key is served by a fresh lane rather
  // than black-holed. Items still queued on the cancelled lane go with it.
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> log;
      std::optional<sim::fiber_id> lane_fiber;
      bool gone = false, served = false;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int seq) {
              if (!lane_fiber) lane_fiber = rt.exec().current().id;
              rt.sleep_for(10 * ms);
              log.push_back(seq);
            },
            cfg(std::nullopt, obs));
        router.route(1, 0);
        router.route(1, 1);
        BOOST_TEST(wait_for(rt, [&] { return lane_fiber.has_value(); }));
        rt.exec().cancel(*lane_fiber);
        gone = wait_for(rt, [&] { return obs->closed == 1; });
        BOOST_TEST(router.lane_count() == 0u);
        BOOST_TEST(router.route(1, 2).ok());
        served = wait_for(rt, [&] { return !log.empty(); });
      });
      BOOST_TEST(r.ok(), (r.failed ? r.failed->message : ""));
      BOOST_TEST((gone && served));
      BOOST_TEST(log == (std::vector<int>{2}));
      BOOST_TEST(obs->created == 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(escaping_consumer_exception_ends_the_lane_and_fails_the_run) {
  // The documented contract for an exception the consumer does not catch: the
  // sim reports it as an uncaught exception of the lane fiber, and the lane's
  // exit guard still runs (every lane created is closed).
  for (const auto& s : schedules()) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      auto obs = std::make_shared<counting_observer>();
      std::vector<int> log;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        router_t<std::uint64_t, int> router(
            rt,
            [&](int seq) {
              if (seq == 1) throw std::runtime_error("consumer blew up");
              log.push_back(seq);
            },
            cfg(std::nullopt, obs));
        for (int seq = 0; seq < 3; ++seq) router.route(1, seq);
        wait_for(rt, [] { return false; }, 10);
      });
      BOOST_TEST(!r.ok());
      BOOST_TEST((r.failed && r.failed->kind == sim::failure_kind::uncaught_exception));
      BOOST_TEST((r.failed && r.failed->message.find("'lane'") != std::string::npos));
      BOOST_TEST(log == (std::vector<int>{0}));
      BOOST_TEST(obs->created == 1);
      BOOST_TEST(obs->closed == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(placement_puts_lanes_on_the_chosen_core) {
  for (const auto& s : schedules(3)) {
    BOOST_TEST_CONTEXT("seed " << s.seed << " strategy " << s.strategy) {
      std::map<std::uint64_t, std::uint32_t> core_of;
      auto r = sim::run(run_cfg(s), [&](runtime& rt) {
        auto c = cfg(std::nullopt, nullptr);
        c.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key * 7); };
        router_t<std::uint64_t, std::uint64_t> router(
            rt, [&](std::uint64_t key) { core_of[key] = rt.current_core(); }, c);
        for (std::uint64_t key = 0; key < 6; ++key) router.route(key, key);
        wait_for(rt, [&] { return core_of.size() == 6; });
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(core_of.size() == 6u);
      for (auto& [key, core] : core_of) BOOST_TEST(core == (key * 7) % s.cores);
    }
  }
}
