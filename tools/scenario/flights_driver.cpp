#include "tools/scenario/flights_driver.hpp"

#include <algorithm>
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
#include "tools/scenario/flight_canaries.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/flight_parts.hpp"
#include "tools/scenario/run_board.hpp"

namespace lockstep::scenario {
namespace {

using flight_parts::key_type;
using flight_parts::shared_state;

template <class Rt, class Flight>
void drive(Rt& rt, const scenario& s) {
  using runtime = Rt;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const flight_parts::log_closer<Rt> closer{*st};
  Flight f(rt, flight_parts::table_observer(st));

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    const std::uint32_t core = s.actors[a].core;
    actors.push_back(rt.spawn_on(core, "actor." + s.actors[a].name, [&, a, core] {
      const board_actor_done finished{rt, a};
      const std::vector<step>& steps = s.actors[a].steps;
      for (std::size_t n = 0; n < steps.size(); ++n) {
        const step& stp = steps[n];
        board_step(rt, a, n, stp);
        if (stp.what == step::kind::sleep) {
          rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
          continue;
        }
        if (stp.what == step::kind::leave) {
          // Every waiter the named join started so far leaves now; one already
          // answered is not cancelled (a no-op), one not yet started is not touched.
          std::vector<typename runtime::task> leaving;
          {
            const std::lock_guard hold(st->mu);
            leaving = st->named[stp.join_id];
          }
          for (typename runtime::task& w : leaving) w.cancel();
          continue;
        }
        if (stp.what == step::kind::wait_until) {
          // The reader admits only in_flight here.
          const std::uint64_t flights = poll_until(rt, s.liveness_ns, stp.poll_ns, stp.observed,
                                                   [&] { return static_cast<std::uint64_t>(f.in_flight()); });
          check_liveness(rt, flights == stp.observed, "liveness",
                         "actor " + s.actors[a].name + " step " + std::to_string(n) + ": wait_until in_flight() " +
                             std::to_string(stp.observed) + " still " + std::to_string(flights) + " after " +
                             std::to_string(s.liveness_ns) + "ns");
          continue;
        }
        if (stp.what == step::kind::observe) {
          // The reader admits only in_flight here.
          const std::size_t flights = f.in_flight();
          check(rt, flights == stp.observed, "observe",
                "actor " + s.actors[a].name + " step " + std::to_string(n) + ": in_flight() is " +
                    std::to_string(flights) + " at t=" + std::to_string(st->log.now()) + "ns, the file expects " +
                    std::to_string(stp.observed));
          continue;
        }
        if (stp.what == step::kind::cancel_worker) {
          const std::uint64_t after = draw(rt, stp.after_ns);
          if (after > 0) rt.sleep_for(static_cast<std::int64_t>(after));
          flight_parts::cancel_worker(*st, draw(rt, stp.key));
          continue;
        }
        if (stp.what != step::kind::join) continue;  // the reader refuses other components' steps
        for (std::uint64_t i = 0; i < stp.count; ++i) {
          const key_type key = draw(rt, stp.key);
          const std::uint64_t number = ++st->waiters;
          typename runtime::task w = rt.spawn_on(core, "waiter." + std::to_string(number),
                                                 [&rt, &s, st, &f, key, number, core, tok = flight_parts::live_token<Rt>(st)] {
                                                   flight_parts::waiter_body<Rt, Flight>(rt, s, st, f, key, number, core);
                                                 });
          st->keep(w);
          if (!stp.join_id.empty()) {
            const std::lock_guard hold(st->mu);
            st->named[stp.join_id].push_back(w);
          }
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
  board_phase(rt, "workload");
  for (auto& t : actors) t.join();

  // Liveness: with the workload over, every waiter must be answered or gone
  // and every worker done within the budget.
  board_phase(rt, "liveness: every waiter answered or gone, every worker done");
  const bool settled = settle(rt, st->moved, s.liveness_ns, [&] { return st->live == 0; });

  spec_verdict verdict;
  verdict.add(flight_parts::flight_violations(s, *st));
  verdict.add(flight_parts::counter_violation(s, *st, f, settled));
  verdict.deliver(rt);
  check_liveness(rt, settled, "liveness",
                      std::to_string(st->live) + " waiter or worker fibers still running " +
                          std::to_string(s.liveness_ns) + "ns after the workload");
  st->join_all();

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
      std::vector<std::string> want = *x.answers;
      const bool any = x.unordered("answers");
      const bool same = same_list(any, want, answers);
      check(rt, same, "expect",
            list_label("answers", any) + ": expected " + show(want) + ", got " + show(answers));
    }
  }
}

}  // namespace

template <class Rt>
void run_flights_scenario(Rt& rt, const scenario& s) {
  // The real table always: a canary is a bug planted in it (engine/plant.hpp), active for the run.
  drive<Rt, flight_parts::real_flight<Rt>>(rt, s);
}

template void run_flights_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_flights_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
