// Goal: at least 1,000,000 joins (LOCKSTEP_STRESS_ITEMS) on one single-flight
// table from fibers on both pinned threads, and 64,000 waiters parked at once,
// with the properties checked on what happened: one leader per flight, every
// waiter that waited answered with its own flight's outcome, a flight's events
// in a legal order (started once; answered or abandoned once; retired once; no
// publication after a cancellation, no cancellation after publication began),
// and the table empty at the end.
//
// Clients join keys drawn from a small key space, so flights are shared across
// threads. A leader either does the work itself or hands its resolution to a
// worker fiber on a random core; some requests leave without waiting, so a
// flight whose every request left is cancelled and its worker refused. The
// table's observer and the clients append to their core's log.
#define BOOST_TEST_MODULE threads_stress_single_flight
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "engine/single_flight.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/sanitizer.hpp"
#include "engine/threads/tests/stress.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::runtime_config;
using lockstep::threads::testing::per_core_log;
using lockstep::threads::testing::stress_items;
using lockstep::threads::testing::xorshift;

namespace {

using flight_table = single_flight<runtime, std::uint64_t, std::uint64_t>;
constexpr std::uint64_t abandoned_value = 0;
/// What a flight's worker answers: derived from the flight, so a waiter can
/// tell its own flight's answer from any other.
std::uint64_t answer_of(std::uint64_t flight) { return flight * 2 + 1; }

struct event_rec {
  std::uint64_t flight;
  flight_event event;
};
struct join_rec {
  std::uint64_t flight;
  std::uint64_t got;  // the value wait() returned (abandoned_value if none)
  bool leader;
  bool waited;
};

/// Per flight, how often each event happened.
struct flight_tally {
  std::uint32_t n[6] = {0, 0, 0, 0, 0, 0};
  std::uint32_t leaders = 0;
  std::uint32_t& of(flight_event e) { return n[static_cast<int>(e)]; }
};

/// Waiters per key in the concurrent case: 64 (64,000 in all), or
/// LOCKSTEP_STRESS_WAITERS_PER_KEY. Under TSan the default is 32: TSan maps a
/// shadow stack per fiber, one mapping each, and vm.max_map_count (65,530
/// here) refuses the rest ("ThreadSanitizer failed to allocate noreserve ...
/// shadow stack"), which no runtime change can avoid.
std::uint64_t waiters_per_key() {
  if (const char* env = std::getenv("LOCKSTEP_STRESS_WAITERS_PER_KEY"); env != nullptr && *env != '\0') {
    return std::stoull(env);
  }
#if defined(LOCKSTEP_THREADS_TSAN)
  return 32;
#else
  return 64;
#endif
}

}  // namespace

