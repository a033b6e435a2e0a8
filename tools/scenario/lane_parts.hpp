// tools/scenario/lane_parts.hpp — the one copy of a lane scenario's setup,
// for every driver that has lanes (lanes_driver.cpp alone, composed_driver.cpp
// in front of the single-flight table and the shards), on either backend:
// what the actors, consumer and observer share, the observer that logs lanes
// created and closed, the scenario's handle on the router, one route() call
// with its event, the consumer wrapper that does what behaviour.consumer says
// (contains its own panics and errors, and logs each call), and the lane
// oracles' verdict.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "tools/scenario/counter_oracles.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/lane_canaries.hpp"
#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/lane_oracles.hpp"
#include "tools/scenario/spec_verdict.hpp"

namespace lockstep::scenario::lane_parts {

/// Watches the copies of one admitted item (shared by them): when the last
/// copy goes before a consumer took the item, the item was dropped — queued
/// on a lane that ended (velo: a lane's exit drops what it still held). Only
/// files whose escaped consumer panics end lanes watch their items.
struct drop_watch {
  std::function<void(std::int64_t)> on_drop;  // given sent_ns; must not throw
  bool taken = false;                         // a consumer began it, or route() did not keep it
  std::int64_t sent_ns = 0;                   // when the actor called route()
  drop_watch() = default;
  drop_watch(const drop_watch&) = delete;
  drop_watch& operator=(const drop_watch&) = delete;
  ~drop_watch() {
    if (!taken && on_drop) on_drop(sent_ns);
  }
};

/// One routed item: key, producer (the actor's index), seq, id; and its watch.
struct item : models::velo::item {
  std::shared_ptr<drop_watch> watch;  // none unless behaviour.consumer.escaped_panic is "ends_lane"
};

/// What the actors, the consumer and the observer share. The maps and the
/// item ids are guarded by `mu` (a no-op in the sim, event_log.hpp), never
/// across an await point; the counts are read by the main fiber.
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt), moved(rt) {}
  lane_event_log<Rt> log;
  progress<Rt> moved;  // after each change of admitted, handled, created or closed
  state_lock<Rt> mu;
  std::map<std::uint64_t, std::uint64_t> routing;   // fiber -> key it is routing (lane_created has no key)
  std::map<std::uint64_t, std::uint64_t> lane_key;  // lane fiber -> the key of its items
  std::map<std::uint64_t, std::uint64_t> key_lane;  // key -> the lane fiber that began its latest item
  std::uint64_t next_id = 0;                        // run-wide item ids, in route order
  counter<Rt> admitted{0}, handled{0}, created{0}, closed{0};
  counter<Rt> dropped{0};  // admitted items destroyed before a consumer took them (drop_watch)
  counter<Rt> calls{0};  // consumer calls so far, for nth_call rules
};

template <class Rt>
class observer final : public lane_observer {
 public:
  observer(Rt& rt, std::shared_ptr<shared_state<Rt>> st) : rt_(rt), st_(std::move(st)) {}

  // Each event is logged before it is counted: the driver waits on the
  // counts and then judges the log, and on threads a count seen before its
  // event was logged would judge a log without it (a lane "still open"
  // after the drop; found by prop_generated_threads).

  // Called inside route() under the map lock, on the routing fiber.
  void lane_created() override {
    if (st_->log.is_open()) {  // teardown: there may be no current fiber to ask
      lane_event e{lane_event_kind::lane_created};
      {
        const std::lock_guard hold(st_->mu);
        const auto it = st_->routing.find(current_fiber(rt_));
        if (it != st_->routing.end()) e.key = it->second;
      }
      st_->log.record(e);
    }
    ++st_->created;
    st_->moved.changed();
  }

