// Goal: timers due at one virtual instant, and the length of virtual delays,
// are choices a strategy can make (run_config::timer_ties, timer_jitter_ns),
// recorded and replayed like any other; off, timers behave as they always
// did. The program that shows why: a notify sent at the very instant a timed
// wait times out. With ties off both timers fire together and the wait
// always times out; with ties on the notifier's timer may fire alone first,
// and the wait is notified, as it can be on a real machine.
#define BOOST_TEST_MODULE sim_timers
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/dfs_search.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

struct deadline_state {
  explicit deadline_state(runtime& rt) : n(rt) {}
  notify n;
  bool notified = false;
};

// The waiter waits for a notify until t = 100; the notifier sleeps until
// t = 100 and notifies. Each on its own core.
void notify_at_the_deadline(runtime& rt, bool& notified) {
  auto st = std::make_shared<deadline_state>(rt);
  auto waiter = rt.spawn_on(0, "waiter", [st] { st->notified = st->n.notified_until(100); });
  auto notifier = rt.spawn_on(1, "notifier", [st, &rt] {
    rt.sleep_until(100);
    st->n.notify_one();
  });
  waiter.join();
  notifier.join();
  notified = st->notified;
}

run_config timers(std::uint64_t seed, const std::string& strategy, bool ties, std::int64_t jitter = 0) {
  run_config c = config(seed, strategy, 2);
  c.timer_ties = ties;
  c.timer_jitter_ns = jitter;
  return c;
}

// Whether the waiter was notified, over `seeds` runs.
std::set<bool> outcomes(const std::string& strategy, bool ties, int seeds) {
  std::set<bool> seen;
  for (int s = 1; s <= seeds; ++s) {
    bool notified = false;
    const run_result r = run(timers(static_cast<std::uint64_t>(s), strategy, ties),
                             [&](runtime& rt) { notify_at_the_deadline(rt, notified); });
    BOOST_REQUIRE(r.ok());
    seen.insert(notified);
  }
  return seen;
}

// Two sleepers, due `gap` ns apart, logging who woke first.
std::vector<int> two_sleepers(runtime& rt, std::int64_t gap, std::vector<std::int64_t>* woke_at = nullptr) {
  auto log = std::make_shared<std::vector<int>>();
  auto times = std::make_shared<std::vector<std::int64_t>>();
  std::vector<task> tasks;
  for (int i = 0; i < 2; ++i) {
    tasks.push_back(rt.spawn_on(static_cast<std::uint32_t>(i), "s" + std::to_string(i), [&rt, log, times, i, gap] {
      rt.sleep_for(100 + i * gap);
      log->push_back(i);
      times->push_back(rt.now());
    }));
  }
  for (auto& t : tasks) t.join();
  if (woke_at != nullptr) *woke_at = *times;
  return *log;
}

}  // namespace

BOOST_AUTO_TEST_CASE(without_ties_a_notify_at_the_deadline_always_loses) {
  for (const char* s : {"random", "pct", "pos", "fifo"}) {
    BOOST_TEST_CONTEXT(s) { BOOST_TEST((outcomes(s, false, 100) == std::set<bool>{false})); }
  }
}

BOOST_AUTO_TEST_CASE(with_ties_either_timer_may_fire_first_under_every_sampling_strategy) {
  for (const char* s : {"random", "pct", "pos", "surw"}) {
    BOOST_TEST_CONTEXT(s) { BOOST_TEST((outcomes(s, true, 100) == std::set<bool>{false, true})); }
  }
  // fifo does not explore choices: its one order, the timers' in setting order.
  BOOST_TEST((outcomes("fifo", true, 20) == std::set<bool>{false}));
}

BOOST_AUTO_TEST_CASE(a_tie_is_one_recorded_decision_and_replays) {
  int replayed = 0;
  for (std::uint64_t s = 1; s <= 20; ++s) {
    bool notified = false;
    const run_result r = run(timers(s, "random", true), [&](runtime& rt) { notify_at_the_deadline(rt, notified); });
    BOOST_REQUIRE(r.ok());
    // The trace names the choice it made.
    BOOST_TEST(r.trace_text.find("\"on\":\"timer_tie\",\"count\":3") != std::string::npos);
    run_config again = timers(s, "replay", true);
    again.options.decisions = r.decisions;
    bool notified_again = !notified;
    const run_result rr = run(again, [&](runtime& rt) { notify_at_the_deadline(rt, notified_again); });
    BOOST_TEST(rr.ok());
    BOOST_TEST(rr.trace_hash == r.trace_hash);
    BOOST_TEST(notified_again == notified);
    ++replayed;
  }
  BOOST_TEST(replayed == 20);
}

