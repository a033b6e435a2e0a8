#include "tools/scenario/flights_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
#include "tools/scenario/flight_canaries.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/flight_oracles.hpp"

namespace lockstep::scenario {
namespace {

/// What a flight hands its waiters.
struct outcome {
  flight_answer answer = flight_answer::ok;
  std::uint64_t value = 0;
  bool operator==(const outcome&) const = default;
};

using key_type = std::uint64_t;
template <class Rt>
using real_flight = single_flight<Rt, key_type, outcome>;
template <class Rt, models::probation::bug B>
using broken = models::probation::broken_flight<Rt, key_type, outcome, B>;

struct worker_panic : std::runtime_error {
  worker_panic() : std::runtime_error("deliberate worker panic (behaviour.worker.outcomes)") {}
};

/// What the actors, waiters and workers share: counts atomic on threads
/// (event_log.hpp), and `tasks` guarded by `mu` (a no-op in the sim).
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt) {}
  flight_event_log<Rt> log;
  counter<Rt> workers{0};             // workers started so far, for nth_call rules
  counter<Rt> waiters{0};             // waiters started so far: their run-wide numbers
  counter<Rt, std::size_t> live{0};   // waiter and worker fibers not yet ended
  state_lock<Rt> mu;
  std::vector<typename Rt::task> tasks;

  void keep(typename Rt::task t) {
    const std::lock_guard hold(mu);
    tasks.push_back(std::move(t));
  }
};

/// Closes the log however drive ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

/// Counts a fiber as live for as long as its body runs, however it ends (in
/// the sim; on threads live_token counts it).
template <class Rt>
struct live_guard {
  shared_state<Rt>& st;
  explicit live_guard(shared_state<Rt>& s) : st(s) {
    if constexpr (is_sim<Rt>) ++st.live;
  }
  ~live_guard() {
    if constexpr (is_sim<Rt>) --st.live;
  }
  live_guard(const live_guard&) = delete;
  live_guard& operator=(const live_guard&) = delete;
};

/// On threads, counts a fiber as live from before its spawn until its body's
/// captures are destroyed, whether the body ran or was dropped unrun (a waiter
/// cancelled before it started): counted only from when its body starts, a
/// fiber spawned on another core and not yet running would let the liveness
/// phase see nothing live and end early. In the sim it counts nothing, so the
/// main fiber reads the same counts at the same points as it always has.
template <class Rt>
struct live_token {
  std::shared_ptr<shared_state<Rt>> st;
  explicit live_token(const std::shared_ptr<shared_state<Rt>>& s) {
    if constexpr (!is_sim<Rt>) {
      st = s;
      ++st->live;
    }
  }
  live_token(live_token&& o) noexcept : st(std::move(o.st)) {}
  live_token(const live_token&) = delete;
  live_token& operator=(const live_token&) = delete;
  live_token& operator=(live_token&&) = delete;
  ~live_token() {
    if (st) --st->live;
  }
};

flight_event about(flight_event_kind kind, key_type key, std::uint64_t flight) {
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

template <class Rt, class Flight>
void start_worker(Rt& rt, const scenario& s, const std::shared_ptr<shared_state<Rt>>& st, Flight& f, key_type key,
                  std::shared_ptr<typename Flight::slot> work, std::uint32_t core) {
  // Made before the spawn and moved in: a worker dropped before it ever ran still answers.
  typename Flight::resolution res(f, key, work, outcome{flight_answer::abandoned, 0}, "key " + std::to_string(key));
  st->keep(rt.spawn_on(core, "worker", [&rt, &s, st, key, work, res = std::move(res), tok = live_token<Rt>(st)]() mutable {
    const live_guard<Rt> live(*st);
    const std::uint64_t id = work->id();
    bool answered = false;
    {
      // In a scope of its own: the resolution retires the flight before the fiber ends.
      typename Flight::resolution r = std::move(res);
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
          st->log.record(about(flight_event_kind::published, key, id));
          rt.yield_now();  // a waiter leaving now finds the publication begun and lets it finish
          const std::uint64_t v = rule && rule->answer ? *rule->answer : id;
          r.answer(outcome{what == worker_outcome::error ? flight_answer::error : flight_answer::ok, v});
          answered = true;
          rt.yield_now();  // joins and waiters may run between the answer and the retirement

        }
      } catch (const worker_panic&) {
        // The worker's task boundary: the resolution answers "abandoned" on the way out.
      }
      if (!answered) st->log.record(about(flight_event_kind::abandoned, key, id));
    }
  }));
}

template <class Rt, class Flight>
void waiter_body(Rt& rt, const scenario& s, const std::shared_ptr<shared_state<Rt>>& st, Flight& f, key_type key,
                 std::uint64_t number, std::uint32_t core) {
  const live_guard<Rt> live(*st);
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
  } catch (const fiber_cancelled&) {
    if (flight) {
      flight_event e = about(flight_event_kind::left, key, *flight);
      e.waiter = number;
      st->log.record(e);
    }
    throw;
  }
}