  // Called from a lane's exit guard (a destructor): must not throw.
  void lane_closed() override {
    if (st_->log.is_open()) {
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
    ++st_->closed;
    st_->moved.changed();
  }

 private:
  Rt& rt_;
  std::shared_ptr<shared_state<Rt>> st_;
};

/// Closes the log however a drive ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

/// The engine config a lanes_system asks for, its observer logging into `st`.
template <class Rt>
lane_router_config<std::uint64_t> config_of(Rt& rt, const lanes_system& sys, const std::shared_ptr<shared_state<Rt>>& st) {
  lane_router_config<std::uint64_t> cfg;
  cfg.idle_ttl_ns = sys.idle_ttl_ns;
  cfg.observer = std::make_shared<observer<Rt>>(rt, st);
  if (sys.place_by_key) cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key); };
  return cfg;
}

/// The scenario's handle on the router. A route step takes its own copy for
/// the call (get), so a drop_router by another actor never frees the router
/// under a route in progress: it goes when the last call returns (a dropped
/// Arc). On threads the handle is shared between actors: copied and reset
/// under st.mu.
template <class Rt, class Router>
struct router_handle {
  std::shared_ptr<Router> router;
  bool dropped = false;

  std::shared_ptr<Router> get(shared_state<Rt>& st) {
    const std::lock_guard hold(st.mu);
    return router;
  }
  bool was_dropped(shared_state<Rt>& st) {
    const std::lock_guard hold(st.mu);
    return dropped;
  }
  /// Drops the scenario's handle (once) and logs it. Logged as the drop
  /// begins, before the handle goes: on threads, a lane on another core sees
  /// the router gone (and logs its close) as soon as the last reference is
  /// released, and a close logged before the drop would be judged as a lane
  /// that ended with the router still there (found by prop_generated_threads).
  void drop(shared_state<Rt>& st) {
    std::shared_ptr<Router> last;  // freed outside the lock: the router's destructor may block
    {
      const std::lock_guard hold(st.mu);
      if (dropped) return;
      dropped = true;
      last = std::move(router);
    }
    st.log.record({lane_event_kind::router_dropped});
    last.reset();
  }
};

/// Routes `it` with `capacity` (the router's), or the step's own (`own`),
/// through `handle` (the caller's copy; none: the router was dropped), and
/// logs what happened; true when it was admitted.
template <class Rt, class Router>
bool route_logged(Rt& rt, shared_state<Rt>& st, std::shared_ptr<Router> handle, const item& it,
                  std::optional<std::size_t> capacity,
                  const std::optional<std::optional<std::size_t>>& own = std::nullopt) {
  lane_event e{lane_event_kind::unrouted, 0, it.key, it.id, it.producer, it.seq, 0, 0};
  e.sent_ns = st.log.now();
  if (it.watch) it.watch->sent_ns = e.sent_ns;
  if (own) {
    capacity = *own;
    e.own_capacity = true;
    if (capacity) e.capacity = *capacity;
  }
  bool ok = false;
  if (handle) {
    const std::uint64_t me = current_fiber(rt);
    {
      const std::lock_guard hold(st.mu);
      st.routing[me] = it.key;
    }
    route_result<item> r = handle->route(it.key, it, capacity);
    {
      const std::lock_guard hold(st.mu);
      st.routing.erase(me);
    }
    if (!r.ok() && it.watch) it.watch->taken = true;  // handed back: never the router's to drop
    e.kind = r.ok() ? lane_event_kind::routed : lane_event_kind::refused;
    e.depth = r.depth;
    ok = r.ok();
    handle.reset();
  } else if (it.watch) {
    it.watch->taken = true;  // never entered the router
  }
  st.log.record(e);
  if (ok) {  // counted once logged (see observer)
    ++st.admitted;
    st.moved.changed();
  }
  return ok;
}

