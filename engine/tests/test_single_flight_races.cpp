// Goal: every race the single-flight seed's comments name, shown under the
// simulator on 2 cores over 1,000 "random" and 1,000 "pct" seeds each — join
// vs the last waiter leaving, cancel vs publish, a late subscriber, a
// panicking worker, a worker cancelled by the runtime, a worker that stops
// early — with the oracles checked on every seed. Canaries (deliberately
// broken tables, below) prove the same sweep finds each bug class.
#define BOOST_TEST_MODULE engine_single_flight_races
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
#include "sim/tests/sim_test_util.hpp"
#include "tools/scenario/flight_canaries.hpp"

using namespace lockstep;
using lockstep::sim::runtime;
using lockstep::sim::task;

namespace {

using key_type = std::uint8_t;
using value_type = std::int64_t;
constexpr key_type the_key = 1;
constexpr value_type abandoned_value = -1;
value_type answer_for(std::uint64_t flight) { return 1000 + static_cast<value_type>(flight); }

// The canaries' broken tables, the flight stories and the ordering oracles
// live in tools/scenario/flight_canaries.hpp, shared with the scenario flights driver.

// --- the race programs ------------------------------------------------------------

enum class request_kind : std::uint8_t { stays, leaves_early, cancelled_while_waiting };
enum class worker_kind : std::uint8_t { answers, throws, cancelled_by_runtime, stops_on_cancel };

struct scenario {
  const char* name;
  std::vector<request_kind> requests;
  worker_kind worker;
  std::uint32_t worker_yields_max;  // a worker yields 0..max times before it publishes
};

struct worker_panic : std::runtime_error {
  worker_panic() : std::runtime_error("worker panicked") {}
};

struct request_record {
  bool joined = false;
  bool leader = false;
  std::uint64_t flight = 0;
  bool returned = false;                // wait() returned
  std::optional<value_type> got;        // what it returned
  bool late = false;                    // the answer was stored between its join and its wait()
};

/// Everything one run records; plain fields are safe: the simulator is one OS thread.
struct world {
  models::probation::flight_log<key_type> flights;
  std::vector<request_record> requests;
  std::vector<task> workers, watchdogs;
  std::vector<std::string> violations;
  int panics = 0;
  std::uint64_t raced_flights = 0;  // flights before the final probe
  bool final_leader = false;
  std::size_t final_in_flight = 99;

  void violate(std::string what) { violations.push_back(std::move(what)); }
  /// The shared oracles' form: every violation is kept, named by its oracle.
  void violate(const char* oracle, std::string what) { violate(std::move(what) + " [" + oracle + "]"); }

