// tools/scenario/flight_parts.hpp — the one copy of a single-flight
// scenario's setup, for every driver that has the table (flights_driver.cpp
// alone, composed_driver.cpp as the lane consumer's lookup), on either
// backend: the outcome a flight hands its waiters, what the waiters and
// workers share and how their fibers are counted live, the worker that does
// what behaviour.worker says, and one waiter's join, wait and log.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
#include "tools/scenario/counter_oracles.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/flight_canaries.hpp"
#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/flight_oracles.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/scenario/spec_verdict.hpp"

namespace lockstep::scenario::flight_parts {

/// What a flight hands its waiters.
struct outcome {
  flight_answer answer = flight_answer::ok;
  std::uint64_t value = 0;
  bool operator==(const outcome&) const = default;
};

using key_type = std::uint64_t;
template <class Rt>
using real_flight = single_flight<Rt, key_type, outcome>;

struct worker_panic : std::runtime_error {
  worker_panic() : std::runtime_error("deliberate worker panic (behaviour.worker.outcomes)") {}
};

/// What the actors, waiters and workers share: counts atomic on threads
/// (event_log.hpp), and `tasks` guarded by `mu` (a no-op in the sim).
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt), moved(rt) {}
  flight_event_log<Rt> log;
  progress<Rt> moved;  // after each change of live
  counter<Rt> workers{0};             // workers started so far, for nth_call rules
  counter<Rt> waiters{0};             // waiters started so far: their run-wide numbers
  counter<Rt, std::size_t> live{0};   // waiter and worker fibers not yet ended
  state_lock<Rt> mu;
  std::vector<typename Rt::task> tasks;
  std::map<std::string, std::vector<typename Rt::task>> named;  // join id -> its waiters, for leave steps (under mu)
  std::map<key_type, typename Rt::task> worker_of;  // key -> its newest worker, for cancel_worker steps (under mu)

  void keep(typename Rt::task t) {
    const std::lock_guard hold(mu);
    tasks.push_back(std::move(t));
  }

  /// Joins every task kept, and those kept while it joins. Each join is on a
  /// copy of the handle, never on a reference into `tasks`: a fiber that
  /// runs during the join (one the liveness budget gave up on) may keep
  /// another, and the vector's growth would move the element being joined.
  void join_all() {
    for (std::size_t i = 0;; ++i) {
      typename Rt::task t;
      {
        const std::lock_guard hold(mu);
        if (i >= tasks.size()) return;
        t = tasks[i];
      }
      t.join();
    }
  }
};

/// Closes the log however drive ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

/// Counts a fiber as live from before its spawn until its body's captures are
/// destroyed, whether the body ran or was dropped unrun (a waiter cancelled
/// before it started). Counted only from when its body starts, a fiber
/// spawned but not yet run (on another core, or held back by PCT's
/// priorities) would let the liveness phase see nothing live, end at once and
/// never judge it.
template <class Rt>
struct live_token {
  std::shared_ptr<shared_state<Rt>> st;
  explicit live_token(const std::shared_ptr<shared_state<Rt>>& s) : st(s) { ++st->live; }
  live_token(live_token&& o) noexcept : st(std::move(o.st)) {}
  live_token(const live_token&) = delete;
  live_token& operator=(const live_token&) = delete;
  live_token& operator=(live_token&&) = delete;
  ~live_token() {
    if (!st) return;
    --st->live;
    st->moved.changed();
  }
};

inline flight_event about(flight_event_kind kind, key_type key, std::uint64_t flight) {
  flight_event e;
  e.kind = kind;
  e.key = key;
  e.flight = flight;
  return e;
}

// The first rule that matches wins; a percent rule draws only when reached,
// so the draws a run makes depend on the schedule and the seed alone.
template <class Rt>
const worker_rule* decide(Rt& rt, const worker_behaviour& b, key_type key, std::uint64_t call) {
  for (const worker_rule& r : b.outcomes) {
    bool match = false;
    switch (r.on) {
      case worker_rule::when::key: match = key == r.value; break;
      case worker_rule::when::nth_call: match = call == r.value; break;
      case worker_rule::when::percent: match = rt.random() % 100 < r.value; break;
    }
    if (match) return &r;
  }
  return nullptr;
}

