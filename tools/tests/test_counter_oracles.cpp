// Goal: the `counters` oracle (tools/scenario/counter_oracles.hpp) holds when
// a component's own counts agree with its log and names the counter that
// does not: for the shards each counter and gauge in turn, set one off from
// what a small log shows; for the lanes a lane_count() off by one; for the
// single-flight table a flight left in the table and a miscounted
// abandonment.
#define BOOST_TEST_MODULE tools_counter_oracles
#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

#include "tools/scenario/counter_oracles.hpp"

using namespace lockstep;
namespace sc = lockstep::scenario;

namespace {

sc::shard_event ev(sc::shard_event_kind kind, std::uint64_t item, std::int64_t t = 0,
                   sc::shard_disposition d = sc::shard_disposition::keep) {
  sc::shard_event e;
  e.kind = kind;
  e.item = item;
  e.t = t;
  e.detail = static_cast<std::uint8_t>(d);
  return e;
}

// Five items on shard 0: one kept, one clean error, one in-doubt error, one
// panic, one expired, and a retry coalesced; one flush. Items are sent at t=0
// and dispatched at t=10, so queue_wait_ns may be at most 40.
std::vector<sc::shard_event> small_log() {
  using k = sc::shard_event_kind;
  using d = sc::shard_disposition;
  std::vector<sc::shard_event> log;
  for (std::uint64_t i = 1; i <= 6; ++i) log.push_back(ev(k::submitted, i));
  const d outcomes[] = {d::keep, d::error_clean, d::error_in_doubt, d::panic};
  for (std::uint64_t i = 1; i <= 4; ++i) {
    log.push_back(ev(k::dispatched, i, 10));
    log.push_back(ev(k::completed, i, 20, outcomes[i - 1]));
  }
  log.push_back(ev(k::expired, 5));
  log.push_back(ev(k::coalesced, 6));
  log.push_back(ev(k::flushed, 0));
  log.push_back(ev(k::flush_done, 0));
  return log;
}

lockstep::shard_stats_snapshot right_stats() {
  lockstep::shard_stats_snapshot s;
  s.counters.started = 5;
  s.counters.completed = 4;
  s.counters.failed = 3;
  s.counters.in_doubt = 2;
  s.counters.panicked = 1;
  s.counters.coalesced = 1;
  s.counters.expired = 1;
  s.counters.evicted = 1;
  s.counters.queue_wait_ns = 40;
  s.gauges.inflight = {0};
  s.publications = 3;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(shard_counters_that_agree_with_the_log_hold) {
  BOOST_TEST(!sc::check_shard_counters(small_log(), {right_stats()}).has_value());
}

BOOST_AUTO_TEST_CASE(each_shard_counter_and_gauge_off_from_the_log_is_named) {
  const std::vector<std::pair<std::string, std::function<void(lockstep::shard_stats_snapshot&)>>> plants = {
      {"completed is 3", [](auto& s) { s.counters.completed = 3; }},
      {"failed is 2", [](auto& s) { s.counters.failed = 2; }},
      {"in_doubt is 1", [](auto& s) { s.counters.in_doubt = 1; }},
      {"panicked is 0", [](auto& s) { s.counters.panicked = 0; }},
      {"coalesced is 0", [](auto& s) { s.counters.coalesced = 0; }},
      {"expired is 2", [](auto& s) { s.counters.expired = 2; }},
      {"evicted is 0", [](auto& s) { s.counters.evicted = 0; }},
      {"started is 6", [](auto& s) { s.counters.started = 6; }},
      {"queue_wait_ns is 41", [](auto& s) { s.counters.queue_wait_ns = 41; }},
      {"gauges pending 1", [](auto& s) { s.gauges.pending = 1; }},
      {"in flight 1", [](auto& s) { s.gauges.inflight = {1}; }},
      {"resident 1", [](auto& s) { s.gauges.resident = 1; }},
      {"flushing 1", [](auto& s) { s.gauges.flushing = 1; }},
      {"never published", [](auto& s) { s.publications = 0; }},
  };
  for (const auto& [text, plant] : plants) {
    lockstep::shard_stats_snapshot s = right_stats();
    plant(s);
    const auto v = sc::check_shard_counters(small_log(), {s});
    BOOST_TEST_INFO(text);
    BOOST_TEST_REQUIRE(v.has_value());
    BOOST_TEST(v->oracle == "counters");
    BOOST_TEST(v->message.find(text) != std::string::npos, v->message);
  }
  // started agrees with completed + expired, but an item sent was neither admitted nor coalesced.
  std::vector<sc::shard_event> lost = small_log();
  lost.push_back(ev(sc::shard_event_kind::submitted, 7));
  const auto v = sc::check_shard_counters(lost, {right_stats()});
  BOOST_TEST_REQUIRE(v.has_value());
  BOOST_TEST(v->message.find("items submitted to the shard") != std::string::npos, v->message);
}

BOOST_AUTO_TEST_CASE(lane_count_is_the_lanes_created_and_not_closed) {
  std::vector<sc::lane_event> log;
  log.push_back({sc::lane_event_kind::lane_created});
  log.push_back({sc::lane_event_kind::lane_created});
  log.push_back({sc::lane_event_kind::lane_closed});
  BOOST_TEST(!sc::check_lane_counters(log, 1).has_value());
  const auto v = sc::check_lane_counters(log, 2);
  BOOST_TEST_REQUIRE(v.has_value());
  BOOST_TEST(v->oracle == "counters");
  BOOST_TEST(v->message.find("lane_count() is 2") != std::string::npos, v->message);
}

BOOST_AUTO_TEST_CASE(a_settled_table_holds_no_flight_and_counts_the_logs_abandonments) {
  std::vector<sc::flight_event> log(1);
  log[0].kind = sc::flight_event_kind::abandoned;
  BOOST_TEST(!sc::check_flight_counters(log, 0, 1).has_value());
  BOOST_TEST(!sc::check_flight_counters(log, 0, std::nullopt).has_value());
  const auto left = sc::check_flight_counters(log, 1, 1);
  BOOST_TEST_REQUIRE(left.has_value());
  BOOST_TEST(left->message.find("in_flight() is 1") != std::string::npos, left->message);
  const auto miscounted = sc::check_flight_counters(log, 0, 0);
  BOOST_TEST_REQUIRE(miscounted.has_value());
  BOOST_TEST(miscounted->message.find("abandoned_total() is 0") != std::string::npos, miscounted->message);
}
