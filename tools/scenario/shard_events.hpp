// tools/scenario/shard_events.hpp — the shard scheduler's event log: what the
// shards did, as the driver observes it from the outside — what submit() and
// try_submit() returned, the processor's calls (process, on_evict,
// on_coalesced, on_expired) and each shard fiber's return. No engine hook and
// no engine internals: the same log could be recorded on a threads backend.
// Each event is kept for the oracles (shard_oracles.hpp) and written as one
// trace line ("ev":"shards.…"), so it is part of the trace hash.
//
// Every event about an item carries the item's own identity (run-wide id,
// key, class, shard, submitting actor and its sequence number, request id),
// copied from the work the processor was handed, so an oracle never depends
// on which of two fibers logged first: an actor logs `submitted` only when
// submit() returns, possibly after its item was already processed.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/scenario/event_log.hpp"

namespace lockstep::scenario {

enum class shard_event_kind : std::uint8_t {
  submitted,    ///< submit()/try_submit() returned sent
  handed_back,  ///< submit()/try_submit() returned the work (detail: full or closed; value: the uid handed back)
  dispatched,   ///< process() was called (value/has_value: the state it saw)
  completed,    ///< process() is returning (detail: its disposition; value: a kept state)
  expired,      ///< on_expired: shed past its deadline, in the mailbox or at dispatch
  coalesced,    ///< on_coalesced: suppressed as a retry of a live (key, request id)
  flush_chosen, ///< the reactor took the key's state to flush (on_flush_chosen; value 1: the final flush)
  flushed,      ///< on_evict began (value: the state handed to it)
  flush_done,   ///< on_evict returned
  shutdown,     ///< the scenario's router was dropped (by a step, or after the workload)
  shard_exited, ///< a shard's run() returned
};

/// completed: what process() handed back.
enum class shard_disposition : std::uint8_t { keep, drop, error_clean, error_in_doubt, panic };
/// handed_back: why.
enum class hand_back_reason : std::uint8_t { full, closed };

struct shard_event {
  shard_event_kind kind = shard_event_kind::submitted;
  std::int64_t t = 0;         ///< virtual time, ns
  std::uint64_t key = 0;
  std::uint64_t item = 0;     ///< run-wide item id, from 1 (0: not about an item)
  std::uint64_t actor = 0;    ///< index of the submitting actor
  std::uint64_t seq = 0;      ///< the item's index among its actor's items
  std::uint64_t shard = 0;
  std::uint32_t cls = 0;
  std::optional<std::uint64_t> request_id;
  bool via_try = false;       ///< submitted/handed_back: by try_submit
  std::uint8_t detail = 0;    ///< completed: shard_disposition; handed_back: hand_back_reason
  bool has_value = false;
  std::uint64_t value = 0;
  // Identity fields not written to the trace line (the trace format predates
  // them, and the step that made the item fixes them): when the actor called
  // submit() or try_submit(), and the item's time to live.
  std::int64_t sent_ns = 0;
  std::optional<std::int64_t> ttl_ns;
};

constexpr std::string_view name_of(shard_event_kind k) {
  switch (k) {
    case shard_event_kind::submitted: return "shards.submitted";
    case shard_event_kind::handed_back: return "shards.handed_back";
    case shard_event_kind::dispatched: return "shards.dispatched";
    case shard_event_kind::completed: return "shards.completed";
    case shard_event_kind::expired: return "shards.expired";
    case shard_event_kind::coalesced: return "shards.coalesced";
    case shard_event_kind::flush_chosen: return "shards.flush_chosen";
    case shard_event_kind::flushed: return "shards.flushed";
    case shard_event_kind::flush_done: return "shards.flush_done";
    case shard_event_kind::shutdown: return "shards.shutdown";
    case shard_event_kind::shard_exited: return "shards.shard_exited";
  }
  return "shards.?";
}

constexpr std::string_view name_of(shard_disposition d) {
  switch (d) {
    case shard_disposition::keep: return "keep";
    case shard_disposition::drop: return "drop";
    case shard_disposition::error_clean: return "error_clean";
    case shard_disposition::error_in_doubt: return "error_in_doubt";
    case shard_disposition::panic: return "panic";
  }
  return "?";
}

/// True for the events that are about one item (and carry its identity).
constexpr bool is_item_event(shard_event_kind k) {
  return k == shard_event_kind::submitted || k == shard_event_kind::handed_back ||
         k == shard_event_kind::dispatched || k == shard_event_kind::completed ||
         k == shard_event_kind::expired || k == shard_event_kind::coalesced;
}

/// The event's fields after "n" in its trace line (fixed order).
inline void write_fields(sim::trace& line, const shard_event& e) {
  if (is_item_event(e.kind)) {
    line.field_u("item", e.item).field_u("key", e.key).field_u("shard", e.shard).field_u("cls", e.cls);
    line.field_u("actor", e.actor).field_u("seq", e.seq);
    if (e.request_id) line.field_u("id", *e.request_id);
  }
  switch (e.kind) {
    case shard_event_kind::submitted:
      line.field("via", e.via_try ? "try_submit" : "submit");
      break;
    case shard_event_kind::handed_back:
      line.field("via", e.via_try ? "try_submit" : "submit")
          .field("why", e.detail == static_cast<std::uint8_t>(hand_back_reason::full) ? "full" : "closed")
          .field_u("returned", e.value);
      break;
    case shard_event_kind::dispatched:
      if (e.has_value) line.field_u("state", e.value);
      break;
    case shard_event_kind::completed:
      line.field("disposition", name_of(static_cast<shard_disposition>(e.detail)));
      if (e.has_value) line.field_u("state", e.value);
      break;
    case shard_event_kind::flushed:
      line.field_u("key", e.key).field_u("shard", e.shard).field_u("value", e.value);
      break;
    case shard_event_kind::flush_done:
      line.field_u("key", e.key).field_u("shard", e.shard);
      break;
    case shard_event_kind::flush_chosen:
      line.field_u("key", e.key).field_u("shard", e.shard).field("by", e.value != 0 ? "final_flush" : "idle_sweep");
      break;
    case shard_event_kind::shard_exited:
      line.field_u("shard", e.shard);
      break;
    case shard_event_kind::expired:
    case shard_event_kind::coalesced:
    case shard_event_kind::shutdown:
      break;
  }
}

/// Appends events; in the sim, writes each to the run's trace (event_log.hpp).
template <class Rt>
using shard_event_log = event_log<Rt, shard_event>;

}  // namespace lockstep::scenario