template <class Rt, class Flight>
void drive(Rt& rt, const scenario& s) {
  using runtime = Rt;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const log_closer<Rt> closer{*st};
  Flight f(rt, [st](const key_type& key, std::uint64_t id, lockstep::flight_event e) {
    // Only the two transitions made under the table lock that nothing outside
    // can see when they happen; everything else is observed from outside.
    if (e == lockstep::flight_event::cancelled) st->log.record(about(flight_event_kind::cancelled, key, id));
    if (e == lockstep::flight_event::retired) st->log.record(about(flight_event_kind::retired, key, id));
  });

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    const std::uint32_t core = s.actors[a].core;
    actors.push_back(rt.spawn_on(core, "actor." + s.actors[a].name, [&, a, core] {
      for (const step& stp : s.actors[a].steps) {
        if (stp.what == step::kind::sleep) {
          rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
          continue;
        }
        if (stp.what != step::kind::join) continue;  // the reader refuses other components' steps
        for (std::uint64_t i = 0; i < stp.count; ++i) {
          const key_type key = draw(rt, stp.key);
          const std::uint64_t number = ++st->waiters;
          typename runtime::task w = rt.spawn_on(core, "waiter." + std::to_string(number),
                                                 [&rt, &s, st, &f, key, number, core, tok = live_token<Rt>(st)] {
                                                   waiter_body<Rt, Flight>(rt, s, st, f, key, number, core);
                                                 });
          st->keep(w);
          if (stp.leave_after_ns) {
            const auto after = static_cast<std::int64_t>(*stp.leave_after_ns);
            st->keep(rt.spawn_on(core, "leaver." + std::to_string(number), [&rt, w, after]() mutable {
              rt.sleep_for(after);
              w.cancel();  // a no-op once the waiter has its answer
            }));
          }
          if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
        }
      }
    }));
  }
  for (auto& t : actors) t.join();

  // Liveness: with the workload over, every waiter must be answered or gone
  // and every worker done within the budget.
  const std::int64_t deadline = rt.now() + s.liveness_ns;
  const std::int64_t quantum = std::max<std::int64_t>(1, s.liveness_ns / 64);
  while (st->live > 0 && rt.now() < deadline) rt.sleep_for(std::min(quantum, deadline - rt.now()));
  const bool settled = st->live == 0;

  flight_oracle_settings os;
  os.enabled = s.oracles;
  os.end_of_run = true;  // the budget is spent either way: a waiter still parked is hung
  if (const auto v = check_flight_log(st->log.events(), os)) check(rt, false, v->oracle, v->message);
  check_liveness(rt, settled, "liveness",
                      std::to_string(st->live) + " waiter or worker fibers still running " +
                          std::to_string(s.liveness_ns) + "ns after the workload");
  // Every fiber has ended (settled), so nothing adds to `tasks` any more.
  for (std::size_t i = 0; i < st->tasks.size(); ++i) st->tasks[i].join();

  if (s.expect) {
    const expectations& x = *s.expect;
    std::uint64_t n[9] = {};
    std::vector<std::string> answers;
    for (const flight_event& e : st->log.events()) {
      ++n[static_cast<std::size_t>(e.kind)];
      if (e.kind == flight_event_kind::answered) {
        answers.push_back(e.answer == flight_answer::abandoned
                              ? std::string("abandoned")
                              : std::string(name_of(e.answer)) + ":" + std::to_string(e.value));
      }
    }
    auto expect = [&rt](const char* what, const std::optional<std::uint64_t>& want, std::uint64_t got) {
      if (want) {
        check(rt, *want == got, "expect",
                   std::string(what) + ": expected " + std::to_string(*want) + ", got " + std::to_string(got));
      }
    };
    auto count = [&n](flight_event_kind k) { return n[static_cast<std::size_t>(k)]; };
    expect("flights", x.flights, count(flight_event_kind::led));
    expect("joined", x.joined, count(flight_event_kind::joined));
    expect("answered", x.answered, count(flight_event_kind::answered));
    expect("left", x.left, count(flight_event_kind::left));
    expect("cancelled", x.cancelled, count(flight_event_kind::cancelled));
    expect("published", x.published, count(flight_event_kind::published));
    expect("panicked", x.panicked, count(flight_event_kind::panicked));
    expect("abandoned", x.abandoned, count(flight_event_kind::abandoned));
    if (x.answers) {
      auto show = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& a : v) out += (out.empty() ? "" : " ") + a;
        return "[" + out + "]";
      };
      check(rt, *x.answers == answers, "expect", "answers: expected " + show(*x.answers) + ", got " + show(answers));
    }
  }
}

}  // namespace

template <class Rt>
void run_flights_scenario(Rt& rt, const scenario& s) {
  using models::probation::bug;
  switch (s.single_flight->canary) {
    case flight_canary::none: drive<Rt, real_flight<Rt>>(rt, s); break;
    case flight_canary::send_skips_without_subscribers: drive<Rt, broken<Rt, bug::send_skips_without_subscribers>>(rt, s); break;
    case flight_canary::decrement_outside_lock: drive<Rt, broken<Rt, bug::decrement_outside_lock>>(rt, s); break;
    case flight_canary::removal_without_identity_check: drive<Rt, broken<Rt, bug::removal_without_identity_check>>(rt, s); break;
    case flight_canary::keep_retired_slot: drive<Rt, broken<Rt, bug::keep_retired_slot>>(rt, s); break;
    case flight_canary::abandon_after_answer: drive<Rt, broken<Rt, bug::abandon_after_answer>>(rt, s); break;
  }
}

template void run_flights_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_flights_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
