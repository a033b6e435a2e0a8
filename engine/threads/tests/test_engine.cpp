// Goal: the engine components run unchanged on the threads backend: the lane
// router (two cores routing 102,400 items over 64 keys: per-key order and
// exactly-once), the shard reactors behind their router, and a single-flight
// table across cores. That every member compiles for both backends, in every
// build, is engine/instantiate_both.cpp's job.
#define BOOST_TEST_MODULE threads_engine
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/single_flight.hpp"
#include "engine/threads/runtime.hpp"

using namespace lockstep;
using lockstep::threads::runtime;

static_assert(lockstep::Runtime<runtime>);

namespace {

struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t k = 0;
  key_type key() const { return k; }
  class_id cls() const { return 0; }
  std::optional<std::int64_t> ttl_ns() const { return std::nullopt; }
  std::optional<id_type> request_id() const { return std::nullopt; }
};

struct no_error {
  lockstep::fallout fallout() const { return lockstep::fallout::clean; }
};

/// Counts what it processes and evicts; the counters outlive the shards.
struct counting_processor {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = no_error;
  std::shared_ptr<std::atomic<std::uint64_t>> processed;
  std::shared_ptr<std::atomic<std::uint64_t>> evicted_total;  // sum of evicted states

  process_result<std::uint64_t, no_error> process(const std::uint64_t&, std::optional<std::uint64_t> state, job) {
    processed->fetch_add(1);
    return disposition<std::uint64_t>::keep(state.value_or(0) + 1);
  }
  void on_error(const std::uint64_t&, const no_error&) {}
  void on_coalesced(const std::uint64_t&, job) {}
  void on_evict(const std::uint64_t&, std::uint64_t state) { evicted_total->fetch_add(state); }
  void on_expired(const std::uint64_t&, job) {}
};
static_assert(Processor<counting_processor>);

struct lane_item {
  std::uint64_t key;
  std::uint32_t producer;
  std::uint32_t seq;
};

}  // namespace

BOOST_AUTO_TEST_CASE(lane_router_two_cores_100k_items_64_keys_in_order_exactly_once) {
  constexpr std::uint64_t keys = 64;
  constexpr std::uint32_t producers = 2, per_key = 800;  // 2 * 64 * 800 = 102,400 items
  constexpr std::uint64_t total = producers * keys * per_key;
  // Per key and producer, the next sequence number expected. Each key's
  // entries are touched by that key's lane only, one item at a time.
  std::vector<std::vector<std::uint32_t>> next(keys, std::vector<std::uint32_t>(producers, 0));
  std::vector<std::uint64_t> out_of_order(keys, 0), received(keys, 0), wrong_core(keys, 0);
  std::atomic<std::uint64_t> refused{0};
  std::uint64_t consumed_at_end = 0;
  runtime rt(2);
  rt.run([&] {
    runtime::atomic<std::uint64_t> consumed(rt, 0);
    runtime::notify all_done(rt);
    lane_router_config<std::uint64_t> cfg;
    cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key); };
    lane_router<runtime, std::uint64_t, lane_item> router(
        rt,
        [&](lane_item item) {
          if (rt.current_core() != item.key % 2) ++wrong_core[item.key];
          if (next[item.key][item.producer] != item.seq) ++out_of_order[item.key];
          next[item.key][item.producer] = item.seq + 1;
          ++received[item.key];
          if (consumed.fetch_add(1) + 1 == total) all_done.notify_one();
        },
        cfg);
    std::vector<runtime::task> ts;
    for (std::uint32_t p = 0; p < producers; ++p) {
      ts.push_back(rt.spawn_on(p, "producer", [&, p] {
        for (std::uint32_t seq = 0; seq < per_key; ++seq) {
          for (std::uint64_t key = 0; key < keys; ++key) {
            if (!router.route(key, lane_item{key, p, seq}).ok()) refused.fetch_add(1);
          }
        }
      }));
    }
    for (auto& t : ts) t.join();
    all_done.notified();
    consumed_at_end = consumed.load();
  });  // the router is dropped with main's frame: every lane drains and exits
  BOOST_TEST(refused.load() == 0U);
  BOOST_TEST(consumed_at_end == total);
  for (std::uint64_t key = 0; key < keys; ++key) {
    BOOST_TEST_CONTEXT("key " << key) {
      BOOST_TEST(received[key] == producers * per_key, "every item exactly once");
      BOOST_TEST(out_of_order[key] == 0U, "each producer's items of a key in route order");
      BOOST_TEST(wrong_core[key] == 0U, "a lane runs on the core `place` chose");
      for (std::uint32_t p = 0; p < producers; ++p) BOOST_TEST(next[key][p] == per_key);
    }
  }
}

BOOST_AUTO_TEST_CASE(shards_on_both_cores_process_every_submitted_item_and_flush_on_shutdown) {
  constexpr std::uint64_t items = 5000, keys = 50;
  auto processed = std::make_shared<std::atomic<std::uint64_t>>(0);
  auto evicted = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::uint64_t refused = 0;
  std::vector<std::uint64_t> started_per_shard;
  runtime rt(2);
  rt.run([&] {
    shard_config cfg = shard_config::with_budgets({4});
    cfg.tick_ns = 1'000'000;
    auto group = launch_shards<runtime, counting_processor>(
        rt, 2, [&](std::size_t) { return counting_processor{processed, evicted}; }, cfg, 16);
    for (std::uint64_t i = 0; i < items; ++i) {
      if (!group.route.submit(job{i % keys}).ok()) ++refused;
    }
    group.shutdown();
    for (auto& s : group.stats) started_per_shard.push_back(s->read().counters.started);
  });
  BOOST_TEST(refused == 0U);
  BOOST_TEST(processed->load() == items);
  BOOST_TEST(evicted->load() == items, "each key's final state (its item count) is flushed once");
  BOOST_REQUIRE(started_per_shard.size() == 2U);
  BOOST_TEST(started_per_shard[0] + started_per_shard[1] == items);
  BOOST_TEST((started_per_shard[0] > 0 && started_per_shard[1] > 0), "the stable hash spreads 50 keys over both");
}

BOOST_AUTO_TEST_CASE(single_flight_waiters_on_both_cores_get_the_leaders_answer) {
  using flight = single_flight<runtime, std::uint64_t, std::string>;
  std::vector<std::optional<std::string>> answers(6);
  int leaders = 0;
  runtime rt(2);
  rt.run([&] {
    flight table(rt);
    auto first = table.join(1);
    leaders += first.leader ? 1 : 0;
    std::vector<runtime::task> ts;
    runtime::atomic<int> joined(rt, 0);
    for (std::uint32_t i = 0; i < answers.size(); ++i) {
      ts.push_back(rt.spawn_on(i % 2, "waiter", [&, i] {
        auto j = table.join(1);
        joined.fetch_add(1);
        answers[i] = j.work->wait();
      }));
    }
    while (joined.load() != static_cast<int>(answers.size())) rt.yield_now();
    auto worker = rt.spawn_on(1, "leader", [&table, work = first.work] {
      flight::resolution res(table, 1, work, "abandoned", "1");
      res.answer("done");
    });
    worker.join();
    for (auto& t : ts) t.join();
  });
  BOOST_TEST(leaders == 1);
  for (auto& a : answers) BOOST_TEST(a.value_or("<none>") == "done");
}
