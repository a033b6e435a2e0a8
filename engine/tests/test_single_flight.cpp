// Goal: the single-flight table does what probation's SingleFlight does — its
// two seed tests reproduced under the simulator (a waiter that would hang is a
// deadlock or time-budget failure of the run, so every run asserts r.ok()),
// then each piece on its own: waiter counting, identity-checked removal, the
// cancel/publish exclusivity, the queries, and every way a worker can end.
#define BOOST_TEST_MODULE engine_single_flight
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep;
using lockstep::sim::runtime;
using lockstep::sim::task;
using lockstep::sim::testing::config;

namespace {

using flight = single_flight<runtime, std::uint8_t, std::string>;
using ev = flight_event;

/// What a hung waiter is reported as: the seed's `timeout(BOUND, ...)` message.
constexpr const char* why_hung =
    "the waiter never resolved: a resolution must publish with send_replace, which stores even "
    "when nobody has subscribed yet";

/// Two cores, a virtual-time budget of one virtual minute: a hang fails the run.
sim::run_config cfg(std::uint64_t seed, const std::string& strategy = "random") {
  sim::run_config c = config(seed, strategy, 2);
  c.max_time_ns = 60'000'000'000;
  c.trace = sim::trace_mode::off;
  return c;
}

/// Records every flight_event as (flight, event).
struct event_log {
  std::vector<std::pair<std::uint64_t, ev>> seen;
  flight::observer observer() {
    return [this](const std::uint8_t&, std::uint64_t id, ev e) { seen.emplace_back(id, e); };
  }
  [[nodiscard]] std::vector<ev> of(std::uint64_t id) const {
    std::vector<ev> out;
    for (const auto& [f, e] : seen)
      if (f == id) out.push_back(e);
    return out;
  }
};

struct worker_panic : std::runtime_error {
  worker_panic() : std::runtime_error("worker panicked") {}
};

}  // namespace

// --- the seed's two tests ------------------------------------------------------

