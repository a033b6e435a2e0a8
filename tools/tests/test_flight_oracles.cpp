// Goal: each single-flight oracle over the event log (tools/scenario/
// flight_oracles.hpp) catches its violation, with its own name and a message
// naming the key, the flight and the event, on a hand-written log — no table
// involved, so an oracle cannot lean on the engine's own checks — and the
// same log without the defect passes.
#define BOOST_TEST_MODULE tools_flight_oracles
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/flight_oracles.hpp"
#include "tools/scenario/scenario.hpp"

using namespace lockstep::scenario;

namespace {

using K = flight_event_kind;

flight_event ev(K kind, std::uint64_t key, std::uint64_t flight) {
  flight_event e;
  e.kind = kind;
  e.key = key;
  e.flight = flight;
  return e;
}

flight_event joined(std::uint64_t key, std::uint64_t flight, std::uint64_t waiter, bool leader, std::uint64_t called_at) {
  flight_event e = ev(K::joined, key, flight);
  e.waiter = waiter;
  e.leader = leader;
  e.called_at = called_at;
  return e;
}

flight_event answered(std::uint64_t key, std::uint64_t flight, std::uint64_t waiter, flight_answer a, std::uint64_t v) {
  flight_event e = ev(K::answered, key, flight);
  e.waiter = waiter;
  e.answer = a;
  e.value = v;
  return e;
}

flight_event left(std::uint64_t key, std::uint64_t flight, std::uint64_t waiter) {
  flight_event e = ev(K::left, key, flight);
  e.waiter = waiter;
  return e;
}

flight_event published(std::uint64_t key, std::uint64_t flight, flight_answer a, std::uint64_t v) {
  flight_event e = ev(K::published, key, flight);
  e.answer = a;
  e.value = v;
  return e;
}

/// Key 1: flight 1 led by waiter 1, joined by waiter 2, answers 7 to both;
/// then flight 2, whose only waiter leaves and which is cancelled; then
/// waiter 4 leads a fresh flight 3, whose worker panics.
std::vector<flight_event> clean_log() {
  return {joined(1, 1, 1, true, 0),                        // 0
          ev(K::led, 1, 1),                                // 1
          joined(1, 1, 2, false, 1),                       // 2
          published(1, 1, flight_answer::ok, 7),           // 3
          answered(1, 1, 1, flight_answer::ok, 7),         // 4
          answered(1, 1, 2, flight_answer::ok, 7),         // 5
          ev(K::retired, 1, 1),                            // 6
          joined(1, 2, 3, true, 7),                        // 7
          ev(K::led, 1, 2),                                // 8
          ev(K::cancelled, 1, 2),                          // 9
          left(1, 2, 3),                                   // 10
          ev(K::abandoned, 1, 2),                          // 11
          ev(K::retired, 1, 2),                            // 12
          joined(1, 3, 4, true, 13),                       // 13
          ev(K::led, 1, 3),                                // 14
          ev(K::panicked, 1, 3),                           // 15
          ev(K::abandoned, 1, 3),                          // 16
          answered(1, 3, 4, flight_answer::abandoned, 0),  // 17
          ev(K::retired, 1, 3)};                           // 18
}

flight_oracle_settings all() {
  flight_oracle_settings s;
  s.enabled = flight_oracle_names();
  return s;
}

void expect_violation(const std::vector<flight_event>& log, const std::string& oracle, const std::string& says) {
  const auto v = check_flight_log(log, all());
  BOOST_REQUIRE_MESSAGE(v.has_value(), "no violation; expected " + oracle);
  BOOST_TEST(v->oracle == oracle);
  BOOST_TEST_MESSAGE(v->message);
  BOOST_TEST(v->message.find(says) != std::string::npos, v->message);
  // Switched off, the same log passes that oracle.
  flight_oracle_settings off = all();
  std::erase(off.enabled, oracle);
  const auto w = check_flight_log(log, off);
  BOOST_TEST((!w.has_value() || w->oracle != oracle));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_clean_log_passes) {
  const auto v = check_flight_log(clean_log(), all());
  BOOST_TEST(!v.has_value(), (v ? v->oracle + ": " + v->message : std::string()));
}

BOOST_AUTO_TEST_CASE(one_leader_catches_two_leaders_two_workers_and_a_second_flight_of_a_key) {
  auto log = clean_log();
  log[2].leader = true;
  expect_violation(log, "one_leader", "a second waiter (2) leads the flight: key 1, flight 1");

  log = clean_log();
  log.insert(log.begin() + 2, ev(K::led, 1, 1));
  expect_violation(log, "one_leader", "a second worker started: key 1, flight 1");

  // Waiter 2 calls join after flight 1's leader logged and leads flight 9 while flight 1 is still open.
  log = clean_log();
  log[2] = joined(1, 9, 2, true, 1);
  log.insert(log.begin() + 3, ev(K::led, 1, 9));
  expect_violation(log, "one_leader", "started a second flight while flight 1 still held the key: key 1, flight 9");

  // A flight nobody leads, by the end of the run.
  log = clean_log();
  log[0].leader = false;
  expect_violation(log, "one_leader", "flight 1 of key 1 had 0 leaders");
}

BOOST_AUTO_TEST_CASE(cancel_publish_catches_each_order) {
  auto log = clean_log();
  log.insert(log.begin() + 10, ev(K::published, 1, 2));  // after flight 2's cancellation
  expect_violation(log, "cancel_publish", "publication began after the flight was cancelled: key 1, flight 2");

  log = clean_log();
  log.insert(log.begin() + 4, ev(K::cancelled, 1, 1));  // after flight 1's publication
  expect_violation(log, "cancel_publish", "cancelled after publication began: key 1, flight 1");

  log = clean_log();
  log[10] = answered(1, 2, 3, flight_answer::abandoned, 0);  // a waiter still there at the cancellation
  expect_violation(log, "cancel_publish", "waiter 3 read abandoned from a flight cancelled while it still waited");
}

BOOST_AUTO_TEST_CASE(same_value_catches_two_answers_of_one_flight) {
  auto log = clean_log();
  log[5] = answered(1, 1, 2, flight_answer::ok, 8);
  expect_violation(log, "same_value", "waiter 2 read ok:8, but flight 1's worker published ok:7: key 1, flight 1");
  log[5] = answered(1, 1, 2, flight_answer::error, 7);
  expect_violation(log, "same_value", "waiter 2 read error:7, but flight 1's worker published ok:7");
  // An answer and an abandonment from one flight (the worker was cancelled after it published).
  log[5] = answered(1, 1, 2, flight_answer::abandoned, 0);
  expect_violation(log, "same_value", "waiter 2 read abandoned, another waiter of the flight read ok:7: key 1, flight 1");
  // An answer from a flight whose worker never began publishing (a stale outcome cell).
  log = clean_log();
  log.erase(log.begin() + 3);
  expect_violation(log, "same_value", "waiter 1 read ok:7 from flight 1, whose worker had published nothing");
}

BOOST_AUTO_TEST_CASE(servable_catches_a_join_of_a_retired_or_cancelled_flight) {
  // Waiter 4 called join after flight 1 retired (event 6) but joined flight 1.
  auto log = clean_log();
  log.push_back(joined(1, 1, 5, false, 19));
  log.push_back(answered(1, 1, 5, flight_answer::ok, 7));
  expect_violation(log, "servable", "waiter 5 joined a flight that was retired at event 6 before it called join");

  log = clean_log();
  log.push_back(joined(1, 2, 5, false, 19));
  log.push_back(left(1, 2, 5));
  expect_violation(log, "servable", "was cancelled at event 9");

  // Called before the retirement, logged after it: no claim.
  log = clean_log();
  log.push_back(joined(1, 3, 5, false, 17));
  log.push_back(answered(1, 3, 5, flight_answer::abandoned, 0));
  const auto v = check_flight_log(log, all());
  BOOST_TEST(!v.has_value(), (v ? v->oracle + ": " + v->message : std::string()));
}

BOOST_AUTO_TEST_CASE(answered_catches_a_hung_and_a_doubly_ended_waiter) {
  auto log = clean_log();
  log.erase(log.begin() + 5);  // waiter 2 never answered
  expect_violation(log, "answered", "waiter 2 of key 1, flight 1, joined at t=0ns (event 2), was neither answered nor left");

  log = clean_log();
  log.insert(log.begin() + 6, left(1, 1, 2));
  expect_violation(log, "answered", "waiter 2 ended twice: key 1, flight 1");

  // Before the end of the run a parked waiter is no violation.
  log = clean_log();
  log.erase(log.begin() + 5);
  flight_oracle_settings mid = all();
  mid.end_of_run = false;
  BOOST_TEST(!check_flight_log(log, mid).has_value());
}
