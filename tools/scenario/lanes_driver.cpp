#include "tools/scenario/lanes_driver.hpp"

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

#include "engine/lanes.hpp"
#include "tools/scenario/lane_canaries.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/lane_oracles.hpp"
#include "tools/scenario/lane_parts.hpp"
#include "tools/scenario/run_board.hpp"

namespace lockstep::scenario {
namespace {

using lane_parts::item;
using lane_parts::shared_state;

template <class Rt, class Router>
void drive(Rt& rt, const scenario& s) {
  using runtime = Rt;
  const lanes_system& sys = *s.lanes;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const lane_parts::log_closer<Rt> closer{*st};
  lane_parts::router_handle<Rt, Router> router{
      std::make_shared<Router>(rt, lane_parts::make_consumer(rt, s, st, [](const item&) {}), lane_parts::config_of(rt, sys, st))};

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    const actor& act = s.actors[a];
    actors.push_back(rt.spawn_on(act.core, "actor." + act.name, [&, a] {
      std::uint64_t seq = 0;
      const board_actor_done finished{rt, a};
      const std::vector<step>& steps = s.actors[a].steps;
      for (std::size_t n = 0; n < steps.size(); ++n) {
        const step& stp = steps[n];
        board_step(rt, a, n, stp);
        switch (stp.what) {
          case step::kind::sleep:
            rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
            break;
          case step::kind::drop_router:
            router.drop(*st);
            break;
          case step::kind::wait_until: {
            // The reader admits only lane_count here. The router dropped, no lane is left to count.
            const std::uint64_t lanes = poll_until(rt, s.liveness_ns, stp.poll_ns, stp.observed, [&] {
              const auto r = router.get(*st);
              return static_cast<std::uint64_t>(r ? r->lane_count() : 0);
            });
            check_liveness(rt, lanes == stp.observed, "liveness",
                           "actor " + s.actors[a].name + " step " + std::to_string(n) + ": wait_until lane_count() " +
                               std::to_string(stp.observed) + " still " + std::to_string(lanes) + " after " +
                               std::to_string(s.liveness_ns) + "ns");
            break;
          }
          case step::kind::observe: {
            // The reader admits only lane_count here.
            const auto r = router.get(*st);
            check(rt, r != nullptr, "observe",
                  "actor " + s.actors[a].name + " step " + std::to_string(n) + ": lane_count() expected " +
                      std::to_string(stp.observed) + ", but the router was dropped before the step");
            const std::size_t lanes = r->lane_count();
            check(rt, lanes == stp.observed, "observe",
                  "actor " + s.actors[a].name + " step " + std::to_string(n) + ": lane_count() is " + std::to_string(lanes) +
                      " at t=" + std::to_string(st->log.now()) + "ns, the file expects " + std::to_string(stp.observed));
            break;
          }
          case step::kind::cancel_lane: {
            const std::uint64_t after = draw(rt, stp.after_ns);
            if (after > 0) rt.sleep_for(static_cast<std::int64_t>(after));
            const std::uint64_t key = draw(rt, stp.key);
            lane_event e{lane_event_kind::cancel_lane, 0, key, 0, a, 0, 0, 0};
            {
              const std::lock_guard hold(st->mu);
              const auto it = st->key_lane.find(key);
              if (it != st->key_lane.end()) e.lane = it->second;
            }
            st->log.record(e);
            if constexpr (is_sim<Rt>) {
              if (e.lane != 0) rt.cancel_fiber(e.lane);  // a no-op once that lane has ended
            }
            break;
          }
          case step::kind::submit:
          case step::kind::try_submit:
          case step::kind::shutdown:
          case step::kind::join:
          case step::kind::leave:
          case step::kind::cancel_worker:
            break;  // the reader refuses other components' steps
          case step::kind::route:
            for (std::uint64_t i = 0; i < stp.count; ++i) {
              const std::uint64_t key = draw(rt, stp.key);
              std::uint64_t id = 0;
              {
                const std::lock_guard hold(st->mu);
                id = st->next_id++;
              }
              lane_parts::route_logged(rt, *st, router.get(*st), lane_parts::make_item(s, st, key, a, seq++, id),
                                       sys.capacity, stp.route_capacity);
              if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
            }
            break;
        }
      }
    }));
  }
  board_phase(rt, "workload");
  for (auto& t : actors) t.join();

