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

namespace lockstep::scenario {
namespace {

using item = models::velo::item;  // key, producer (the actor's index), seq, id

/// What the actors, the consumer and the observer share. The maps and the
/// item ids are guarded by `mu` (a no-op in the sim, event_log.hpp), never
/// across an await point; the counts are read by the main fiber.
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt) {}
  lane_event_log<Rt> log;
  state_lock<Rt> mu;
  std::map<std::uint64_t, std::uint64_t> routing;   // fiber -> key it is routing (lane_created has no key)
  std::map<std::uint64_t, std::uint64_t> lane_key;  // lane fiber -> the key of its items
  std::uint64_t next_id = 0;                        // run-wide item ids, in route order
  counter<Rt> admitted{0}, handled{0}, created{0}, closed{0};
};

template <class Rt>
class observer final : public lane_observer {
 public:
  observer(Rt& rt, std::shared_ptr<shared_state<Rt>> st) : rt_(rt), st_(std::move(st)) {}

  // Called inside route() under the map lock, on the routing fiber.
  void lane_created() override {
    ++st_->created;
    if (!st_->log.is_open()) return;  // teardown: there may be no current fiber to ask
    lane_event e{lane_event_kind::lane_created};
    {
      const std::lock_guard hold(st_->mu);
      const auto it = st_->routing.find(current_fiber(rt_));
      if (it != st_->routing.end()) e.key = it->second;
    }
    st_->log.record(e);
  }

  // Called from a lane's exit guard (a destructor): must not throw.
  void lane_closed() override {
    ++st_->closed;
    if (!st_->log.is_open()) return;
    try {
      lane_event e{lane_event_kind::lane_closed};
      e.lane = current_fiber(rt_);
      {
        const std::lock_guard hold(st_->mu);
        const auto it = st_->lane_key.find(e.lane);
        if (it != st_->lane_key.end()) e.key = it->second;
      }
      st_->log.record(e);
    } catch (...) {
      // Only allocation can fail here; losing one trace line beats terminate().
    }
  }

 private:
  Rt& rt_;
  std::shared_ptr<shared_state<Rt>> st_;
};

/// Closes the log however drive() ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