BOOST_AUTO_TEST_CASE(ties_off_records_no_decision_for_timers) {
  bool notified = false;
  const run_result r = run(timers(1, "random", false), [&](runtime& rt) { notify_at_the_deadline(rt, notified); });
  BOOST_TEST(r.trace_text.find("timer_tie") == std::string::npos);
}

// dfs branches on a tie like on any choice: the whole tree holds both outcomes.
BOOST_AUTO_TEST_CASE(dfs_enumerates_both_tie_outcomes) {
  for (const bool ties : {false, true}) {
    std::set<bool> seen;
    const dfs_bounds bounds;  // no bounds
    const dfs_outcome out = search_dfs(
        timers(1, "dfs", ties), bounds, 0,
        [&](const run_config& c) {
          bool notified = false;
          run_result r = run(c, [&](runtime& rt) { notify_at_the_deadline(rt, notified); });
          seen.insert(notified);
          return r;
        },
        [] { return false; });
    BOOST_TEST_CONTEXT("ties " << ties) {
      BOOST_TEST(out.exhausted);
      BOOST_TEST((seen == (ties ? std::set<bool>{false, true} : std::set<bool>{false})));
    }
  }
}

BOOST_AUTO_TEST_CASE(jitter_moves_a_timer_across_its_neighbours_deadline_and_never_earlier) {
  // 5 ns apart: without jitter the earlier sleeper always wakes first.
  for (std::uint64_t s = 1; s <= 50; ++s) {
    std::vector<int> order;
    BOOST_REQUIRE(run(timers(s, "random", false), [&](runtime& rt) { order = two_sleepers(rt, 5); }).ok());
    BOOST_TEST((order == std::vector<int>{0, 1}));
  }
  std::set<std::vector<int>> orders;
  std::set<std::int64_t> first_wakes;
  for (std::uint64_t s = 1; s <= 200; ++s) {
    std::vector<int> order;
    std::vector<std::int64_t> at;
    const run_result r = run(timers(s, "random", false, 10), [&](runtime& rt) { order = two_sleepers(rt, 5, &at); });
    BOOST_REQUIRE(r.ok());
    orders.insert(order);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::int64_t due = 100 + order[k] * 5;
      BOOST_TEST(at[k] >= due);       // never earlier than asked
      BOOST_TEST(at[k] <= due + 10);  // at most the bound later
      if (order[k] == 0) first_wakes.insert(at[k]);
    }
    // Replays, jitter and all.
    run_config again = timers(s, "replay", false, 10);
    again.options.decisions = r.decisions;
    std::vector<int> order_again;
    const run_result rr = run(again, [&](runtime& rt) { order_again = two_sleepers(rt, 5); });
    BOOST_TEST(rr.trace_hash == r.trace_hash);
    BOOST_TEST(order_again == order);
  }
  BOOST_TEST((orders == std::set<std::vector<int>>{{0, 1}, {1, 0}}));
  // Every lateness from 0 to 10 (a bound under 16 offers each ns).
  BOOST_TEST(first_wakes.size() == 11u);
}

BOOST_AUTO_TEST_CASE(a_large_jitter_offers_seventeen_spread_values) {
  std::set<std::int64_t> late;
  for (std::uint64_t s = 1; s <= 400; ++s) {
    std::vector<std::int64_t> at;
    std::vector<int> order;
    BOOST_REQUIRE(run(timers(s, "random", false, 1'000'000), [&](runtime& rt) { order = two_sleepers(rt, 0, &at); }).ok());
    for (std::size_t k = 0; k < order.size(); ++k) late.insert(at[k] - 100);
  }
  BOOST_TEST(late.size() == 17u);
  BOOST_TEST(*late.begin() == 0);
  BOOST_TEST(*late.rbegin() == 1'000'000);
  BOOST_TEST(late.count(62'500) == 1u);  // 1,000,000 / 16
}

BOOST_AUTO_TEST_CASE(fifo_takes_no_jitter) {
  std::vector<std::int64_t> at;
  BOOST_REQUIRE(run(timers(1, "fifo", true, 10), [&](runtime& rt) { (void)two_sleepers(rt, 5, &at); }).ok());
  BOOST_TEST((at == std::vector<std::int64_t>{100, 105}));
}

BOOST_AUTO_TEST_CASE(a_jittered_deadline_near_the_end_of_time_saturates) {
  std::int64_t woke = 0;
  run_config c = timers(3, "random", false, INT64_MAX);
  c.max_time_ns = INT64_MAX;
  const run_result r = run(c, [&](runtime& rt) {
    rt.sleep_until(INT64_MAX - 5);
    woke = rt.now();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(woke >= INT64_MAX - 5);
}