  // Liveness: with faults over, every admitted item must be handled (its
  // consumer call returned) within the budget, whatever the file's ttl and
  // drop steps; where lanes reap (idle_ttl) or the router was dropped, every
  // lane must close within it too.
  const bool must_close = sys.idle_ttl_ns.has_value() || router.was_dropped(*st);
  board_phase(rt, "liveness: every admitted item handled (and, reaping or dropped, every lane closed)");
  const bool settled = settle(rt, st->moved, s.liveness_ns, [&] {
    return st->admitted == st->handled + st->dropped && (!must_close || st->created == st->closed);
  });
  const std::uint64_t unhandled = st->admitted - std::min<std::uint64_t>(st->admitted, st->handled + st->dropped);
  const auto lane_count = lane_parts::settled_lane_count(s, *st, router, settled);
  const std::uint64_t open_before_drop = st->created - st->closed;
  board_phase(rt, "liveness: the router dropped, every lane closing");
  router.drop(*st);
  settle(rt, st->moved, s.liveness_ns, [&] { return st->created == st->closed; });

  spec_verdict verdict;
  verdict.add(lane_parts::lane_violations(s, *st));
  verdict.add(lane_parts::lane_count_violation(*st, lane_count));
  verdict.deliver(rt);
  check_liveness(rt, unhandled == 0, "liveness",
                 std::to_string(unhandled) + " admitted items still unhandled (no consumer call returned) " +
                     std::to_string(s.liveness_ns) + "ns after the workload");
  check_liveness(rt, settled, "liveness",
                 std::to_string(open_before_drop) + " lanes still open " + std::to_string(s.liveness_ns) +
                     "ns after the workload, with idle_ttl_ns set or the router dropped");

  if (s.expect) {
    std::uint64_t refused = 0, errors = 0, panics = 0;
    std::vector<std::uint64_t> consumed;
    for (const auto& e : st->log.events()) {
      refused += e.kind == lane_event_kind::refused ? 1 : 0;
      if (e.kind != lane_event_kind::handled) continue;
      errors += e.outcome == consumer_outcome::error ? 1 : 0;
      panics += e.outcome == consumer_outcome::panic ? 1 : 0;
      if (e.outcome == consumer_outcome::ok) consumed.push_back(e.item);
    }
    auto expect = [&rt](const char* what, const std::optional<std::uint64_t>& want, std::uint64_t got) {
      if (want) check(rt, *want == got, "expect", std::string(what) + ": expected " + std::to_string(*want) +
                                                         ", got " + std::to_string(got));
    };
    expect("handled", s.expect->handled, st->handled);
    expect("refused", s.expect->refused, refused);
    expect("lanes_created", s.expect->lanes_created, st->created);
    expect("lanes_closed", s.expect->lanes_closed, st->closed);
    expect("consumer_errors", s.expect->consumer_errors, errors);
    expect("consumer_panics", s.expect->consumer_panics, panics);
    if (s.expect->consumed) {
      auto show = [](const std::vector<std::uint64_t>& v) {
        std::string out;
        for (const std::uint64_t id : v) out += (out.empty() ? "" : " ") + std::to_string(id);
        return "[" + out + "]";
      };
      std::vector<std::uint64_t> want = *s.expect->consumed;
      const bool any = s.expect->unordered("consumed");
      const bool same = same_list(any, want, consumed);
      check(rt, same, "expect",
            list_label("consumed", any) + ": expected " + show(want) + ", got " + show(consumed));
    }
  }
}

}  // namespace

template <class Rt>
void run_lanes_scenario(Rt& rt, const scenario& s) {
  lane_parts::with_router<Rt>(s, [&]<class Router>() { drive<Rt, Router>(rt, s); });
}

template void run_lanes_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_lanes_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
