// Goal: at least 1,000,000 items (LOCKSTEP_STRESS_ITEMS) through the lane
// router on two pinned threads, with the properties checked on what happened:
// each producer's items of a key consumed in route order, every routed item
// consumed exactly once, nothing lost when the router is dropped with lanes
// still backlogged (also when producers are stopped mid-stream), at most one
// lane of a key consuming at a time, and every lane gone at the end.
//
// Two producers, one per core, route round robin over the keys; lanes are
// placed by key (key % 2), so half of every producer's items cross threads.
// Consumers append (key, producer, seq) to their core's log; a key's lane
// always runs on the same core, so that core's log holds the key's items in
// consumption order.
#define BOOST_TEST_MODULE threads_stress_lanes
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/lanes.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/stress.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::testing::per_core_log;
using lockstep::threads::testing::stress_items;

namespace {

constexpr std::uint32_t producers = 2;

struct item {
  std::uint32_t key;
  std::uint32_t producer;
  std::uint32_t seq;  // this producer's n-th item of this key
};

/// Counts lanes in and out; the router's lanes share it, so it outlives them
/// and the notify is never destroyed under a lane that signals it.
class counting_observer : public lane_observer {
 public:
  explicit counting_observer(runtime& rt) : closed_one_(rt) {}
  void lane_created() override { created_.fetch_add(1); }
  void lane_closed() override {
    closed_.fetch_add(1);
    closed_one_.notify_one();
  }
  /// Await point until every lane created so far has closed (call once no
  /// more can be created: the router is gone).
  void wait_all_closed() {
    while (closed_.load() != created_.load()) closed_one_.notified();
  }
  [[nodiscard]] std::uint64_t created() const { return created_.load(); }
  [[nodiscard]] std::uint64_t closed() const { return closed_.load(); }

