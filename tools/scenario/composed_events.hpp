// tools/scenario/composed_events.hpp — the composition's own event log: what
// a composed system's lane consumer did with each item between the components
// (composed_driver.hpp): the answer its single-flight lookup read, and whether
// it forwarded the item to the shards or kept it back. The components' own
// events go to their own logs (lane_events.hpp, flight_events.hpp,
// shard_events.hpp); these lines ("ev":"composed.…") tie them together by
// the lane item's id, the waiter's number and the shard item's id, so the
// delivery oracle (composed_oracles.hpp) can follow one item through all three.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/flight_events.hpp"

namespace lockstep::scenario {

enum class composed_event_kind : std::uint8_t {
  looked_up,  ///< the consumer's lookup returned (waiter, flight, answer, value)
  forwarded,  ///< the consumer's submit to the shards returned (shard_item; sent or handed back)
  kept,       ///< the consumer did not forward the item: its lookup answered error or abandoned
};

struct composed_event {
  composed_event_kind kind = composed_event_kind::looked_up;
  std::int64_t t = 0;          ///< virtual time, ns
  std::uint64_t item = 0;      ///< the lane item's run-wide id
  std::uint64_t key = 0;       ///< the lane item's key
  std::uint64_t waiter = 0;    ///< looked_up: the flight waiter's number
  std::uint64_t flight = 0;    ///< looked_up: the flight's id
  flight_answer answer = flight_answer::ok;  ///< looked_up, kept
  std::uint64_t value = 0;     ///< looked_up: the value read; forwarded: the value sent on
  std::uint64_t shard_item = 0;  ///< forwarded: the shard item's id
  bool sent = false;           ///< forwarded: the router took it (else it was handed back)
};

constexpr std::string_view name_of(composed_event_kind k) {
  switch (k) {
    case composed_event_kind::looked_up: return "composed.looked_up";
    case composed_event_kind::forwarded: return "composed.forwarded";
    case composed_event_kind::kept: return "composed.kept";
  }
  return "composed.?";
}

/// The event's fields after "n" in its trace line (fixed order).
inline void write_fields(sim::trace& line, const composed_event& e) {
  line.field_u("item", e.item).field_u("key", e.key);
  switch (e.kind) {
    case composed_event_kind::looked_up:
      line.field_u("waiter", e.waiter).field_u("flight", e.flight).field("answer", name_of(e.answer));
      if (e.answer != flight_answer::abandoned) line.field_u("value", e.value);
      break;
    case composed_event_kind::forwarded:
      line.field_u("shard_item", e.shard_item).field_u("value", e.value).field("sent", e.sent ? "yes" : "no");
      break;
    case composed_event_kind::kept:
      line.field("answer", name_of(e.answer));
      break;
  }
}

/// Appends events; in the sim, writes each to the run's trace (event_log.hpp).
template <class Rt>
using composed_event_log = event_log<Rt, composed_event>;

}  // namespace lockstep::scenario