/// The item a route step sends: with a drop_watch that logs a `dropped`
/// event where lanes can end with work (escaped consumer panics, cancel_lane
/// steps; none otherwise).
template <class Rt>
item make_item(const scenario& s, const std::shared_ptr<shared_state<Rt>>& st, std::uint64_t key,
               std::uint64_t producer, std::uint64_t seq, std::uint64_t id) {
  item it{{key, producer, seq, id}, nullptr};
  if (!s.consumer_escape_ends_lane && !s.cancels_lanes) return it;
  it.watch = std::make_shared<drop_watch>();
  it.watch->on_drop = [st, key, producer, seq, id](std::int64_t sent_ns) noexcept {
    if (st->log.is_open()) {
      try {
        lane_event e{lane_event_kind::dropped, 0, key, id, producer, seq, 0, 0};
        e.sent_ns = sent_ns;
        st->log.record(e);
      } catch (...) {
        // Only allocation can fail here; losing one trace line beats terminate().
      }
    }
    ++st->dropped;  // counted once logged (see observer)
    st->moved.changed();
  };
  return it;
}

/// What a consumer panic throws; the scenario's consumer catches it (unless
/// behaviour.consumer.contain is false).
struct consumer_panic : std::runtime_error {
  consumer_panic() : std::runtime_error("deliberate lane consumer panic (behaviour.consumer.outcomes)") {}
};

/// What an escaping consumer panic becomes with escaped_panic "ends_lane": a
/// lockstep::task_panic, which ends only the lane's fiber, as a panicking
/// task ends only itself under tokio.
struct lane_ending_panic : lockstep::task_panic {
  lane_ending_panic()
      : lockstep::task_panic("deliberate lane consumer panic (behaviour.consumer.outcomes), escaped: ends the lane") {}
};

// The first rule that matches wins; a percent rule draws only when reached,
// so the draws a run makes depend on the schedule and the seed alone.
template <class Rt>
consumer_outcome decide(Rt& rt, const scenario& s, shared_state<Rt>& st, std::uint64_t key) {
  const std::uint64_t call = ++st.calls;
  for (const consumer_rule& r : s.consumer_outcomes) {
    bool match = false;
    switch (r.on) {
      case consumer_rule::when::key: match = key == r.value; break;
      case consumer_rule::when::nth_call: match = call == r.value; break;
      case consumer_rule::when::percent: match = rt.random() % 100 < r.value; break;
    }
    if (match) return r.outcome;
  }
  return consumer_outcome::ok;
}

/// One consumer call as behaviour.consumer says: logs its start, takes its
/// duration, then panics, returns an error, or does body(it) (what a composed
/// system's consumer does with the item; nothing alone). A panic is caught
/// here, as the seed's OrderedDispatcher catches its handler's (catch_unwind):
/// the lane survives and goes on in order. Logs the call's outcome; returns
/// true when it panicked.
template <class Rt, class Body>
bool consume_logged(Rt& rt, const scenario& s, shared_state<Rt>& st, const item& it, Body&& body) {
  const std::uint64_t lane = current_fiber(rt);
  {
    const std::lock_guard hold(st.mu);
    st.lane_key.try_emplace(lane, it.key);
    st.key_lane.insert_or_assign(it.key, lane);
  }
  if (it.watch) it.watch->taken = true;
  st.log.record({lane_event_kind::handle_begin, 0, it.key, it.id, it.producer, it.seq, lane, 0});
  lane_event done{lane_event_kind::handled, 0, it.key, it.id, it.producer, it.seq, lane, 0};
  try {
    const consumer_outcome what = decide(rt, s, st, it.key);
    const std::uint64_t ns = draw(rt, s.consumer_duration);
    if (ns > 0) {
      rt.sleep_for(static_cast<std::int64_t>(ns));
    } else {
      rt.yield_now();  // a scheduling point even for an instant consumer
    }
    done.outcome = what;
    if (what == consumer_outcome::panic) throw consumer_panic();
    if (what == consumer_outcome::ok) body(it);
  } catch (const fiber_cancelled&) {
    // The lane was cancelled mid-call (a cancel_lane step): the call ends here
    // and so does the lane. It counts as handled, as an escaped panic does.
    done.cancelled = true;
    st.log.record(done);
    ++st.handled;  // counted once logged (see observer)
    st.moved.changed();
    throw;
  } catch (const consumer_panic&) {
    if (!s.consumer_contains && !s.consumer_escape_ends_lane) throw;  // escapes into the lane and fails the run
    if (!s.consumer_contains) {
      // Escapes into the lane and ends it (the call ended: it counts as handled).
      done.escaped = true;
      st.log.record(done);
      ++st.handled;
      st.moved.changed();
      throw lane_ending_panic();
    }
  }
  st.log.record(done);
  ++st.handled;
  st.moved.changed();
  return done.outcome == consumer_outcome::panic;
}

