// Goal: the threads backend's event log (tools/scenario/event_log.hpp) gives
// the oracles one log: every event recorded on either thread is in it once,
// numbered without gaps, each fiber's events in the order it recorded them,
// and an event that happened before another through a join comes first;
// nothing is recorded after close(). And scaled_durations multiplies every
// duration of a scenario, saturating instead of wrapping.
#define BOOST_TEST_MODULE tools_event_log
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <vector>

#include "engine/threads/runtime.hpp"
#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/run_scenario.hpp"

using namespace lockstep;
using namespace lockstep::scenario;

BOOST_AUTO_TEST_CASE(threads_log_merges_every_event_once_in_each_fibers_order) {
  constexpr std::uint64_t fibers = 4, per_fiber = 5000;
  threads::runtime rt(2);
  std::vector<lane_event> merged;
  std::uint64_t size = 0;
  std::size_t before = 0, after = 0;
  rt.run([&] {
    lane_event_log<threads::runtime> log(rt);
    std::vector<threads::runtime::task> tasks;
    for (std::uint64_t f = 0; f < fibers; ++f) {
      tasks.push_back(rt.spawn_on(static_cast<std::uint32_t>(f % 2), "writer", [&log, &rt, f] {
        for (std::uint64_t i = 0; i < per_fiber; ++i) {
          log.record({lane_event_kind::routed, 0, f, i, f, i, current_fiber(rt), 0});
          if (i % 64 == 0) rt.yield_now();  // interleave the two fibers of each core too
        }
      }));
    }
    for (auto& t : tasks) t.join();
    // Happened-before across threads: recorded on core 1, then joined from core 0.
    auto t = rt.spawn_on(1, "before", [&log] { log.record({lane_event_kind::lane_created, 0, 7}); });
    t.join();
    log.record({lane_event_kind::router_dropped, 0, 7});
    log.close();
    log.record({lane_event_kind::handled, 0, 8});  // after close(): dropped
    merged = log.events();
    size = log.size();
    for (std::size_t n = 0; n < merged.size(); ++n) {
      if (merged[n].kind == lane_event_kind::lane_created) before = n;
      if (merged[n].kind == lane_event_kind::router_dropped) after = n;
    }
  });
  BOOST_TEST(merged.size() == fibers * per_fiber + 2);
  BOOST_TEST(size == merged.size());  // the sequence has no gaps: size() is the merged log's length
  BOOST_TEST(before < after);
  std::map<std::uint64_t, std::uint64_t> next;  // fiber -> the seq it must record next
  std::map<std::uint64_t, std::uint64_t> lane_of;
  for (const lane_event& e : merged) {
    BOOST_TEST((e.kind != lane_event_kind::handled));
    if (e.kind != lane_event_kind::routed) continue;
    BOOST_TEST(e.seq == next[e.actor]);
    next[e.actor] = e.seq + 1;
    BOOST_TEST(e.lane != 0u);  // a fiber's id, never 0 on a fiber
    const auto [it, fresh] = lane_of.try_emplace(e.actor, e.lane);
    BOOST_TEST(it->second == e.lane);  // one id per fiber throughout
  }
  BOOST_TEST(next.size() == fibers);
  for (const auto& [f, n] : next) BOOST_TEST(n == per_fiber);
  std::map<std::uint64_t, int> ids;
  for (const auto& [f, lane] : lane_of) ++ids[lane];
  BOOST_TEST(ids.size() == fibers);  // distinct fibers, distinct ids
}

BOOST_AUTO_TEST_CASE(scaled_durations_multiplies_every_duration_and_saturates) {
  lockstep::scenario::scenario s;
  s.source = "x.json";
  s.lanes = lanes_system{};
  s.lanes->idle_ttl_ns = 100;
  s.consumer_duration = {5, 20};
  s.worker.duration_ns = {1, 2};
  s.processor.duration_ns = {3, 4};
  s.liveness_ns = 1000;
  step st;
  st.gap_ns = 7;
  st.sleep_ns = 9;
  st.leave_after_ns = 11;
  st.ttl_ns = 13;
  s.actors.push_back({"a", 0, {st}});
  const lockstep::scenario::scenario x = scaled_durations(s, 1000);
  BOOST_TEST(*x.lanes->idle_ttl_ns == 100'000);
  BOOST_TEST(x.consumer_duration.lo == 5'000u);
  BOOST_TEST(x.consumer_duration.hi == 20'000u);
  BOOST_TEST(x.worker.duration_ns.hi == 2'000u);
  BOOST_TEST(x.processor.duration_ns.lo == 3'000u);
  BOOST_TEST(x.liveness_ns == 1'000'000);
  BOOST_TEST(x.actors[0].steps[0].gap_ns == 7'000u);
  BOOST_TEST(x.actors[0].steps[0].sleep_ns == 9'000u);
  BOOST_TEST(*x.actors[0].steps[0].leave_after_ns == 11'000u);
  BOOST_TEST(*x.actors[0].steps[0].ttl_ns == 13'000);

  lockstep::scenario::scenario big = s;
  big.shards = shards_system{};
  big.shards->evict_after_ns = 3'600'000'000'000;  // the schema's largest duration
  big.liveness_ns = std::int64_t{1} << 61;         // beyond the schema: the product would pass 2^62
  big.consumer_duration = {0, UINT64_MAX};
  const lockstep::scenario::scenario y = scaled_durations(big, 1'000'000);
  const std::int64_t cap = std::int64_t{1} << 62;
  BOOST_TEST(y.shards->evict_after_ns == 3'600'000'000'000'000'000);  // the largest file value still fits
  BOOST_TEST(y.liveness_ns == cap);                                   // saturated, never wrapped
  BOOST_TEST(y.consumer_duration.lo == 0u);
  BOOST_TEST(y.consumer_duration.hi == static_cast<std::uint64_t>(cap));
  BOOST_TEST(y.shards->tick_ns == 1'000'000'000'000'000);
}