BOOST_AUTO_TEST_CASE(single_flight_1m_joins_over_both_threads_one_leader_every_waiter_answered) {
  const std::uint64_t joins = stress_items();
  constexpr std::uint32_t clients_per_core = 32;
  constexpr std::uint64_t keys = 48;
  constexpr std::uint32_t clients = 2 * clients_per_core;
  runtime rt(2);
  per_core_log<event_rec> events(2, joins);
  per_core_log<join_rec> log(2, joins / 2 + 1024);
  std::uint64_t next_id = 0, left_in_table = 1, abandoned_total = 0;
  bool invariants_ok = false;
  rt.run([&] {
    flight_table table(rt, [&](const std::uint64_t&, std::uint64_t flight, flight_event e) {
      events.add(rt, event_rec{flight, e});
    });
    std::vector<runtime::task> ts;
    for (std::uint32_t c = 0; c < clients; ++c) {
      const std::uint64_t mine = joins / clients + (c < joins % clients ? 1 : 0);
      ts.push_back(rt.spawn_on(c % 2, "client", [&rt, &table, &log, c, mine] {
        xorshift rng(c + 1);
        std::vector<runtime::task> workers;
        for (std::uint64_t i = 0; i < mine; ++i) {
          const std::uint64_t key = rng.below(keys);
          flight_table::joined j = table.join(key);
          const std::uint64_t flight = j.work->id();
          if (j.leader) {
            const auto yields = static_cast<int>(rng.below(3));
            if (rng.below(8) == 0) {
              // Hand the work to a worker on either core; this request may then leave.
              workers.push_back(rt.spawn_on(static_cast<std::uint32_t>(rng.below(2)), "worker",
                                            [&rt, &table, key, work = j.work, yields] {
                                              flight_table::resolution res(table, key, work, abandoned_value, "");
                                              for (int y = 0; y < yields; ++y) rt.yield_now();
                                              if (work->begin_publishing()) res.answer(answer_of(work->id()));
                                            }));
              if (workers.size() >= 64) {
                for (auto& w : workers) w.join();
                workers.clear();
              }
            } else {
              // Lead inline: let others join while "working", then answer.
              flight_table::resolution res(table, key, j.work, abandoned_value, "");
              for (int y = 0; y < yields; ++y) rt.yield_now();
              if (j.work->begin_publishing()) res.answer(answer_of(flight));
            }
          }
          // One in eight requests leaves without waiting (its guard goes now).
          const bool waits = rng.below(8) != 0;
          std::uint64_t got = abandoned_value;
          if (waits) got = j.work->wait().value_or(abandoned_value);
          log.add(rt, join_rec{flight, got, j.leader, waits});
        }
        for (auto& w : workers) w.join();
      }));
    }
    for (auto& t : ts) t.join();
    left_in_table = table.in_flight();
    abandoned_total = table.abandoned_total();
    try {
      table.check_invariants();
      invariants_ok = true;
    } catch (const std::logic_error&) {
    }
    // Every flight id handed out so far; the next join would lead flight next_id + 1.
    auto probe = table.join(~std::uint64_t{0});
    next_id = probe.work->id() - 1;
  });

  std::vector<flight_tally> tally(next_id + 2);
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const event_rec& e : events.of(core)) tally[e.flight].of(e.event)++;
  }
  std::uint64_t wrong_answer = 0, unanswered = 0, total = 0, waited = 0, unknown_flight = 0;
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const join_rec& j : log.of(core)) {
      ++total;
      if (j.flight == 0 || j.flight > next_id) {
        ++unknown_flight;
        continue;
      }
      if (j.leader) ++tally[j.flight].leaders;
      if (!j.waited) continue;
      ++waited;
      if (j.got == abandoned_value) ++unanswered;
      else if (j.got != answer_of(j.flight)) ++wrong_answer;
    }
  }
  std::uint64_t bad_leaders = 0, bad_start = 0, bad_end = 0, bad_retire = 0, publish_after_cancel = 0,
                unpublished = 0, cancelled = 0, abandoned = 0;
  // The probe's own flight, next_id + 1: started, still in the table. (It was
  // once taken to be next_id, which left the last real flight unchecked: a
  // run whose last flight was abandoned then failed the count below.)
  if (tally[next_id + 1].of(flight_event::started) != 1) ++bad_start;
  for (std::uint64_t f = 1; f <= next_id; ++f) {
    flight_tally& t = tally[f];
    if (t.leaders != 1) ++bad_leaders;
    if (t.of(flight_event::started) != 1) ++bad_start;
    if (t.of(flight_event::answered) + t.of(flight_event::abandoned) != 1) ++bad_end;
    if (t.of(flight_event::retired) != 1) ++bad_retire;
    if (t.of(flight_event::cancelled) > 0 && (t.of(flight_event::publishing) > 0 || t.of(flight_event::answered) > 0))
      ++publish_after_cancel;
    if (t.of(flight_event::cancelled) == 0 && t.of(flight_event::publishing) != 1) ++unpublished;
    if (t.of(flight_event::cancelled) != 0) ++cancelled;
    if (t.of(flight_event::abandoned) != 0) ++abandoned;
  }
  BOOST_TEST(total == joins, "every join was logged");
  BOOST_TEST(unknown_flight == 0U);
  BOOST_TEST(bad_leaders == 0U, "exactly one leader per flight");
  BOOST_TEST(bad_start == 0U, "every flight started once");
  BOOST_TEST(unanswered == 0U, "every request that waited was answered");
  BOOST_TEST(wrong_answer == 0U, "with its own flight's answer");
  BOOST_TEST(bad_end == 0U, "each flight answered or abandoned exactly once");
  BOOST_TEST(bad_retire == 0U, "each flight retired exactly once");
  BOOST_TEST(publish_after_cancel == 0U, "no publication after a cancellation");
  BOOST_TEST(unpublished == 0U, "a flight nobody cancelled was published");
  BOOST_TEST(abandoned == cancelled, "only cancelled flights were abandoned");
  BOOST_TEST(abandoned_total == abandoned, "the table counted the same abandonments");
  BOOST_TEST(left_in_table == 0U, "the table is empty once every request is gone");
  BOOST_TEST(invariants_ok);
  BOOST_TEST_MESSAGE("flights " << next_id << ", waited " << waited << ", cancelled " << cancelled);
}