/// A worker's resolution until its body takes it. Destroyed with it still
/// inside (the worker was cancelled before it ever ran), it logs the
/// abandonment the resolution is about to answer, before the resolution
/// answers and retires the flight, as a body that ran does.
template <class Rt, class Flight>
struct unrun_resolution {
  std::shared_ptr<shared_state<Rt>> st;
  key_type key;
  std::uint64_t id;
  std::optional<typename Flight::resolution> res;

  unrun_resolution(std::shared_ptr<shared_state<Rt>> s, key_type k, std::uint64_t i, typename Flight::resolution r)
      : st(std::move(s)), key(k), id(i), res(std::move(r)) {}
  unrun_resolution(unrun_resolution&& o) : st(o.st), key(o.key), id(o.id), res(std::move(o.res)) {
    o.res.reset();  // the moved-from resolution is disarmed: nothing to log for it
  }
  unrun_resolution(const unrun_resolution&) = delete;
  unrun_resolution& operator=(const unrun_resolution&) = delete;
  unrun_resolution& operator=(unrun_resolution&&) = delete;
  ~unrun_resolution() {
    if (!res) return;
    try {
      st->log.record(about(flight_event_kind::abandoned, key, id));
    } catch (...) {
      // Only allocation can fail here; losing one trace line beats terminate().
    }
    res.reset();
  }
  typename Flight::resolution take() {
    typename Flight::resolution r = std::move(*res);
    res.reset();
    return r;
  }
};

template <class Rt, class Flight>
void start_worker(Rt& rt, const scenario& s, const std::shared_ptr<shared_state<Rt>>& st, Flight& f, key_type key,
                  std::shared_ptr<typename Flight::slot> work, std::uint32_t core) {
  // Made before the spawn and moved in: a worker dropped before it ever ran
  // (cancelled first) still answers, and its holder logs that abandonment.
  unrun_resolution<Rt, Flight> res{st, key, work->id(),
                                   typename Flight::resolution(f, key, work, outcome{flight_answer::abandoned, 0},
                                                               "key " + std::to_string(key))};
  typename Rt::task worker = rt.spawn_on(core, "worker", [&rt, &s, st, key, work, res = std::move(res), tok = live_token<Rt>(st)]() mutable {
    const std::uint64_t id = work->id();
    bool answered = false;
    {
      // In a scope of its own: the resolution retires the flight before the fiber ends.
      typename Flight::resolution r = res.take();
      st->log.record(about(flight_event_kind::led, key, id));
      try {
        const std::uint64_t ns = draw(rt, s.worker.duration_ns);
        if (ns > 0) {
          rt.sleep_for(static_cast<std::int64_t>(ns));
        } else {
          rt.yield_now();  // a scheduling point even for an instant worker
        }
        const worker_rule* rule = decide(rt, s.worker, key, ++st->workers);
        const worker_outcome what = rule ? rule->outcome : worker_outcome::ok;
        if (what == worker_outcome::panic) {
          st->log.record(about(flight_event_kind::panicked, key, id));
          throw worker_panic();
        }
        if (what == worker_outcome::stops_early) {
          // Gives up without an outcome: the resolution answers "abandoned".
        } else if (work->begin_publishing()) {
          const std::uint64_t v = rule && rule->answer ? *rule->answer : id;
          const flight_answer kind = what == worker_outcome::error ? flight_answer::error : flight_answer::ok;
          flight_event published = about(flight_event_kind::published, key, id);
          published.answer = kind;  // what it is about to answer: the flight's one outcome
          published.value = v;
          st->log.record(published);
          rt.yield_now();  // a waiter leaving now finds the publication begun and lets it finish
          r.answer(outcome{kind, v});
          answered = true;
          rt.yield_now();  // joins and waiters may run between the answer and the retirement

        }
      } catch (const worker_panic&) {
        // The worker's task boundary: the resolution answers "abandoned" on the way out.
      } catch (const fiber_cancelled&) {
        // Cancelled mid-call (a cancel_worker step): the resolution answers
        // "abandoned" as it unwinds, after this line, as on the other ways out.
        if (!answered) st->log.record(about(flight_event_kind::abandoned, key, id));
        throw;
      }
      if (!answered) st->log.record(about(flight_event_kind::abandoned, key, id));
    }
  });
  {
    const std::lock_guard hold(st->mu);
    st->worker_of[key] = worker;
  }
  st->keep(std::move(worker));
}