  /// The ordering oracles, checked at the instant each transition happens.
  void observe(std::uint64_t id, flight_event e) {
    models::probation::observe(flights, the_key, id, e, [this](const char* oracle, std::string what) {
      violate(oracle, std::move(what));
    });
  }
};

template <class Flight>
void worker_body(runtime& rt, const scenario& sc, std::shared_ptr<typename Flight::slot> work,
                 typename Flight::resolution res) {
  const std::uint32_t yields = static_cast<std::uint32_t>(rt.random() % (sc.worker_yields_max + 1));
  for (std::uint32_t i = 0; i < yields; ++i) rt.yield_now();
  if (sc.worker == worker_kind::throws) throw worker_panic();
  if (!work->begin_publishing()) return;  // every waiter left: res answers "abandoned" to nobody
  rt.yield_now();  // a waiter leaving now must find the publication begun and let it finish
  res.answer(answer_for(work->id()));
}

/// The leader's duty: start the flight's worker (and, for a worker that can
/// stop early, the fiber that cancels it when the slot is cancelled).
template <class Flight>
void start_worker(runtime& rt, world& w, const scenario& sc, Flight& f, std::shared_ptr<typename Flight::slot> work) {
  // Made before the spawn and moved in: a worker dropped before it ran still answers.
  typename Flight::resolution res(f, the_key, work, abandoned_value, "k1");
  const std::uint32_t core = static_cast<std::uint32_t>(rt.random() % 2);
  task t = rt.spawn_on(core, "worker", [&rt, &w, &sc, work, res = std::move(res)]() mutable {
    try {
      worker_body<Flight>(rt, sc, work, std::move(res));
    } catch (const fiber_cancelled&) {
      throw;
    } catch (const worker_panic&) {
      ++w.panics;  // reached its task boundary after the resolution answered on the way out
    }
  });
  w.workers.push_back(t);
  if (sc.worker == worker_kind::stops_on_cancel) {
    w.watchdogs.push_back(rt.spawn_on(1 - core, "watchdog", [work, t]() mutable {
      work->cancelled();
      t.cancel();
    }));
  }
}

template <class Flight>
void request_body(runtime& rt, world& w, const scenario& sc, Flight& f, std::size_t i) {
  for (std::uint64_t n = rt.random() % 3; n > 0; --n) rt.yield_now();
  auto j = f.join(the_key);
  request_record& rec = w.requests[i];
  rec.joined = true;
  rec.leader = j.leader;
  rec.flight = j.work->id();
  const bool answered_at_join = w.flights[rec.flight].answered > 0;
  // While it was counted, its flight cannot have been cancelled.
  models::probation::still_counted<world> check_on_leaving{w, rec.flight, i};
  if (j.leader) start_worker<Flight>(rt, w, sc, f, j.work);
  if (sc.requests[i] == request_kind::leaves_early) {
    for (std::uint64_t n = rt.random() % 3; n > 0; --n) rt.yield_now();
    return;  // the guard leaves with it
  }
  // A request may do other things between joining and waiting; an answer stored
  // meanwhile must still reach it. Joined before it, waiting after it: late.
  for (std::uint64_t n = rt.random() % 3; n > 0; --n) rt.yield_now();
  rec.late = w.flights[rec.flight].answered > 0 && !answered_at_join;
  std::optional<value_type> got = j.work->wait();
  w.requests[i].returned = true;
  w.requests[i].got = got;
}

/// The end-of-run oracles over what the run recorded.
void check_outcome(world& w, const scenario& sc) {
  for (const auto& [id, s] : w.flights) {
    const std::string f = "flight " + std::to_string(id) + ": ";
    if (s.started != 1) w.violate(f + "started " + std::to_string(s.started) + " times");
    if (s.retired != 1) w.violate(f + "retired " + std::to_string(s.retired) + " times");
    if (s.cancelled && s.publishing) w.violate(f + "both cancelled and published");
    int leaders = 0;
    for (const request_record& r : w.requests) leaders += r.joined && r.leader && r.flight == id;
    if (leaders != 1) w.violate(f + std::to_string(leaders) + " leaders");
  }
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const request_record& r = w.requests[i];
    const std::string who = "request " + std::to_string(i) + " (flight " + std::to_string(r.flight) + "): ";
    if (sc.requests[i] == request_kind::stays && !r.returned) w.violate(who + "stayed but was never answered");
    if (!r.returned) continue;
    if (!r.got) {
      w.violate(who + "wait() returned no value");
      continue;
    }
    const auto& s = w.flights[r.flight];
    if (*r.got == answer_for(r.flight)) {
      if (!s.answered) w.violate(who + "read an answer its flight never gave");
    } else if (*r.got == abandoned_value) {
      const bool may_abandon = sc.worker == worker_kind::throws || sc.worker == worker_kind::cancelled_by_runtime;
      if (!s.abandoned) w.violate(who + "read 'abandoned' from a flight that was not");
      if (!may_abandon) w.violate(who + "was told 'abandoned' though its worker always answers");
    } else {
      w.violate(who + "read a foreign value " + std::to_string(*r.got));
    }
    if (sc.worker == worker_kind::throws && *r.got != abandoned_value) w.violate(who + "a panicking worker answered");
  }
}