 private:
  std::atomic<std::uint64_t> created_{0};
  std::atomic<std::uint64_t> closed_{0};
  runtime::notify closed_one_;
};

struct lane_case {
  std::uint32_t keys = 1024;
  std::uint64_t items = 1'000'000;         // the most the producers route
  std::optional<std::int64_t> idle_ttl_ns;  // reaping on or off
  std::optional<std::size_t> capacity;      // refused items are retried after a yield
  std::uint32_t yield_every = 0;            // the consumer yields on every n-th item (0: never)
  std::uint64_t stop_after = 0;             // > 0: stop the producers once this many were routed
};

struct lane_outcome {
  std::vector<std::vector<std::uint64_t>> routed;  // [producer][key]: items routed
  std::uint64_t refusals = 0;
  std::uint64_t overlaps = 0;     // a key's consumer entered while another of its items was inside
  std::uint64_t lanes_created = 0;
  std::uint64_t lanes_closed = 0;
  std::uint64_t lanes_left = 0;   // lane_count() just before the router was dropped
  std::unique_ptr<per_core_log<item>> log;
};

lane_outcome run_lanes(const lane_case& c) {
  lane_outcome out;
  out.routed.assign(producers, std::vector<std::uint64_t>(c.keys, 0));
  out.log = std::make_unique<per_core_log<item>>(2, c.items / 2 + 1024);
  std::vector<std::uint64_t> refused(producers, 0);
  // [core][key]: the key's consumer is inside. Keys are placed by key % 2, so
  // each entry is touched by one core's thread only.
  std::vector<std::vector<std::uint8_t>> inside(2, std::vector<std::uint8_t>(c.keys, 0));
  std::vector<std::uint64_t> overlaps(2, 0), consumed_on(2, 0);
  std::atomic<std::uint64_t> progress{0};  // routed so far, in steps of 1024 (only for stop_after)
  std::atomic<bool> stop{false};
  runtime rt(2);
  auto observer = std::make_shared<counting_observer>(rt);
  rt.run([&] {
    {
      lane_router_config<std::uint32_t> cfg;
      cfg.idle_ttl_ns = c.idle_ttl_ns;
      cfg.observer = observer;
      cfg.place = [](const std::uint32_t& key) { return key % 2; };
      lane_router<runtime, std::uint32_t, item> router(
          rt,
          [&](item it) {
            const std::uint32_t core = rt.current_core();
            std::uint8_t& mine = inside[core][it.key];
            if (mine != 0) ++overlaps[core];
            mine = 1;
            out.log->add(rt, it);
            if (c.yield_every != 0 && ++consumed_on[core] % c.yield_every == 0) rt.yield_now();
            mine = 0;
          },
          cfg);
      std::vector<runtime::task> ts;
      for (std::uint32_t p = 0; p < producers; ++p) {
        ts.push_back(rt.spawn_on(p, "producer", [&, p] {
          std::vector<std::uint64_t>& mine = out.routed[p];
          const std::uint64_t n_items = c.items / producers;
          for (std::uint64_t n = 0; n < n_items; ++n) {
            if (c.stop_after != 0 && stop.load(std::memory_order_relaxed)) return;
            const auto key = static_cast<std::uint32_t>(n % c.keys);
            item it{key, p, static_cast<std::uint32_t>(mine[key])};
            while (true) {
              route_result<item> r = router.route(key, it, c.capacity);
              if (r.ok()) break;
              ++refused[p];
              it = *r.returned;
              rt.yield_now();  // let the lane make room, then offer the same item again
            }
            ++mine[key];
            if (c.stop_after != 0 && (n & 1023) == 1023) progress.fetch_add(1024, std::memory_order_relaxed);
          }
        }));
      }
      if (c.stop_after != 0) {
        while (progress.load(std::memory_order_relaxed) < c.stop_after) rt.yield_now();
        stop.store(true, std::memory_order_relaxed);
      }
      for (auto& t : ts) t.join();
      out.lanes_left = router.lane_count();
    }  // the router is dropped here, lanes still backlogged: each drains, then exits
    observer->wait_all_closed();
  });
  for (std::uint32_t p = 0; p < producers; ++p) out.refusals += refused[p];
  out.overlaps = overlaps[0] + overlaps[1];
  out.lanes_created = observer->created();
  out.lanes_closed = observer->closed();
  return out;
}

/// Checks the log against what was routed; returns the items consumed.
std::uint64_t check_lanes(const lane_case& c, const lane_outcome& out) {
  // [key][producer]: the next sequence number expected.
  std::vector<std::vector<std::uint64_t>> next(c.keys, std::vector<std::uint64_t>(producers, 0));
  std::uint64_t out_of_order = 0, wrong_core = 0, consumed = 0;
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const item& it : out.log->of(core)) {
      ++consumed;
      if (it.key % 2 != core) ++wrong_core;
      std::uint64_t& want = next[it.key][it.producer];
      if (it.seq != want) ++out_of_order;
      want = it.seq + 1;
    }
  }
  std::uint64_t short_keys = 0, routed = 0;
  for (std::uint32_t key = 0; key < c.keys; ++key) {
    for (std::uint32_t p = 0; p < producers; ++p) {
      routed += out.routed[p][key];
      if (next[key][p] != out.routed[p][key]) ++short_keys;
    }
  }
  BOOST_TEST(out_of_order == 0U, "each producer's items of a key are consumed in route order, once each");
  BOOST_TEST(short_keys == 0U, "every routed item of every (key, producer) was consumed: nothing lost");
  BOOST_TEST(consumed == routed, "as many consumed as routed: exactly once");
  BOOST_TEST(wrong_core == 0U, "a lane runs on the core `place` chose");
  BOOST_TEST(out.overlaps == 0U, "never two items of one key inside the consumer at once");
  BOOST_TEST(out.lanes_closed == out.lanes_created, "every lane ended after the router was dropped");
  BOOST_TEST(out.lanes_created >= c.keys, "every key had a lane");
  return consumed;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lanes_1m_items_1024_keys_no_reaping_in_order_exactly_once) {
  lane_case c;
  c.items = stress_items();
  const lane_outcome out = run_lanes(c);
  const std::uint64_t consumed = check_lanes(c, out);
  BOOST_TEST(consumed == c.items / producers * producers);
  BOOST_TEST(out.lanes_created == c.keys, "without reaping, one lane per key for the whole run");
  BOOST_TEST(out.lanes_left == c.keys);
}

BOOST_AUTO_TEST_CASE(lanes_reaped_after_1ms_idle_with_capacity_and_a_yielding_consumer) {
  // Lanes reap and re-open mid-run while producers route to them; a capacity
  // refuses items (retried after a yield), and the consumer yields, so the
  // reaper, the router and the consumer interleave on both threads.
  lane_case c;
  c.items = stress_items();
  c.keys = 256;
  c.idle_ttl_ns = 1'000'000;
  c.capacity = 32;
  c.yield_every = 7;
  const lane_outcome out = run_lanes(c);
  const std::uint64_t consumed = check_lanes(c, out);
  BOOST_TEST(consumed == c.items / producers * producers);
  BOOST_TEST_MESSAGE("lanes created " << out.lanes_created << ", refusals " << out.refusals);
}

BOOST_AUTO_TEST_CASE(lanes_dropped_while_backlogged_after_producers_stopped_mid_stream) {
  // The producers are stopped part way (at a point they do not choose), and
  // the router is dropped at once, with lanes still holding queued items:
  // every item that route() accepted is still consumed, in order, once.
  lane_case c;
  c.items = stress_items();
  c.keys = 64;
  c.idle_ttl_ns = 1'000'000;
  c.stop_after = c.items / 2;
  const lane_outcome out = run_lanes(c);
  const std::uint64_t consumed = check_lanes(c, out);
  BOOST_TEST(consumed >= c.stop_after, "the producers had routed at least stop_after when told to stop");
}
