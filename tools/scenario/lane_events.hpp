// tools/scenario/lane_events.hpp — the lane router's event log: what the
// router did, as the driver observes it from the outside (route results, the
// lane_observer hooks, the consumer's calls). Each event is kept in memory
// for the oracles (lane_oracles.hpp) and written as one trace line, so it is
// part of the trace hash and of --trace output. Nothing here reads engine
// internals: on the threads backend the same events go to its log.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

enum class lane_event_kind : std::uint8_t {
  routed,          ///< route() admitted item at depth
  refused,         ///< route() handed item back at depth
  unrouted,        ///< a route step found the router dropped: the item never entered it
  lane_created,    ///< lane_observer::lane_created while routing key
  handle_begin,    ///< the consumer started item on lane (a fiber id)
  handled,         ///< the consumer returned from item, with its outcome (ok, error, or a panic it contained)
  lane_closed,     ///< lane_observer::lane_closed on lane (key: the lane's items' key, or unknown_key)
  router_dropped,  ///< the scenario's router handle was dropped (by an actor, or after the workload)
  dropped,         ///< an admitted item was destroyed before any consumer took it (queued on a lane that ended)
  cancel_lane,     ///< a cancel_lane step asked the key's lane (lane: its fiber; 0: the key had none) to end
};

inline constexpr std::uint64_t unknown_key = UINT64_MAX;

struct lane_event {
  lane_event_kind kind;
  std::int64_t t = 0;  ///< virtual time, ns
  std::uint64_t key = unknown_key;
  std::uint64_t item = 0;   ///< run-wide item id, in route order of the steps
  std::uint64_t actor = 0;  ///< index of the routing actor
  std::uint64_t seq = 0;    ///< the item's index among its actor's items
  std::uint64_t lane = 0;   ///< fiber id of the lane
  std::uint64_t depth = 0;  ///< what route() reported
  /// routed, refused: the capacity route() was called with, when the step
  /// gave its own (own_capacity; none: uncapped) instead of the router's.
  bool own_capacity = false;
  std::optional<std::uint64_t> capacity = std::nullopt;
  /// handled: what the consumer call did (an error or a panic it contained).
  consumer_outcome outcome = consumer_outcome::ok;
  /// handled: the call ended its lane — its panic escaped the consumer
  /// (behaviour.consumer.escaped_panic "ends_lane") or the lane was
  /// cancelled mid-call (a cancel_lane step).
  bool escaped = false;
  bool cancelled = false;
  /// routed, refused, unrouted, dropped: when the actor called route() (not
  /// written to the trace line: the step that made the item fixes it).
  std::int64_t sent_ns = 0;
};

constexpr std::string_view name_of(consumer_outcome o) {
  switch (o) {
    case consumer_outcome::ok: return "ok";
    case consumer_outcome::error: return "error";
    case consumer_outcome::panic: return "panic";
  }
  return "?";
}

constexpr std::string_view name_of(lane_event_kind k) {
  switch (k) {
    case lane_event_kind::routed: return "lanes.routed";
    case lane_event_kind::refused: return "lanes.refused";
    case lane_event_kind::unrouted: return "lanes.unrouted";
    case lane_event_kind::lane_created: return "lanes.lane_created";
    case lane_event_kind::handle_begin: return "lanes.handle_begin";
    case lane_event_kind::handled: return "lanes.handled";
    case lane_event_kind::lane_closed: return "lanes.lane_closed";
    case lane_event_kind::router_dropped: return "lanes.router_dropped";
    case lane_event_kind::dropped: return "lanes.dropped";
    case lane_event_kind::cancel_lane: return "lanes.cancel_lane";
  }
  return "lanes.?";
}

/// The event's fields after "n" in its trace line (fixed order).
inline void write_fields(sim::trace& line, const lane_event& e) {
  if (e.key != unknown_key) line.field_u("key", e.key);
  switch (e.kind) {
    case lane_event_kind::routed:
    case lane_event_kind::refused:
      line.field_u("item", e.item).field_u("actor", e.actor).field_u("seq", e.seq).field_u("depth", e.depth);
      if (e.own_capacity) {
        if (e.capacity) {
          line.field_u("capacity", *e.capacity);
        } else {
          line.field("capacity", "none");
        }
      }
      break;
    case lane_event_kind::unrouted:
    case lane_event_kind::dropped:
      line.field_u("item", e.item).field_u("actor", e.actor).field_u("seq", e.seq);
      break;
    case lane_event_kind::handle_begin:
      line.field_u("item", e.item).field_u("actor", e.actor).field_u("seq", e.seq).field_u("lane", e.lane);
      break;
    case lane_event_kind::handled:
      line.field_u("item", e.item).field_u("lane", e.lane);
      // Only a failed call says so: a file without consumer outcomes keeps its trace bytes.
      if (e.outcome != consumer_outcome::ok) line.field("outcome", name_of(e.outcome));
      if (e.escaped) line.field("escaped", "ends_lane");
      if (e.cancelled) line.field("cancelled", "ends_lane");
      break;
    case lane_event_kind::cancel_lane:
      line.field_u("lane", e.lane);
      break;
    case lane_event_kind::lane_closed:
      line.field_u("lane", e.lane);
      break;
    case lane_event_kind::lane_created:
    case lane_event_kind::router_dropped:
      break;
  }
}

/// Appends events; in the sim, writes each to the run's trace (event_log.hpp).
template <class Rt>
using lane_event_log = event_log<Rt, lane_event>;

}  // namespace lockstep::scenario