BOOST_AUTO_TEST_CASE(an_answer_reaches_a_waiter_that_arrived_before_it_and_one_that_arrived_after) {
  for (const char* strategy : {"random", "pct"}) {
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
      BOOST_TEST_CONTEXT("seed " << seed << " strategy " << strategy) {
        std::optional<std::string> early_got, late_got;
        bool leader = false;
        auto r = sim::run(cfg(seed, strategy), [&](runtime& rt) {
          flight f(rt);
          auto j = f.join(1);
          leader = j.leader;
          auto work = j.work;
          task early = rt.spawn_on(1, "early", [&early_got, work] { early_got = work->wait(); });
          flight::resolution res(f, 1, j.work, "abandoned", "1");
          res.answer("done");
          early.join();
          late_got = j.work->wait();
        });
        BOOST_TEST(r.ok(), why_hung << ": " << (r.ok() ? "" : r.failed->message));
        BOOST_TEST(leader);
        BOOST_TEST(early_got.value_or("<none>") == "done");
        BOOST_TEST(late_got.value_or("<none>") == "done",
                   "a waiter that subscribes after the answer reads the answer that is there");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_abandoned_resolution_answers_its_waiters_and_retires_the_slot) {
  for (const char* strategy : {"random", "pct"}) {
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
      BOOST_TEST_CONTEXT("seed " << seed << " strategy " << strategy) {
        std::optional<std::string> got;
        bool next_leads = false;
        std::uint64_t abandoned = 0;
        auto r = sim::run(cfg(seed, strategy), [&](runtime& rt) {
          flight f(rt);
          std::optional<flight::joined> j(f.join(1));
          { flight::resolution res(f, 1, j->work, "abandoned", "1"); }
          got = j->work->wait();
          j.reset();  // drops the waiter
          auto again = f.join(1);
          next_leads = again.leader;
          abandoned = f.abandoned_total();
        });
        BOOST_TEST(r.ok(), why_hung << ": " << (r.ok() ? "" : r.failed->message));
        BOOST_TEST(got.value_or("<none>") == "abandoned");
        BOOST_TEST(next_leads, "and the next request starts work of its own");
        BOOST_TEST(abandoned == 1u);
      }
    }
  }
}

// --- the pieces -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(waiters_are_counted_and_the_last_one_out_cancels_and_removes) {
  event_log log;
  std::vector<std::size_t> counts;
  std::vector<bool> leaders;
  bool woke = false;
  auto r = sim::run(cfg(1), [&](runtime& rt) {
    flight f(rt, log.observer());
    counts.push_back(f.waiting_on(7));
    std::vector<flight::joined> js;
    for (int i = 0; i < 3; ++i) {
      js.push_back(f.join(7));
      leaders.push_back(js.back().leader);
      counts.push_back(f.waiting_on(7));
    }
    auto work = js.front().work;
    task worker = rt.spawn("worker", [&woke, work] {
      work->cancelled();
      woke = true;
    });
    while (!js.empty()) {
      js.pop_back();
      counts.push_back(f.waiting_on(7));
    }
    worker.join();
    counts.push_back(f.in_flight());
    f.check_invariants();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(leaders == (std::vector<bool>{true, false, false}));
  BOOST_TEST(counts == (std::vector<std::size_t>{0, 1, 2, 3, 2, 1, 0, 0}));
  BOOST_TEST(woke, "the last waiter's cancellation wakes a worker parked in cancelled()");
  BOOST_TEST((log.of(1) == std::vector<ev>{ev::started, ev::cancelled}));
}

BOOST_AUTO_TEST_CASE(a_moved_guard_counts_once) {
  std::vector<std::size_t> counts;
  auto r = sim::run(cfg(2), [&](runtime& rt) {
    flight f(rt);
    std::optional<flight::joined> a(f.join(3));
    auto b = f.join(3);
    {
      flight::waiter moved(std::move(b.guard));
      counts.push_back(f.waiting_on(3));
    }
    counts.push_back(f.waiting_on(3));
    a.reset();
    counts.push_back(f.waiting_on(3));
    counts.push_back(f.in_flight());
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(counts == (std::vector<std::size_t>{2, 1, 0, 0}));
}

BOOST_AUTO_TEST_CASE(a_stale_resolution_does_not_retire_a_newer_flight) {
  // Flight 1 is cancelled by its last waiter; flight 2 starts for the same key;
  // then flight 1's worker ends. Its retirement must leave flight 2 in place.
  event_log log;
  std::size_t waiting_after = 0;
  bool third_leads = true;
  std::uint64_t third_flight = 0;
  auto r = sim::run(cfg(3), [&](runtime& rt) {
    flight f(rt, log.observer());
    std::optional<flight::joined> first(f.join(5));
    std::optional<flight::resolution> stale;
    stale.emplace(f, 5, first->work, "abandoned", "5");
    first.reset();
    auto second = f.join(5);
    BOOST_TEST(second.leader);
    stale.reset();
    waiting_after = f.waiting_on(5);
    auto third = f.join(5);
    third_leads = third.leader;
    third_flight = third.work->id();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(waiting_after == 1u);
  BOOST_TEST(!third_leads, "the third request joins flight 2, which is still current");
  BOOST_TEST(third_flight == 2u);
  BOOST_TEST((log.of(1) == std::vector<ev>{ev::started, ev::cancelled, ev::abandoned, ev::retired}));
}

BOOST_AUTO_TEST_CASE(cancel_and_publish_exclude_each_other) {
  std::vector<bool> outcomes;
  auto r = sim::run(cfg(4), [&](runtime& rt) {
    flight::slot a(rt, 1, 1, nullptr);
    outcomes.push_back(a.begin_publishing());  // true
    outcomes.push_back(a.begin_cancel());      // false: publication began
    outcomes.push_back(a.begin_publishing());  // false: only once
    flight::slot b(rt, 2, 2, nullptr);
    outcomes.push_back(b.begin_cancel());      // true
    outcomes.push_back(b.begin_publishing());  // false: cancelled
    outcomes.push_back(b.begin_cancel());      // false: only once
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(outcomes == (std::vector<bool>{true, false, false, true, false, false}));
}

BOOST_AUTO_TEST_CASE(the_last_waiter_leaving_after_publication_began_does_not_cancel) {
  event_log log;
  std::vector<std::size_t> waiting;
  std::vector<bool> publishing;
  bool next_leads = false;
  auto r = sim::run(cfg(5), [&](runtime& rt) {
    flight f(rt, log.observer());
    publishing.push_back(f.publishing(9));  // nothing in flight
    std::optional<flight::joined> j(f.join(9));
    auto work = j->work;
    flight::resolution res(f, 9, work, "abandoned", "9");
    publishing.push_back(f.publishing(9));
    BOOST_TEST(work->begin_publishing());
    publishing.push_back(f.publishing(9));
    j.reset();
    // Still in the table: a request arriving now joins and reads the answer.
    waiting.push_back(f.waiting_on(9));
    f.check_invariants();
    auto late = f.join(9);
    BOOST_TEST(!late.leader);
    waiting.push_back(f.waiting_on(9));
    res.answer("done");
    BOOST_TEST(late.work->wait().value_or("<none>") == "done");
    {
      flight::resolution done(std::move(res));
    }
    publishing.push_back(f.publishing(9));
    waiting.push_back(f.waiting_on(9));
    next_leads = f.join(9).leader;
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(publishing == (std::vector<bool>{false, false, true, false}));
  BOOST_TEST(waiting == (std::vector<std::size_t>{0, 1, 0}));
  BOOST_TEST(next_leads);
  BOOST_TEST((log.of(1) == std::vector<ev>{ev::started, ev::publishing, ev::answered, ev::retired}));
}

BOOST_AUTO_TEST_CASE(check_invariants_names_a_cancelled_slot_left_in_the_table) {
  std::string what;
  auto r = sim::run(cfg(6), [&](runtime& rt) {
    flight f(rt);
    auto j = f.join(1);
    f.check_invariants();
    j.work->begin_cancel();  // not through the last waiter: the table still holds it
    try {
      f.check_invariants();
    } catch (const std::logic_error& e) {
      what = e.what();
    }
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(what == "a cancelled slot is still in the table");
}

// --- every way a worker ends ------------------------------------------------------

namespace {

enum class ending { answers, throws, cancelled_by_runtime, cancelled_before_it_ran };

/// A leader starts a worker with the given ending; another request stays.
struct worker_run {
  std::optional<std::string> leader_got, other_got;
  bool next_leads = false;
  bool panic_seen = false;
  std::uint64_t abandoned = 0;
  std::size_t in_flight_after = 99;
  sim::run_result r;
};

worker_run run_worker(ending how, std::uint64_t seed) {
  worker_run out;
  out.r = sim::run(cfg(seed), [&](runtime& rt) {
    flight f(rt);
    std::optional<flight::joined> j(f.join(1));
    flight::joined second = f.join(1);  // joins before the worker can end, so it shares flight 1
    // The resolution is made before the spawn and moved into the body, so even
    // a worker cancelled before it ever ran still answers.
    flight::resolution res(f, 1, j->work, "abandoned", "1");
    auto work = j->work;
    task worker = rt.spawn_on(1, "worker", [&rt, &out, how, work, res = std::move(res)]() mutable {
      try {
        rt.sleep_for(1'000);
        if (how == ending::throws) throw worker_panic();
        if (work->begin_publishing()) res.answer("done");
      } catch (const fiber_cancelled&) {
        throw;
      } catch (const worker_panic&) {
        out.panic_seen = true;  // the panic reached its task boundary; res answered on the way
      }
    });
    if (how == ending::cancelled_before_it_ran || how == ending::cancelled_by_runtime) {
      if (how == ending::cancelled_by_runtime) rt.sleep_for(500);
      worker.cancel();
    }
    task other_request = rt.spawn_on(1, "other", [&out, mine = std::move(second)] {
      out.other_got = mine.work->wait();
    });
    out.leader_got = j->work->wait();
    other_request.join();
    worker.join();
    j.reset();
    out.in_flight_after = f.in_flight();
    out.next_leads = f.join(1).leader;
    out.abandoned = f.abandoned_total();
  });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_worker_ending_answers_the_waiters_and_leaves_the_key_servable) {
  const std::pair<ending, const char*> cases[] = {
      {ending::answers, "done"},
      {ending::throws, "abandoned"},
      {ending::cancelled_by_runtime, "abandoned"},
      {ending::cancelled_before_it_ran, "abandoned"},
  };
  for (const auto& [how, expected] : cases) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
      BOOST_TEST_CONTEXT("ending " << static_cast<int>(how) << " seed " << seed) {
        const worker_run w = run_worker(how, seed);
        BOOST_TEST(w.r.ok(), (w.r.ok() ? "" : w.r.failed->message));
        BOOST_TEST(w.leader_got.value_or("<none>") == expected);
        BOOST_TEST(w.other_got.value_or("<none>") == expected);
        BOOST_TEST(w.panic_seen == (how == ending::throws));
        BOOST_TEST(w.abandoned == (how == ending::answers ? 0u : 1u));
        BOOST_TEST(w.in_flight_after == 0u);
        BOOST_TEST(w.next_leads);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_worker_that_can_stop_early_stops_when_every_waiter_left) {
  event_log log;
  bool stopped = false;
  bool next_leads = false;
  auto r = sim::run(cfg(7), [&](runtime& rt) {
    flight f(rt, log.observer());
    std::optional<flight::joined> j(f.join(2));
    flight::resolution res(f, 2, j->work, "abandoned", "2");
    auto work = j->work;
    task worker = rt.spawn_on(1, "worker", [&stopped, work, res = std::move(res)] {
      work->cancelled();  // the work itself would run here, raced against this
      stopped = true;
      BOOST_TEST(!work->begin_publishing(), "nothing to publish for once cancelled");
    });
    rt.sleep_for(100);
    j.reset();  // the only waiter leaves
    worker.join();
    next_leads = f.join(2).leader;
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(stopped);
  BOOST_TEST(next_leads);
  BOOST_TEST((log.of(1) == std::vector<ev>{ev::started, ev::cancelled, ev::abandoned, ev::retired}));
}

// --- a simulator bug found on the way (regression) --------------------------------

// When the main fiber returns, the executor cancels every live fiber. A fiber
// preempted mid-body then resumes and leaves its scope normally; a destructor
// on that path that takes a contended sim mutex (as ~waiter and ~resolution
// take the table lock) used to get fiber_cancelled thrown out of mutex::lock
// during teardown, inside a noexcept destructor: the process terminated.
// mutex::lock is not an await point and now never throws, teardown included.
BOOST_AUTO_TEST_CASE(sim_mutex_lock_in_a_destructor_during_teardown_must_not_throw) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      auto r = sim::run(cfg(seed), [&](runtime& rt) {
        auto mu = std::make_shared<sim::mutex>(rt);
        auto counter = std::make_shared<sim::atomic<int>>(rt, 0);
        struct locks_on_exit {
          std::shared_ptr<sim::mutex> m;
          ~locks_on_exit() { std::lock_guard g(*m); }
        };
        rt.spawn_on(1, "holder", [mu, counter] {
          std::lock_guard g(*mu);
          for (int i = 0; i < 50; ++i) counter->fetch_add(1);
        });
        rt.spawn_on(0, "dropper", [mu, counter] {
          locks_on_exit l{mu};
          for (int i = 0; i < 5; ++i) counter->fetch_add(1);
        });
        for (int i = 0; i < 3; ++i) rt.yield_now();  // main returns with both mid-body
      });
      BOOST_TEST(r.ok());
    }
  }
}
