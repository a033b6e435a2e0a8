// Goal: each lane-router oracle over the event log (tools/scenario/
// lane_oracles.hpp) catches its violation, with its own name and a message
// naming the key, on a hand-written log — no router involved, so an oracle
// cannot lean on the engine's own checks — and a clean log passes.
#define BOOST_TEST_MODULE tools_lane_oracles
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/lane_oracles.hpp"
#include "tools/scenario/scenario.hpp"

using namespace lockstep::scenario;

namespace {

using K = lane_event_kind;

lane_event ev(K kind, std::uint64_t key, std::uint64_t item = 0, std::uint64_t seq = 0, std::uint64_t lane = 100,
              std::uint64_t depth = 0) {
  return lane_event{kind, 0, key, item, 0, seq, lane, depth};
}

/// Key 1: items 0 and 1 routed, handled in order on lane 100, lane closed after the drop.
std::vector<lane_event> clean_log() {
  return {ev(K::lane_created, 1),        ev(K::routed, 1, 0, 0, 0, 0),  ev(K::handle_begin, 1, 0, 0),
          ev(K::routed, 1, 1, 1, 0, 1),  ev(K::handled, 1, 0, 0),       ev(K::handle_begin, 1, 1, 1),
          ev(K::handled, 1, 1, 1),       ev(K::router_dropped, lockstep::scenario::unknown_key),
          ev(K::lane_closed, 1)};
}

std::optional<violation> check(const std::vector<lane_event>& log, std::optional<std::size_t> capacity = std::nullopt,
                               std::vector<std::string> enabled = lane_oracle_names()) {
  return check_lane_log(log, lane_oracle_settings{capacity, std::move(enabled), true});
}

void expect_caught(const std::optional<violation>& v, const std::string& oracle, const std::string& text) {
  BOOST_REQUIRE_MESSAGE(v.has_value(), "expected " + oracle + " to be caught");
  BOOST_TEST(v->oracle == oracle);
  BOOST_TEST(v->message.find(text) != std::string::npos, v->message);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_clean_log_passes) {
  BOOST_TEST(!check(clean_log()).has_value());
  BOOST_TEST(!check(clean_log(), 2).has_value());
}

BOOST_AUTO_TEST_CASE(per_key_order_catches_a_reordering) {
  auto log = clean_log();
  log[2] = ev(K::handle_begin, 1, 1, 1);  // item 1 first ...
  log[4] = ev(K::handled, 1, 1, 1);
  log[5] = ev(K::handle_begin, 1, 0, 0);  // ... then item 0
  log[6] = ev(K::handled, 1, 0, 0);
  expect_caught(check(log), "per_key_order", "key 1");
}

BOOST_AUTO_TEST_CASE(exactly_once_catches_a_lost_item_a_double_and_a_refused_one_handled) {
  auto lost = clean_log();
  lost.erase(lost.begin() + 5, lost.begin() + 7);  // item 1 never handled, and the lane is gone
  expect_caught(check(lost), "exactly_once", "item 1 was admitted but never handled");

  auto twice = clean_log();
  twice.insert(twice.begin() + 7, {ev(K::handle_begin, 1, 1, 2), ev(K::handled, 1, 1, 2)});
  expect_caught(check(twice, std::nullopt, {"exactly_once"}), "exactly_once", "handled 2 times");

  auto refused = clean_log();
  refused[3] = ev(K::refused, 1, 1, 1, 0, 2);
  expect_caught(check(refused, 2), "exactly_once", "item 1 reached the consumer but route() refused it");
}

BOOST_AUTO_TEST_CASE(one_lane_per_key_catches_overlap_and_going_back) {
  auto overlap = clean_log();
  std::swap(overlap[4], overlap[5]);  // item 1 starts before item 0 returns
  expect_caught(check(overlap), "one_lane_per_key", "two consumer calls of the key at once");

  auto back = clean_log();
  back[5] = ev(K::handle_begin, 1, 1, 1, 200);  // a second lane ...
  back[6] = ev(K::handled, 1, 1, 1, 200);
  back.insert(back.begin() + 7, {ev(K::routed, 1, 2, 2, 0, 0), ev(K::handle_begin, 1, 2, 2, 100),
                                 ev(K::handled, 1, 2, 2, 100)});  // ... then the first again
  expect_caught(check(back, std::nullopt, {"one_lane_per_key"}), "one_lane_per_key", "after a newer lane");
}

BOOST_AUTO_TEST_CASE(capacity_catches_excess_admission_and_refusals_below_or_uncapped) {
  expect_caught(check(clean_log(), 1), "capacity", "item 1 admitted at depth 1, capacity 1");
  // The router claims depth 0, but the log shows item 0 still in the consumer:
  // routed by the same actor before, so the depth itself is wrong ...
  auto hidden = clean_log();
  hidden[3] = ev(K::routed, 1, 1, 1, 0, 0);
  expect_caught(check(hidden, 1), "capacity", "route() reported depth 0 for item 1, but 1 items of the key");
  // ... and by another actor, whose call the log cannot place after item 0's
  // admission: the key still holds 2 unfinished items past capacity 1.
  hidden[3].actor = 1;
  expect_caught(check(hidden, 1), "capacity", "holds 2 unfinished items, capacity 1");

  auto below = clean_log();
  below.insert(below.begin() + 7, ev(K::refused, 1, 2, 2, 0, 0));
  expect_caught(check(below, 2), "capacity", "refused at depth 0, below capacity 2");
  expect_caught(check(below), "capacity", "refused by an uncapped router");
  BOOST_TEST(!check(below, 2, {"per_key_order", "exactly_once"}).has_value());  // switched off: not reported
}

BOOST_AUTO_TEST_CASE(capacity_judges_each_route_by_its_own_capacity) {
  // An uncapped router; route steps that give their own capacity.
  auto own = [](lane_event e, std::optional<std::uint64_t> cap) {
    e.own_capacity = true;
    e.capacity = cap;
    return e;
  };
  auto tight = clean_log();
  tight[3] = own(ev(K::routed, 1, 1, 1, 0, 1), 1);  // admitted at depth 1 by a route with capacity 1
  expect_caught(check(tight), "capacity", "item 1 admitted at depth 1, capacity 1");
  auto roomy = clean_log();
  roomy[1] = own(ev(K::routed, 1, 0, 0, 0, 0), 1);
  roomy[3] = own(ev(K::routed, 1, 1, 1, 0, 1), 2);  // the same depth under capacity 2 is fine
  BOOST_TEST(!check(roomy).has_value());
  // Two unfinished items while the largest capacity routed with is 1.
  auto held = clean_log();
  held[1] = own(ev(K::routed, 1, 0, 0, 0, 0), 1);
  held[3] = own(ev(K::routed, 1, 1, 1, 0, 0), 1);
  held[3].actor = 1;  // another actor's route: its depth 0 is not proven wrong
  expect_caught(check(held), "capacity", "holds 2 unfinished items, capacity 1");
  auto below = clean_log();
  below.insert(below.begin() + 7, own(ev(K::refused, 1, 2, 2, 0, 1), 3));
  expect_caught(check(below, 2), "capacity", "refused at depth 1, below capacity 3");  // its own, not the router's 2
  auto uncapped = clean_log();
  uncapped.insert(uncapped.begin() + 7, own(ev(K::refused, 1, 2, 2, 0, 5), std::nullopt));
  expect_caught(check(uncapped, 2), "capacity", "refused by an uncapped route");
}

BOOST_AUTO_TEST_CASE(lanes_gone_and_liveness_at_the_end) {
  auto open = clean_log();
  open.pop_back();  // the lane never closed after the drop
  expect_caught(check(open), "lanes_gone", "1 of 1 lanes still open");

  auto stuck = open;
  stuck.erase(stuck.begin() + 5, stuck.begin() + 7);  // item 1 unhandled while its lane is open
  expect_caught(check(stuck), "liveness", "item 1 admitted and still unhandled");
}

namespace {

lane_event failed(std::uint64_t key, std::uint64_t item, std::uint64_t seq, consumer_outcome how) {
  lane_event e = ev(K::handled, key, item, seq);
  e.outcome = how;
  return e;
}

/// Key 1: items 0, 1, 2 routed and handled in order on lane 100; item 1's call panicked (contained).
std::vector<lane_event> panicking_log() {
  return {ev(K::lane_created, 1),       ev(K::routed, 1, 0, 0, 0, 0),   ev(K::routed, 1, 1, 1, 0, 1),
          ev(K::routed, 1, 2, 2, 0, 2), ev(K::handle_begin, 1, 0, 0),   ev(K::handled, 1, 0, 0),
          ev(K::handle_begin, 1, 1, 1), failed(1, 1, 1, consumer_outcome::panic),
          ev(K::handle_begin, 1, 2, 2), ev(K::handled, 1, 2, 2),
          ev(K::router_dropped, unknown_key), ev(K::lane_closed, 1)};
}

std::optional<violation> check_reaping(const std::vector<lane_event>& log, bool reaps) {
  lane_oracle_settings s{std::nullopt, lane_oracle_names(), true};
  s.reaps = reaps;
  return check_lane_log(log, s);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_failed_consumer_call_counts_as_handled) {
  BOOST_TEST(!check(panicking_log()).has_value());
  auto errored = panicking_log();
  errored[7] = failed(1, 1, 1, consumer_outcome::error);
  BOOST_TEST(!check(errored).has_value());
}

BOOST_AUTO_TEST_CASE(per_key_order_holds_across_a_panicking_item) {
  auto log = panicking_log();
  // The item after the panic is handed over before the panicking one.
  log[6] = ev(K::handle_begin, 1, 2, 2);
  log[7] = ev(K::handled, 1, 2, 2);
  log[8] = ev(K::handle_begin, 1, 1, 1);
  log[9] = failed(1, 1, 1, consumer_outcome::panic);
  expect_caught(check(log), "per_key_order", "actor 0's item seq 1 handled after its seq 2");
}

BOOST_AUTO_TEST_CASE(exactly_once_catches_the_item_lost_after_a_panic) {
  auto log = panicking_log();
  log.erase(log.begin() + 8, log.begin() + 10);  // item 2 never reaches the consumer
  expect_caught(check(log, std::nullopt, {"exactly_once"}), "exactly_once", "item 2 was admitted but never handled");
  // With every oracle on, the lane's close with item 2 still unfinished is
  // seen first, in log order, by lane_survives.
  expect_caught(check(log), "lane_survives", "lane 100 closed with 1 unfinished items");
}

BOOST_AUTO_TEST_CASE(lane_survives_catches_a_lane_ended_by_its_consumers_failure) {
  // The lane closes right after the panic, with item 2 still queued; a new
  // lane then serves it.
  auto with_work = panicking_log();
  with_work.insert(with_work.begin() + 8, {ev(K::lane_closed, 1), ev(K::lane_created, 1)});
  for (std::size_t i = 10; i < 12; ++i) with_work[i].lane = 101;
  with_work.back().lane = 101;
  expect_caught(check(with_work), "lane_survives",
                "lane 100 closed with 1 unfinished items of its key after its consumer's panic on item 1");
  // Only that oracle: the rest of the log is lawful.
  BOOST_TEST(!check(with_work, std::nullopt, {"per_key_order", "exactly_once", "one_lane_per_key", "capacity",
                                              "lanes_gone"})
                  .has_value());

  // The panicking item was the key's last: the lane still must not close
  // while lanes never reap and the router is alive.
  auto last = panicking_log();
  last.erase(last.begin() + 8, last.begin() + 10);
  last.erase(last.begin() + 3);
  last.insert(last.begin() + 7, ev(K::lane_closed, 1));
  last.pop_back();
  expect_caught(check_reaping(last, false), "lane_survives", "closed with idle_ttl off and the router not dropped");
  // With idle_ttl set the same close is a reap: lawful.
  BOOST_TEST(!check_reaping(last, true).has_value());
}

BOOST_AUTO_TEST_CASE(lane_survives_leaves_a_successor_lanes_items_alone) {
  // Found by lanes_survives_consumer_panic_2cores.json, random seed 1006: lane
  // 100 panics on item 1, finishes item 2 and is reaped; a route opens lane
  // 101, whose consumer takes item 3 before lane 100's close is logged. Item 3
  // is the successor's, not left behind by lane 100.
  std::vector<lane_event> log = {ev(K::lane_created, 1),       ev(K::routed, 1, 1, 1, 0, 0),
                                 ev(K::routed, 1, 2, 2, 0, 1), ev(K::handle_begin, 1, 1, 1),
                                 failed(1, 1, 1, consumer_outcome::panic),
                                 ev(K::handle_begin, 1, 2, 2), ev(K::handled, 1, 2, 2),
                                 ev(K::lane_created, 1),       ev(K::handle_begin, 1, 3, 3, 101),
                                 ev(K::routed, 1, 3, 3, 0, 0), ev(K::lane_closed, 1),
                                 ev(K::handled, 1, 3, 3, 101), ev(K::router_dropped, unknown_key),
                                 ev(K::lane_closed, 1, 0, 0, 101)};
  BOOST_TEST(!check_reaping(log, true).has_value());
  // The same log with item 3 not yet begun when lane 100 closes: still the successor's.
  std::vector<lane_event> queued = log;
  std::swap(queued[8], queued[9]);   // routed before handle_begin
  std::swap(queued[9], queued[10]);  // lane 100 closes before lane 101 takes item 3
  BOOST_TEST(!check_reaping(queued, true).has_value());
  // But an item routed before the successor opened and never begun was lane 100's.
  std::vector<lane_event> lost = log;
  lost.insert(lost.begin() + 3, ev(K::routed, 1, 9, 9, 0, 2));
  expect_caught(check_reaping(lost, true), "lane_survives", "lane 100 closed with 1 unfinished items of its key");
}

BOOST_AUTO_TEST_CASE(no_black_hole_allows_only_what_an_escaped_lane_held) {
  auto at = [](lane_event e, std::int64_t t, std::int64_t sent = 0) {
    e.t = t;
    e.sent_ns = sent;
    return e;
  };
  lane_event escaped = ev(K::handled, 1, 1, 1);
  escaped.escaped = true;
  escaped.outcome = consumer_outcome::panic;
  // Lane 100 handles item 0; item 1's panic escapes and ends it at t=200, and
  // item 2, queued behind it (routed at t=0), is dropped with it. Item 3,
  // routed at t=500, goes to a fresh lane 101.
  const std::vector<lane_event> base = {
      ev(K::lane_created, 1),           ev(K::routed, 1, 0, 0, 0, 0), ev(K::routed, 1, 1, 1, 0, 1),
      ev(K::routed, 1, 2, 2, 0, 2),     ev(K::handle_begin, 1, 0, 0), ev(K::handled, 1, 0, 0),
      ev(K::handle_begin, 1, 1, 1),     at(escaped, 200),             at(ev(K::lane_closed, 1), 200),
      at(ev(K::dropped, 1, 2, 2), 200, 0)};
  auto fresh = base;
  for (const lane_event& e : {at(ev(K::lane_created, 1), 500), at(ev(K::routed, 1, 3, 3, 0, 0), 500, 500),
                              at(ev(K::handle_begin, 1, 3, 3, 101), 500), at(ev(K::handled, 1, 3, 3, 101), 600),
                              ev(K::router_dropped, unknown_key), at(ev(K::lane_closed, 1, 0, 0, 101), 600)}) {
    fresh.push_back(e);
  }
  BOOST_TEST(!check(fresh).has_value(), (check(fresh) ? check(fresh)->message : ""));

  // Item 3 routed at t=500, after the lane closed, and dropped: a dead lane's
  // sender was left in the map.
  auto swallowed = base;
  swallowed.push_back(at(ev(K::routed, 1, 3, 3, 0, 0), 500, 500));
  swallowed.push_back(at(ev(K::dropped, 1, 3, 3), 500, 500));
  expect_caught(check(swallowed), "no_black_hole", "item 3, routed at t=500ns, after the key's lane ended by an "
                                                   "escaped panic or a cancellation closed at t=200ns, was dropped");

  // A drop where no lane of the key ended by an escape: lost.
  auto no_escape = base;
  no_escape[7].escaped = false;  // a contained panic: the lane should have survived
  expect_caught(check(no_escape, std::nullopt, {"no_black_hole"}), "no_black_hole",
                "no lane of its key ended by an escaped panic");

  // Dropped after a consumer began it: not a queued item.
  auto begun = fresh;
  begun.push_back(at(ev(K::dropped, 1, 3, 3), 700, 500));
  expect_caught(check(begun), "exactly_once", "item 3 was dropped after a consumer began it");
}

BOOST_AUTO_TEST_CASE(capacity_catches_a_depth_below_the_work_still_unfinished) {
  // One actor routes items 0 and 1 to key 1; item 0 is in the consumer (its
  // handled event comes after item 1's routed event), so route() must report
  // at least depth 1 for item 1.
  auto log = [](std::uint64_t reported) {
    return std::vector<lane_event>{ev(K::lane_created, 1),       ev(K::routed, 1, 0, 0, 0, 0),
                                   ev(K::handle_begin, 1, 0, 0), ev(K::routed, 1, 1, 1, 0, reported),
                                   ev(K::handled, 1, 0, 0),      ev(K::handle_begin, 1, 1, 1),
                                   ev(K::handled, 1, 1, 1),      ev(K::router_dropped, unknown_key),
                                   ev(K::lane_closed, 1)};
  };
  BOOST_TEST(!check(log(1)).has_value());
  expect_caught(check(log(0)), "capacity",
                "key 1 at t=0ns (event #3): route() reported depth 0 for item 1, but 1 items of the key admitted "
                "before it was called were still unfinished");
  // Item 0 returned before item 1 was routed: depth 0 is right.
  auto done_first = log(0);
  std::swap(done_first[3], done_first[4]);
  BOOST_TEST(!check(done_first).has_value());
}

BOOST_AUTO_TEST_CASE(no_black_hole_counts_a_cancelled_lane_as_ended) {
  // A cancel_lane step asks lane 100 (key 1) to end while idle; item 1,
  // routed just before it closed, is dropped with it: allowed. Without the
  // cancel_lane event the same drop has no cause.
  auto at = [](lane_event e, std::int64_t t, std::int64_t sent = 0) {
    e.t = t;
    e.sent_ns = sent;
    return e;
  };
  const std::vector<lane_event> log = {ev(K::lane_created, 1),          ev(K::routed, 1, 0, 0, 0, 0),
                                       ev(K::handle_begin, 1, 0, 0),    at(ev(K::handled, 1, 0, 0), 50),
                                       at(ev(K::cancel_lane, 1), 60),   at(ev(K::routed, 1, 1, 1, 0, 0), 60, 60),
                                       at(ev(K::lane_closed, 1), 60),   at(ev(K::dropped, 1, 1, 1), 60, 60),
                                       ev(K::router_dropped, unknown_key)};
  BOOST_TEST(!check(log).has_value(), (check(log) ? check(log)->message : ""));
  auto uncaused = log;
  uncaused.erase(uncaused.begin() + 4);
  expect_caught(check(uncaused, std::nullopt, {"no_black_hole"}), "no_black_hole",
                "no lane of its key ended by an escaped panic or a cancellation");
}

BOOST_AUTO_TEST_CASE(lane_survives_leaves_a_cancelled_lane_alone) {
  // Found by `explore --generate lanes` (seed 130): lane 100's consumer
  // contains an error on item 0 (the lane survives it), then a cancel_lane
  // step ends the lane with item 1 still queued, which is dropped with it.
  // The cancellation ended the lane, not the error: lane_survives holds.
  const std::vector<lane_event> log = {ev(K::lane_created, 1),
                                       ev(K::routed, 1, 0, 0, 0, 0),
                                       ev(K::routed, 1, 1, 1, 0, 1),
                                       ev(K::handle_begin, 1, 0, 0),
                                       failed(1, 0, 0, consumer_outcome::error),
                                       ev(K::cancel_lane, 1),
                                       ev(K::lane_closed, 1),
                                       ev(K::dropped, 1, 1, 1),
                                       ev(K::router_dropped, unknown_key)};
  BOOST_TEST(!check(log).has_value(), (check(log) ? check(log)->oracle + ": " + check(log)->message : ""));
  // Without the cancellation the same close is the error's doing (and the drop has no cause).
  auto uncancelled = log;
  uncancelled.erase(uncancelled.begin() + 5);
  expect_caught(check(uncancelled, std::nullopt, {"lane_survives"}), "lane_survives",
                "lane 100 closed with 1 unfinished items of its key after its consumer's error on item 0");
}