template <class Flight>
sim::run_result run_scenario(const scenario& sc, const sim::run_config& cfg, world& w) {
  w.requests.assign(sc.requests.size(), request_record{});
  return sim::run(cfg, [&](runtime& rt) {
    Flight f(rt, [&w](const key_type&, std::uint64_t id, flight_event e) { w.observe(id, e); });
    std::vector<task> requests;
    for (std::size_t i = 0; i < sc.requests.size(); ++i)
      requests.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % 2), "request",
                                     [&rt, &w, &sc, &f, i] { request_body<Flight>(rt, w, sc, f, i); }));
    bool done = false;
    task monitor = rt.spawn_on(1, "monitor", [&] {
      for (int n = 0; n < 40 && !done; ++n) {
        if (f.waiting_on(the_key) > sc.requests.size()) w.violate("waiting_on underflowed");
        try {
          f.check_invariants();
        } catch (const std::logic_error& e) {
          w.violate(std::string("invariant: ") + e.what());
        }
        rt.yield_now();
      }
    });
    // The chaos: cancel the requests meant to leave while waiting, and (for
    // that scenario) whichever workers have started, at seeded points.
    for (std::size_t i = 0; i < sc.requests.size(); ++i) {
      if (sc.requests[i] != request_kind::cancelled_while_waiting) continue;
      for (std::uint64_t n = rt.random() % 5; n > 0; --n) rt.yield_now();
      requests[i].cancel();
    }
    if (sc.worker == worker_kind::cancelled_by_runtime) {
      for (int n = 0; n < 10 && w.workers.empty(); ++n) rt.yield_now();
      for (std::uint64_t n = rt.random() % 4; n > 0; --n) rt.yield_now();
      for (task& t : w.workers) t.cancel();
    }
    for (task& t : requests) t.join();
    for (std::size_t i = 0; i < w.workers.size(); ++i) w.workers[i].join();
    for (task& t : w.watchdogs) {
      t.cancel();
      t.join();
    }
    done = true;
    monitor.join();
    check_outcome(w, sc);
    // Servable afterwards: the table is empty and a fresh join leads.
    w.raced_flights = w.flights.size();
    w.final_in_flight = f.in_flight();
    auto fresh = f.join(the_key);
    w.final_leader = fresh.leader;
    if (f.waiting_on(the_key) != 1) w.violate("a fresh join is not counted once");
  });
}

const std::vector<scenario>& scenarios() {
  using rk = request_kind;
  static const std::vector<scenario> all = {
      // Leavers may be the last waiter exactly while a stayer joins.
      {"join_vs_last_waiter_leaving", {rk::leaves_early, rk::stays, rk::leaves_early, rk::stays}, worker_kind::answers, 3},
      // Everyone may leave exactly while the worker begins publishing.
      {"cancel_vs_publish", {rk::leaves_early, rk::cancelled_while_waiting, rk::cancelled_while_waiting, rk::stays}, worker_kind::answers, 2},
      // The worker answers at once, before joined requests have subscribed.
      {"late_subscriber", {rk::stays, rk::stays, rk::stays}, worker_kind::answers, 0},
      {"panicking_worker", {rk::stays, rk::leaves_early, rk::stays}, worker_kind::throws, 3},
      {"worker_cancelled_by_runtime", {rk::stays, rk::cancelled_while_waiting, rk::stays}, worker_kind::cancelled_by_runtime, 3},
      {"worker_stops_early_on_cancelled", {rk::leaves_early, rk::cancelled_while_waiting, rk::stays, rk::leaves_early}, worker_kind::stops_on_cancel, 3},
  };
  return all;
}

constexpr std::uint64_t seeds_per_strategy = 1000;

sim::run_config cfg(std::uint64_t seed, const std::string& strategy) {
  sim::run_config c = lockstep::sim::testing::config(seed, strategy, 2);
  c.trace = sim::trace_mode::off;
  c.max_steps = 200'000;
  c.max_time_ns = 1'000'000'000;
  c.options.pct_steps = 300;  // about one run's length, so change points land inside it
  return c;
}