/// The consumer the router is built with: consume_logged for each item, or,
/// with a consumer canary planted (simulator only), behind its broken wrapper.
/// `body` must outlive the router's lanes (it is copied in).
template <class Rt, class Body>
std::function<void(item)> make_consumer(Rt& rt, const scenario& s, std::shared_ptr<shared_state<Rt>> st, Body body) {
  auto one = [&rt, &s, st, body](const item& it) { return consume_logged(rt, s, *st, it, body); };
  if constexpr (is_sim<Rt>) {
    if (is_consumer_canary(s.lanes->canary)) {
      using canary_t = models::velo::consumer_canary<item>;
      auto canary = std::make_shared<canary_t>(s.lanes->canary == lanes_canary::consumer_loses_after_panic
                                                   ? canary_t::flaw::loses_next
                                                   : canary_t::flaw::reorders_next);
      return [&rt, canary, one](item it) { canary->feed(current_fiber(rt), it, one); };
    }
  }
  return [one](item it) { (void)one(it); };
}

/// Calls f.template operator()<Router>() with the lane router: the real one
/// always (a planted bug is a switch in it, engine/plant.hpp, active for the
/// run; a consumer canary sits in front of it, make_consumer).
template <class Rt, class F>
void with_router(const scenario&, F&& f) {
  f.template operator()<lane_router<Rt, std::uint64_t, item>>();
}

/// The router's lane_count() once the liveness phase settled, and how many
/// events the log held then, for the `counters` oracle: none when it is off,
/// the phase did not settle, or a step dropped the router (its lanes are
/// then all closed, or the phase would not have settled).
struct lane_count_reading {
  std::size_t lanes = 0;
  std::uint64_t log_size = 0;
};
template <class Rt, class Router>
std::optional<lane_count_reading> settled_lane_count(const scenario& s, shared_state<Rt>& st,
                                                     router_handle<Rt, Router>& router, bool settled) {
  if (!settled || !s.checks("counters")) return std::nullopt;
  const std::shared_ptr<Router> r = router.get(st);
  if (!r) return std::nullopt;
  lane_count_reading reading;
  reading.lanes = r->lane_count();
  reading.log_size = st.log.size();
  return reading;
}

/// The `counters` oracle over the lane count settled_lane_count read,
/// against the log as it stood then.
template <class Rt>
std::optional<violation> lane_count_violation(shared_state<Rt>& st, const std::optional<lane_count_reading>& reading) {
  if (!reading) return std::nullopt;
  const std::vector<lane_event>& all = st.log.events();
  const std::vector<lane_event> then(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(
                                                                    std::min<std::uint64_t>(reading->log_size, all.size())));
  return check_lane_counters(then, reading->lanes);
}

/// The lane rules' violations over the log (spec_verdict.hpp), first in log order.
template <class Rt>
std::vector<violation> lane_violations(const scenario& s, shared_state<Rt>& st) {
  lane_oracle_settings os;
  os.capacity = s.lanes->capacity;
  os.enabled = s.oracles;
  os.any_route_capacity = s.any_route_capacity();
  os.reaps = s.lanes->idle_ttl_ns.has_value();
  return every_rule_broken(os, [&st](const lane_oracle_settings& o) { return check_lane_log(st.log.events(), o); });
}

}  // namespace lockstep::scenario::lane_parts