template <class Rt, class Router>
void drive(Rt& rt, const scenario& s) {
  using runtime = Rt;
  const lanes_system& sys = *s.lanes;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const log_closer<Rt> closer{*st};

  lane_router_config<std::uint64_t> cfg;
  cfg.idle_ttl_ns = sys.idle_ttl_ns;
  cfg.observer = std::make_shared<observer<Rt>>(rt, st);
  if (sys.place_by_key) cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key); };

  const duration consume = s.consumer_duration;
  auto consumer = [&rt, st, consume](item it) {
    const std::uint64_t lane = current_fiber(rt);
    {
      const std::lock_guard hold(st->mu);
      st->lane_key.try_emplace(lane, it.key);
    }
    st->log.record({lane_event_kind::handle_begin, 0, it.key, it.id, it.producer, it.seq, lane, 0});
    const std::uint64_t ns = draw(rt, consume);
    if (ns > 0) {
      rt.sleep_for(static_cast<std::int64_t>(ns));
    } else {
      rt.yield_now();  // a scheduling point even for an instant consumer
    }
    ++st->handled;
    st->log.record({lane_event_kind::handled, 0, it.key, it.id, it.producer, it.seq, lane, 0});
  };
  // The scenario's handle on the router. A route step holds its own copy for
  // the call, so a drop_router by another actor never frees the router under
  // a route in progress: it goes when the last call returns (a dropped Arc).
  // On threads, the handle itself is shared between actors: copied and reset under st->mu.
  std::shared_ptr<Router> router = std::make_shared<Router>(rt, consumer, cfg);
  bool dropped = false;
  auto drop = [&] {
    std::shared_ptr<Router> last;  // freed outside the lock: the router's destructor may block
    {
      const std::lock_guard hold(st->mu);
      if (dropped) return;
      dropped = true;
      last = std::move(router);
    }
    last.reset();
    st->log.record({lane_event_kind::router_dropped});
  };

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    const actor& act = s.actors[a];
    actors.push_back(rt.spawn_on(act.core, "actor." + act.name, [&, a] {
      const std::uint64_t me = current_fiber(rt);
      std::uint64_t seq = 0;
      for (const step& stp : s.actors[a].steps) {
        switch (stp.what) {
          case step::kind::sleep:
            rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
            break;
          case step::kind::drop_router:
            drop();
            break;
          case step::kind::submit:
          case step::kind::try_submit:
          case step::kind::shutdown:
          case step::kind::join:
            break;  // the reader refuses other components' steps
          case step::kind::route:
            for (std::uint64_t i = 0; i < stp.count; ++i) {
              const std::uint64_t key = draw(rt, stp.key);
              std::shared_ptr<Router> handle;
              std::uint64_t id = 0;
              {
                const std::lock_guard hold(st->mu);
                id = st->next_id++;
                handle = router;
                if (handle) st->routing[me] = key;
              }
              const item it{key, a, seq++, id};
              lane_event e{lane_event_kind::unrouted, 0, key, it.id, a, it.seq, 0, 0};
              if (handle) {
                const route_result<item> r = handle->route(key, it, sys.capacity);
                {
                  const std::lock_guard hold(st->mu);
                  st->routing.erase(me);
                }
                e.kind = r.ok() ? lane_event_kind::routed : lane_event_kind::refused;
                e.depth = r.depth;
                if (r.ok()) ++st->admitted;
                handle.reset();
              }
              st->log.record(e);
              if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
            }
            break;
        }
      }
    }));
  }
  for (auto& t : actors) t.join();

  // Liveness: with faults over, the system must settle within the budget.
  auto settle = [&](auto done) {
    const std::int64_t deadline = rt.now() + s.liveness_ns;
    const std::int64_t quantum = std::max<std::int64_t>(1, s.liveness_ns / 64);
    while (!done() && rt.now() < deadline) rt.sleep_for(std::min(quantum, deadline - rt.now()));
    return done();
  };
  bool must_close = sys.idle_ttl_ns.has_value();
  {
    const std::lock_guard hold(st->mu);
    must_close = must_close || dropped;
  }
  const bool settled =
      settle([&] { return st->admitted == st->handled && (!must_close || st->created == st->closed); });
  const std::uint64_t open_before_drop = st->created - st->closed;
  drop();
  settle([&] { return st->created == st->closed; });

  lane_oracle_settings os;
  os.capacity = sys.capacity;
  os.enabled = s.oracles;
  if (const auto v = check_lane_log(st->log.events(), os)) {
    if (v->oracle == "liveness") check_liveness(rt, false, v->oracle, v->message);
    check(rt, false, v->oracle, v->message);
  }
  check_liveness(rt, settled || !must_close, "liveness",
             std::to_string(open_before_drop) + " lanes still open " + std::to_string(s.liveness_ns) +
                 "ns after the workload, with idle_ttl_ns set or the router dropped");

  if (s.expect) {
    std::uint64_t refused = 0;
    for (const auto& e : st->log.events()) refused += e.kind == lane_event_kind::refused ? 1 : 0;
    auto expect = [&rt](const char* what, const std::optional<std::uint64_t>& want, std::uint64_t got) {
      if (want) check(rt, *want == got, "expect", std::string(what) + ": expected " + std::to_string(*want) +
                                                         ", got " + std::to_string(got));
    };
    expect("handled", s.expect->handled, st->handled);
    expect("refused", s.expect->refused, refused);
    expect("lanes_created", s.expect->lanes_created, st->created);
    expect("lanes_closed", s.expect->lanes_closed, st->closed);
  }
}

}  // namespace

template <class Rt>
void run_lanes_scenario(Rt& rt, const scenario& s) {
  if (s.lanes->canary == lanes_canary::none) {
    drive<Rt, lane_router<Rt, std::uint64_t, item>>(rt, s);
    return;
  }
  // The canaries are models written for the simulator (tools/models/velo_model.hpp).
  if constexpr (is_sim<Rt>) {
    switch (s.lanes->canary) {
      case lanes_canary::none:
        break;
      case lanes_canary::send_after_unlock:
        drive<Rt, models::velo::canary_router<item, true, false>>(rt, s);
        break;
      case lanes_canary::decrement_at_dequeue:
        drive<Rt, models::velo::canary_router<item, false, true>>(rt, s);
        break;
      case lanes_canary::replace_lane_on_route:
        drive<Rt, models::velo::canary_router<item, false, false, true>>(rt, s);
        break;
    }
  } else {
    throw std::logic_error("the lane router's canaries run on the simulator only (check_threads_settings refuses them)");
  }
}

template void run_lanes_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_lanes_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
