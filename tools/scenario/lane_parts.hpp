// tools/scenario/lane_parts.hpp — the pieces of a lane scenario that more
// than one driver uses (lanes_driver.cpp alone, composed_driver.cpp in front
// of the single-flight table and the shards): what the actors, consumer and
// observer share, the observer that logs lanes created and closed, and one
// route() call with its event.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "engine/lanes.hpp"
#include "tools/scenario/lane_canaries.hpp"
#include "tools/scenario/lane_events.hpp"

namespace lockstep::scenario::lane_parts {

using sim::runtime;
using item = models::velo::item;  // key, producer (the actor's index), seq, id

/// What the actors, the consumer and the observer share. Plain fields: the
/// simulator runs every fiber on one OS thread.
struct shared_state {
  explicit shared_state(runtime& rt) : log(rt) {}
  lane_event_log<runtime> log;
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

/// Routes `it` through the router `router` holds now (none: dropped) with
/// the router's `capacity`, or the step's own (`own`), and logs what
/// happened; true when it was admitted. The caller's copy of the handle
/// keeps the router alive for the call, so a drop_router by another actor
/// never frees it under a route in progress (a dropped Arc).
template <class Router>
bool route_logged(runtime& rt, shared_state& st, const std::shared_ptr<Router>& router, const item& it,
                  std::optional<std::size_t> capacity,
                  const std::optional<std::optional<std::size_t>>& own = std::nullopt) {
  lane_event e{lane_event_kind::unrouted, 0, it.key, it.id, it.producer, it.seq, 0, 0};
  if (own) {
    capacity = *own;
    e.own_capacity = true;
    if (capacity) e.capacity = *capacity;
  }
  bool ok = false;
  if (std::shared_ptr<Router> handle = router) {
    const sim::fiber_id me = rt.exec().current().id;
    st.routing[me] = it.key;
    const route_result<item> r = handle->route(it.key, it, capacity);
    st.routing.erase(me);
    e.kind = r.ok() ? lane_event_kind::routed : lane_event_kind::refused;
    e.depth = r.depth;
    ok = r.ok();
    if (ok) ++st.admitted;
  }
  st.log.record(e);
  return ok;
}

}  // namespace lockstep::scenario::lane_parts