/// Which interleavings a run actually produced: a sweep asserts its race happened.
void tally(const world& w, std::map<std::string, int>& seen) {
  bool cancelled_before = false;
  for (const auto& [id, s] : w.flights) {
    if (id > w.raced_flights) break;  // the final servability probe is not part of the race
    if (s.cancelled) ++seen["a flight was cancelled"];
    if (s.cancelled && s.abandoned) ++seen["the worker found its flight cancelled"];
    if (cancelled_before) ++seen["a flight started after a cancellation"];
    cancelled_before = cancelled_before || s.cancelled;
    bool read = false;
    for (const request_record& r : w.requests) read = read || (r.returned && r.flight == id);
    if (s.publishing && !read) ++seen["publication went on after every waiter left"];
  }
  for (const request_record& r : w.requests) {
    if (r.returned && r.got == abandoned_value) ++seen["a waiter read 'abandoned'"];
    if (r.returned && r.got && *r.got > 0) ++seen["a waiter read the answer"];
    if (r.returned && r.late) ++seen["a late subscriber read the answer"];
  }
  if (w.panics > 0) ++seen["a worker panicked"];
}

/// Every failure of one run, or empty.
template <class Flight>
std::vector<std::string> failures_of(const scenario& sc, const sim::run_config& c,
                                     std::map<std::string, int>* seen = nullptr, std::uint64_t* steps = nullptr) {
  world w;
  const sim::run_result r = run_scenario<Flight>(sc, c, w);
  if (seen != nullptr) tally(w, *seen);
  if (steps != nullptr) *steps += r.steps;
  std::vector<std::string> out = w.violations;
  if (!r.ok()) out.insert(out.begin(), "run failed: " + std::string(sim::to_string(r.failed->kind)) + ": " + r.failed->message);
  if (r.ok() && w.final_in_flight != 0) out.push_back("the table is not empty after everything");
  if (r.ok() && !w.final_leader) out.push_back("the key is not servable: a fresh join did not lead");
  return out;
}

std::string joined_lines(const std::vector<std::string>& v) {
  std::ostringstream os;
  for (const auto& s : v) os << "\n  " << s;
  return os.str();
}

using real_flight = single_flight<runtime, key_type, value_type>;

/// Runs the scenario over every seed of both strategies, checks every oracle on
/// each, and checks that each interleaving the scenario exists for happened.
void sweep(const scenario& sc, const std::vector<std::string>& must_see) {
  for (const char* strategy : {"random", "pct"}) {
    std::map<std::string, int> seen;
    std::uint64_t steps = 0;
    for (std::uint64_t seed = 0; seed < seeds_per_strategy; ++seed) {
      BOOST_TEST_CONTEXT("scenario " << sc.name << " seed " << seed << " strategy " << strategy) {
        const auto failures = failures_of<real_flight>(sc, cfg(seed, strategy), &seen, &steps);
        BOOST_TEST(failures.empty(), joined_lines(failures));
      }
    }
    std::ostringstream os;
    for (const auto& [what, n] : seen) os << "\n  " << what << ": " << n;
    BOOST_TEST_MESSAGE(sc.name << " / " << strategy << ": " << seeds_per_strategy << " seeds, "
                               << steps / seeds_per_strategy << " steps per run" << os.str());
    for (const std::string& what : must_see)
      BOOST_TEST(seen[what] > 0, sc.name << " / " << strategy << " never produced: " << what);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(join_vs_the_last_waiter_leaving) {
  sweep(scenarios()[0], {"a flight was cancelled", "a flight started after a cancellation", "a waiter read the answer"});
}
BOOST_AUTO_TEST_CASE(cancel_vs_publish) {
  sweep(scenarios()[1], {"the worker found its flight cancelled", "publication went on after every waiter left",
                         "a waiter read the answer"});
}
BOOST_AUTO_TEST_CASE(a_late_subscriber_still_reads_the_answer) {
  // The canary below hangs exactly when this happens with a `send`.
  sweep(scenarios()[2], {"a waiter read the answer", "a late subscriber read the answer"});
}
BOOST_AUTO_TEST_CASE(a_panicking_worker_answers_abandoned_and_the_key_stays_servable) {
  sweep(scenarios()[3], {"a worker panicked", "a waiter read 'abandoned'"});
}
BOOST_AUTO_TEST_CASE(a_worker_cancelled_by_the_runtime_still_answers) {
  sweep(scenarios()[4], {"a waiter read 'abandoned'", "a waiter read the answer"});
}
BOOST_AUTO_TEST_CASE(a_worker_stops_early_when_every_waiter_left) {
  sweep(scenarios()[5], {"the worker found its flight cancelled", "a waiter read the answer"});
}

BOOST_AUTO_TEST_CASE(a_race_replays_byte_for_byte) {
  for (const scenario& sc : scenarios()) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      BOOST_TEST_CONTEXT("scenario " << sc.name << " seed " << seed) {
        sim::run_config c = cfg(seed, "pct");
        c.trace = sim::trace_mode::hash;
        world a, b;
        const auto ra = run_scenario<real_flight>(sc, c, a), rb = run_scenario<real_flight>(sc, c, b);
        BOOST_TEST(ra.trace_hash == rb.trace_hash);
        BOOST_TEST(ra.decisions == rb.decisions);
        BOOST_TEST(a.flights.size() == b.flights.size());
      }
    }
  }
}

