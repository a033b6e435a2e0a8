// Goal: the composed system's end-to-end oracle (tools/scenario/
// composed_oracles.hpp, `delivery`) catches each way an item can go wrong
// between the components — lost before the lookup, a lookup that disagrees
// with the flight log, forwarded after an error, forwarded twice, with the
// wrong value, lost in the shards — on hand-written logs, with no component
// involved; a clean log passes, and the oracle switched off reports nothing.
#define BOOST_TEST_MODULE tools_composed_oracles
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/composed_oracles.hpp"
#include "tools/scenario/scenario.hpp"

using namespace lockstep::scenario;

namespace {

/// Items 0 and 1 of key 3 routed and handled; both looked up as waiters 1
/// and 2 of flight 7 (ok:40), forwarded as shard items 1 and 2, completed.
struct logs {
  std::vector<lane_event> lanes;
  std::vector<flight_event> flights;
  std::vector<shard_event> shards;
  std::vector<composed_event> composed;
};

lane_event lane(lane_event_kind k, std::uint64_t item) {
  lane_event e{k};
  e.key = 3;
  e.item = item;
  return e;
}

flight_event answered(std::uint64_t waiter, flight_answer a, std::uint64_t value, std::uint64_t flight = 7) {
  flight_event e;
  e.kind = flight_event_kind::answered;
  e.key = 0;
  e.flight = flight;
  e.waiter = waiter;
  e.answer = a;
  e.value = value;
  return e;
}

shard_event shard(shard_event_kind k, std::uint64_t item) {
  shard_event e;
  e.kind = k;
  e.key = 3;
  e.item = item;
  return e;
}

composed_event looked_up(std::uint64_t item, std::uint64_t waiter, flight_answer a, std::uint64_t value) {
  composed_event e{composed_event_kind::looked_up};
  e.item = item;
  e.key = 3;
  e.waiter = waiter;
  e.flight = 7;
  e.answer = a;
  e.value = value;
  return e;
}

composed_event forwarded(std::uint64_t item, std::uint64_t shard_item, std::uint64_t value, bool sent = true) {
  composed_event e{composed_event_kind::forwarded};
  e.item = item;
  e.key = 3;
  e.shard_item = shard_item;
  e.value = value;
  e.sent = sent;
  return e;
}

logs clean() {
  logs l;
  l.lanes = {lane(lane_event_kind::routed, 0), lane(lane_event_kind::routed, 1), lane(lane_event_kind::handled, 0),
             lane(lane_event_kind::handled, 1)};
  l.flights = {answered(1, flight_answer::ok, 40), answered(2, flight_answer::ok, 40)};
  l.shards = {shard(shard_event_kind::submitted, 1), shard(shard_event_kind::completed, 1),
              shard(shard_event_kind::submitted, 2), shard(shard_event_kind::completed, 2)};
  l.composed = {looked_up(0, 1, flight_answer::ok, 40), forwarded(0, 1, 40), looked_up(1, 2, flight_answer::ok, 40),
                forwarded(1, 2, 40)};
  return l;
}

std::optional<violation> check(const logs& l, std::vector<std::string> enabled = composed_oracle_names()) {
  composed_oracle_settings s;
  s.lookup = true;
  s.forward = true;
  s.enabled = std::move(enabled);
  return check_composed_logs({&l.lanes, &l.flights, &l.shards, &l.composed}, s);
}

void expect_caught(const std::optional<violation>& v, const std::string& text) {
  BOOST_REQUIRE_MESSAGE(v.has_value(), "expected delivery to be caught (" + text + ")");
  BOOST_TEST(v->oracle == "delivery");
  BOOST_TEST(v->message.find(text) != std::string::npos, v->message);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_clean_composition_passes) { BOOST_TEST(!check(clean()).has_value()); }

BOOST_AUTO_TEST_CASE(an_item_lost_before_its_lookup_or_in_the_consumer) {
  auto l = clean();
  l.composed.erase(l.composed.begin() + 2, l.composed.end());  // item 1 never looked up nor forwarded
  l.shards.erase(l.shards.begin() + 2, l.shards.end());
  expect_caught(check(l), "item 1 was admitted by the lanes but never looked up");
  BOOST_TEST(!check(l, {"exactly_once"}).has_value());  // switched off: not reported

  auto kept_nothing = clean();
  kept_nothing.composed.pop_back();  // looked up, then neither forwarded nor kept
  kept_nothing.shards.erase(kept_nothing.shards.begin() + 2, kept_nothing.shards.end());
  expect_caught(check(kept_nothing), "item 1 was admitted by the lanes but never forwarded");
}

BOOST_AUTO_TEST_CASE(a_lookup_that_disagrees_with_the_flight_log) {
  auto l = clean();
  l.composed[2] = looked_up(1, 2, flight_answer::ok, 41);
  l.composed[3] = forwarded(1, 2, 41);
  expect_caught(check(l), "the flight log says waiter 2 read ok:40");

  auto split = clean();  // the flight handed its two waiters different values
  split.flights[1] = answered(2, flight_answer::ok, 41);
  split.composed[2] = looked_up(1, 2, flight_answer::ok, 41);
  split.composed[3] = forwarded(1, 2, 41);
  expect_caught(check(split), "flight 7 handed its waiters 2 different ok values");
}

BOOST_AUTO_TEST_CASE(forwarding_after_an_error_twice_or_with_the_wrong_value) {
  auto after_error = clean();
  after_error.flights[1] = answered(2, flight_answer::error, 9);
  after_error.composed[2] = looked_up(1, 2, flight_answer::error, 9);
  expect_caught(check(after_error), "was forwarded although its lookup answered error:9");

  auto twice = clean();
  twice.composed.push_back(forwarded(1, 3, 40));
  twice.shards.push_back(shard(shard_event_kind::submitted, 3));
  twice.shards.push_back(shard(shard_event_kind::completed, 3));
  expect_caught(check(twice), "forwarded or kept back 2 times");

  auto wrong = clean();
  wrong.composed[3] = forwarded(1, 2, 39);
  expect_caught(check(wrong), "forwarded with value 39, its lookup read 40");

  auto kept_ok = clean();
  composed_event kept{composed_event_kind::kept};
  kept.item = 1;
  kept.key = 3;
  kept_ok.composed[3] = kept;
  kept_ok.shards.erase(kept_ok.shards.begin() + 2, kept_ok.shards.end());
  expect_caught(check(kept_ok), "was kept back although its lookup answered ok:40");
}

BOOST_AUTO_TEST_CASE(an_item_lost_or_duplicated_in_the_shards) {
  auto lost = clean();
  lost.shards.pop_back();  // shard item 2 never completed
  expect_caught(check(lost), "shard item 2, which never completed, expired or coalesced (lost in the shards)");

  auto doubled = clean();
  doubled.shards.insert(doubled.shards.begin() + 2, shard(shard_event_kind::expired, 1));
  expect_caught(check(doubled), "came out of the shards 2 times");

  auto handed = clean();  // handed back by the router and logged so: accounted for
  handed.composed[3] = forwarded(1, 2, 40, false);
  handed.shards[2] = shard(shard_event_kind::handed_back, 2);
  handed.shards.pop_back();
  BOOST_TEST(!check(handed).has_value());
  handed.shards.pop_back();  // ... but a hand-back the shard log does not have is not
  expect_caught(check(handed), "was handed back, but the shard log has no such event");
}

BOOST_AUTO_TEST_CASE(an_item_whose_consumer_call_failed_ends_in_the_consumer) {
  for (const consumer_outcome how : {consumer_outcome::panic, consumer_outcome::error}) {
    auto l = clean();  // item 1's call failed before its lookup: nothing of it past the lanes
    l.lanes[3].outcome = how;
    l.flights.pop_back();
    l.composed.erase(l.composed.begin() + 2, l.composed.end());
    l.shards.erase(l.shards.begin() + 2, l.shards.end());
    BOOST_TEST(!check(l).has_value());

    auto went_on = clean();  // ... but a failed call that still looked up and forwarded is caught
    went_on.lanes[3].outcome = how;
    expect_caught(check(went_on), "item 1 reached the consumer's composed.looked_up although its consumer call ended in " +
                                      std::string(name_of(how)));
  }
  auto lost = clean();  // the same log with item 1's call ok: lost before the lookup
  lost.flights.pop_back();
  lost.composed.erase(lost.composed.begin() + 2, lost.composed.end());
  lost.shards.erase(lost.shards.begin() + 2, lost.shards.end());
  expect_caught(check(lost), "item 1 was admitted by the lanes but never looked up");
}