BOOST_AUTO_TEST_CASE(single_flight_64000_concurrent_waiters_all_answered) {
  // 1,000 keys x 64 waiters, spread over both threads, all parked on their
  // flight before any is answered (the peer's contended shape).
  constexpr std::uint64_t keys = 1000;
  const std::uint64_t per_key = waiters_per_key();
  const std::uint64_t total = keys * per_key;
  BOOST_TEST_MESSAGE(total << " concurrent waiters");
  runtime_config cfg;
  cfg.cores = 2;
  cfg.stack_bytes = 64 * 1024;
  runtime rt(cfg);
  per_core_log<join_rec> log(2, total / 2 + 1024);
  std::uint64_t joined_before_answer = 0, parked_before_answer = 0, answered = 0, left_in_table = 1;
  rt.run([&] {
    flight_table table(rt);
    std::vector<flight_table::joined> leaders;
    std::vector<flight_table::resolution> resolutions;
    leaders.reserve(keys);
    resolutions.reserve(keys);
    for (std::uint64_t key = 0; key < keys; ++key) {
      leaders.push_back(table.join(key));
      resolutions.emplace_back(table, key, leaders.back().work, abandoned_value, "");
    }
    runtime::atomic<std::uint64_t> joined(rt, 0), done(rt, 0);
    runtime::notify all_joined(rt), all_done(rt);
    std::vector<runtime::task> ts;
    ts.reserve(total);
    for (std::uint64_t key = 0; key < keys; ++key) {
      for (std::uint32_t i = 0; i < per_key; ++i) {
        ts.push_back(rt.spawn_on(i % 2, "waiter", [&, key] {
          flight_table::joined j = table.join(key);
          if (joined.fetch_add(1) + 1 == total) all_joined.notify_one();
          const std::uint64_t got = j.work->wait().value_or(abandoned_value);
          log.add(rt, join_rec{key, got, j.leader, true});
          if (done.fetch_add(1) + 1 == total) all_done.notify_one();
        }));
      }
    }
    all_joined.notified();
    joined_before_answer = joined.load();
    // Every waiter is in its flight; wait until each is really parked in wait().
    for (auto& t : ts) {
      while (!t.is_waiting() && !t.finished()) rt.yield_now();
    }
    for (auto& t : ts) parked_before_answer += t.is_waiting() ? 1 : 0;
    for (std::uint64_t key = 0; key < keys; ++key) {
      if (leaders[key].work->begin_publishing()) resolutions[key].answer(key + 1);
    }
    resolutions.clear();
    leaders.clear();
    all_done.notified();
    answered = done.load();
    for (auto& t : ts) t.join();
    left_in_table = table.in_flight();
  });
  std::uint64_t wrong = 0, leaders_seen = 0;
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const join_rec& j : log.of(core)) {
      if (j.got != j.flight + 1) ++wrong;  // here `flight` holds the key
      if (j.leader) ++leaders_seen;
    }
  }
  BOOST_TEST(joined_before_answer == total);
  BOOST_TEST(parked_before_answer == total, "every waiter (64,000 by default) was parked at once");
  BOOST_TEST(answered == total);
  BOOST_TEST(log.total() == total);
  BOOST_TEST(wrong == 0U, "every waiter got its key's answer");
  BOOST_TEST(leaders_seen == 0U, "the driver led every key: no waiter led");
  BOOST_TEST(left_in_table == 0U);
}