/// A cancel_worker step: cancels the newest worker started for `key`, if it
/// still runs (cancelling a finished task is a no-op).
template <class Rt>
void cancel_worker(shared_state<Rt>& st, key_type key) {
  typename Rt::task t;
  {
    const std::lock_guard hold(st.mu);
    const auto it = st.worker_of.find(key);
    if (it == st.worker_of.end()) return;
    t = it->second;
  }
  t.cancel();
}

/// The flight rules' violations over the log, first in log order; once the
/// liveness budget is spent a waiter still parked is hung, so the end-of-run
/// rules are judged either way.
template <class Rt>
std::vector<violation> flight_violations(const scenario& s, shared_state<Rt>& st) {
  flight_oracle_settings os;
  os.enabled = s.oracles;
  os.end_of_run = true;
  return every_rule_broken(os, [&st](const flight_oracle_settings& o) { return check_flight_log(st.log.events(), o); });
}

/// The `counters` oracle (counter_oracles.hpp): once every waiter and worker
/// ended, the table holds no flight and counts the log's abandonments.
template <class Rt, class Flight>
std::optional<violation> counter_violation(const scenario& s, shared_state<Rt>& st, const Flight& f, bool settled) {
  if (!settled || !s.checks("counters")) return std::nullopt;
  std::optional<std::uint64_t> abandoned;
  if constexpr (requires { f.abandoned_total(); }) abandoned = f.abandoned_total();  // the canaries keep none
  return check_flight_counters(st.log.events(), f.in_flight(), abandoned);
}

/// One waiter: joins `key`, starts the worker when it leads, then (after a
/// scheduling point) waits; returns the `answered` event it logged. A
/// cancellation of its fiber logs `left` and propagates.
template <class Rt, class Flight>
flight_event waiter_body(Rt& rt, const scenario& s, const std::shared_ptr<shared_state<Rt>>& st, Flight& f, key_type key,
                 std::uint64_t number, std::uint32_t core) {
  std::optional<std::uint64_t> flight;
  try {
    const std::uint64_t called_at = st->log.size();
    auto j = f.join(key);
    flight = j.work->id();
    flight_event e = about(flight_event_kind::joined, key, *flight);
    e.waiter = number;
    e.leader = j.leader;
    e.called_at = called_at;
    st->log.record(e);
    if (j.leader) start_worker<Rt, Flight>(rt, s, st, f, key, j.work, core);
    // A scheduling point between the join and the subscription: the worker
    // may answer before this waiter subscribes (the late subscriber race).
    rt.yield_now();
    const std::optional<outcome> got = j.work->wait();
    flight_event a = about(flight_event_kind::answered, key, *flight);
    a.waiter = number;
    a.answer = got ? got->answer : flight_answer::abandoned;
    a.value = got ? got->value : 0;
    st->log.record(a);
    return a;
  } catch (const fiber_cancelled&) {
    if (flight) {
      flight_event e = about(flight_event_kind::left, key, *flight);
      e.waiter = number;
      st->log.record(e);
    }
    throw;
  }
}

/// The table's observer: only the two transitions made under the table lock
/// that nothing outside can see when they happen; everything else is
/// observed from outside.
template <class Rt>
auto table_observer(const std::shared_ptr<shared_state<Rt>>& st) {
  return [st](const key_type& key, std::uint64_t id, lockstep::flight_event e) {
    if (e == lockstep::flight_event::cancelled) st->log.record(about(flight_event_kind::cancelled, key, id));
    if (e == lockstep::flight_event::retired) st->log.record(about(flight_event_kind::retired, key, id));
  };
}

}  // namespace lockstep::scenario::flight_parts
