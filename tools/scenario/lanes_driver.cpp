#include "tools/scenario/lanes_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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

using sim::runtime;
using item = models::velo::item;  // key, producer (the actor's index), seq, id

/// What the actors, the consumer and the observer share. Plain fields: the
/// simulator runs every fiber on one OS thread.
struct shared_state {
  explicit shared_state(runtime& rt) : log(rt) {}
  lane_event_log log;
  std::map<sim::fiber_id, std::uint64_t> routing;   // fiber -> key it is routing (lane_created has no key)
  std::map<sim::fiber_id, std::uint64_t> lane_key;  // lane fiber -> the key of its items
  std::uint64_t admitted = 0, handled = 0, created = 0, closed = 0;
};

class observer final : public lane_observer {
 public:
  observer(runtime& rt, std::shared_ptr<shared_state> st) : rt_(rt), st_(std::move(st)) {}

  // Called inside route() under the map lock, on the routing fiber.
  void lane_created() override {
    ++st_->created;
    if (!st_->log.is_open()) return;  // teardown: there may be no current fiber to ask
    const auto it = st_->routing.find(rt_.exec().current().id);
    lane_event e{lane_event_kind::lane_created};
    if (it != st_->routing.end()) e.key = it->second;
    st_->log.record(e);
  }

  // Called from a lane's exit guard (a destructor): must not throw.
  void lane_closed() override {
    ++st_->closed;
    if (!st_->log.is_open()) return;
    try {
      lane_event e{lane_event_kind::lane_closed};
      e.lane = rt_.exec().current().id;
      const auto it = st_->lane_key.find(static_cast<sim::fiber_id>(e.lane));
      if (it != st_->lane_key.end()) e.key = it->second;
      st_->log.record(e);
    } catch (...) {
      // Only allocation can fail here; losing one trace line beats terminate().
    }
  }

 private:
  runtime& rt_;
  std::shared_ptr<shared_state> st_;
};

/// Closes the log however drive() ends: what teardown does is not the scenario's.
struct log_closer {
  shared_state& st;
  ~log_closer() { st.log.close(); }
};

template <class Router>
void drive(runtime& rt, const scenario& s) {
  const lanes_system& sys = *s.lanes;
  auto st = std::make_shared<shared_state>(rt);
  const log_closer closer{*st};

  lane_router_config<std::uint64_t> cfg;
  cfg.idle_ttl_ns = sys.idle_ttl_ns;
  cfg.observer = std::make_shared<observer>(rt, st);
  if (sys.place_by_key) cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key); };

  const duration consume = s.consumer_duration;
  auto consumer = [&rt, st, consume](item it) {
    const sim::fiber_id lane = rt.exec().current().id;
    st->lane_key.try_emplace(lane, it.key);
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
  std::shared_ptr<Router> router = std::make_shared<Router>(rt, consumer, cfg);
  bool dropped = false;
  auto drop = [&] {
    if (dropped) return;
    dropped = true;
    router.reset();
    st->log.record({lane_event_kind::router_dropped});
  };

  std::uint64_t next_id = 0;
  std::vector<runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    const actor& act = s.actors[a];
    actors.push_back(rt.spawn_on(act.core, "actor." + act.name, [&, a] {
      const sim::fiber_id me = rt.exec().current().id;
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
              const item it{key, a, seq++, next_id++};
              lane_event e{lane_event_kind::unrouted, 0, key, it.id, a, it.seq, 0, 0};
              if (std::shared_ptr<Router> handle = router) {
                st->routing[me] = key;
                const route_result<item> r = handle->route(key, it, sys.capacity);
                st->routing.erase(me);
                e.kind = r.ok() ? lane_event_kind::routed : lane_event_kind::refused;
                e.depth = r.depth;
                if (r.ok()) ++st->admitted;
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
  const bool must_close = dropped || sys.idle_ttl_ns.has_value();
  const bool settled =
      settle([&] { return st->admitted == st->handled && (!must_close || st->created == st->closed); });
  const std::uint64_t open_before_drop = st->created - st->closed;
  drop();
  settle([&] { return st->created == st->closed; });

  lane_oracle_settings os;
  os.capacity = sys.capacity;
  os.enabled = s.oracles;
  if (const auto v = check_lane_log(st->log.events(), os)) {
    if (v->oracle == "liveness") sim::check_liveness(false, v->oracle, v->message);
    sim::check(false, v->oracle, v->message);
  }
  sim::check_liveness(settled || !must_close, "liveness",
             std::to_string(open_before_drop) + " lanes still open " + std::to_string(s.liveness_ns) +
                 "ns after the workload, with idle_ttl_ns set or the router dropped");

  if (s.expect) {
    std::uint64_t refused = 0;
    for (const auto& e : st->log.events()) refused += e.kind == lane_event_kind::refused ? 1 : 0;
    auto expect = [](const char* what, const std::optional<std::uint64_t>& want, std::uint64_t got) {
      if (want) sim::check(*want == got, "expect", std::string(what) + ": expected " + std::to_string(*want) +
                                                         ", got " + std::to_string(got));
    };
    expect("handled", s.expect->handled, st->handled);
    expect("refused", s.expect->refused, refused);
    expect("lanes_created", s.expect->lanes_created, st->created);
    expect("lanes_closed", s.expect->lanes_closed, st->closed);
  }
}

}  // namespace

void run_lanes_scenario(runtime& rt, const scenario& s) {
  switch (s.lanes->canary) {
    case lanes_canary::none:
      drive<lane_router<runtime, std::uint64_t, item>>(rt, s);
      break;
    case lanes_canary::send_after_unlock:
      drive<models::velo::canary_router<item, true, false>>(rt, s);
      break;
    case lanes_canary::decrement_at_dequeue:
      drive<models::velo::canary_router<item, false, true>>(rt, s);
      break;
    case lanes_canary::replace_lane_on_route:
      drive<models::velo::canary_router<item, false, false, true>>(rt, s);
      break;
  }
}

}  // namespace lockstep::scenario