// --- the canaries: the sweep must catch each broken table ---------------------

namespace {

/// What the full sweep found against a broken table.
struct canary_findings {
  int failing_seeds = 0;
  std::string first;          // the first failing seed and its failures
  bool expected_seen = false;  // some failure named the expected oracle
};

/// The real table with `bug` planted in it (engine/plant.hpp).
canary_findings sweep_broken(plant::bug bug, const scenario& sc, const std::string& expected) {
  const plant::scope planted(bug);
  canary_findings out;
  for (const char* strategy : {"random", "pct"}) {
    for (std::uint64_t seed = 0; seed < seeds_per_strategy; ++seed) {
      const auto failures = failures_of<real_flight>(sc, cfg(seed, strategy));
      if (failures.empty()) continue;
      if (out.failing_seeds++ == 0) out.first = std::string(strategy) + " seed " + std::to_string(seed) + ":" + joined_lines(failures);
      for (const auto& f : failures) out.expected_seen = out.expected_seen || f.find(expected) != std::string::npos;
    }
  }
  BOOST_TEST_MESSAGE("canary on " << sc.name << ": " << out.failing_seeds << " of " << 2 * seeds_per_strategy
                                  << " seeds fail; first " << out.first);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(canary_a_send_that_skips_without_subscribers_hangs_a_late_subscriber) {
  const auto found = sweep_broken(plant::bug::flights_send_skips_without_subscribers, scenarios()[2], "deadlock");
  BOOST_TEST(found.failing_seeds > 0, "the sweep missed a publication lost for want of subscribers");
  BOOST_TEST(found.expected_seen, "and reported it as a hung waiter");
}

BOOST_AUTO_TEST_CASE(canary_a_decrement_outside_the_lock_lets_a_request_join_a_cancelled_flight) {
  const auto found = sweep_broken(plant::bug::flights_decrement_outside_lock, scenarios()[0], "cancelled while it still counted");
  BOOST_TEST(found.failing_seeds > 0, "the sweep missed a join between the last waiter leaving and its removal");
  BOOST_TEST(found.expected_seen, "and reported a flight cancelled under a counted waiter");
}

BOOST_AUTO_TEST_CASE(canary_a_removal_without_identity_check_retires_a_newer_flight) {
  const auto found = sweep_broken(plant::bug::flights_removal_without_identity_check, scenarios()[1], "still held the key");
  BOOST_TEST(found.failing_seeds > 0, "the sweep missed a stale worker removing a newer flight");
  BOOST_TEST(found.expected_seen, "and reported two flights holding the key");
}
