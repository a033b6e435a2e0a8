// tools/scenario/shard_oracles.hpp — the shard scheduler's oracles (DESIGN.md
// §6), as functions of the event log alone (shard_events.hpp):
//
//   conservation   every submitted item is processed, expired or coalesced
//                  exactly once; handed-back work is the very work given and
//                  never reaches a shard; once every shard has exited, no
//                  submitted item is left without its outcome (lost at
//                  shutdown) and every process() call has returned;
//   state          the state a dispatch sees is the key's model: the value
//                  its last process() kept, none after a drop, an error, a
//                  panic or a flush; each flush hands that latest value, and
//                  once every shard has exited no key holds a value never
//                  flushed (a write-back lost at shutdown);
//   per_key_order  items of one (key, actor) are dispatched in the order the
//                  actor submitted them, and expire in that order too;
//   one_in_flight  no two process() calls of a key overlap, and none overlaps
//                  the key's on_evict;
//   class_budget   process() calls of one class running at once on a shard
//                  never exceed its max_inflight;
//   pending_cap    the items a shard holds (submitted, not yet dispatched,
//                  expired or coalesced, plus those in process()) never
//                  exceed mailbox_capacity + max_pending + the sum of the
//                  class budgets — what a bounded mailbox, admission that
//                  stops at the cap and the budgets allow together;
//   fairness       round robin within a class, for any budget: a key whose
//                  turn ended (its process() returned) goes behind every key
//                  then ready in its class, so it is not dispatched again
//                  while one of those still waits — judged where the log
//                  proves the waiter holds no slot (every slot of the class
//                  busy with logged calls) and is still in the ring (never
//                  dispatched, nothing of it expired since; see the .cpp
//                  for when a key is certainly ready);
//   deadlines      nothing is dispatched once its time to live has passed
//                  since the actor called submit(), and nothing expires
//                  before it (nor without a time to live): the router stamps
//                  the deadline at or after that call, so an expiry is never
//                  early by this clock, and a dispatch at or past it is late;
//   request_ids    a coalesced item has a request id, coalescing is on, and a
//                  live item of the same (key, id) exists — one not itself
//                  coalesced and not expired before (an expiry releases the id);
//                  and conversely, an item runs only if no item of its (key,
//                  id) certainly admitted before it was still outstanding when
//                  it was certainly admitted (the id leaves the index when the
//                  original's process() returns, not when it is dispatched).
//   eviction       an idle sweep flushes a key only once evict_after_ns has
//                  passed since the key's last kept result (the seed's
//                  `evict`: idle and unused for evict_after), judged both
//                  where the reactor chose it (flush_chosen, the processor's
//                  optional on_flush_chosen hook) and where on_evict began,
//                  and only a key with nothing queued: no item certainly
//                  admitted and not yet out when the sweep chose it; every
//                  choice and flush logged before the router's drop began is
//                  a sweep's (the final flush comes after it, at any age);
//   backpressure   submit() never hands work back as full: it waits for room
//                  in the mailbox (only try_submit() may refuse a full one);
//                  and no submit is refused as closed before the router's
//                  drop began (the shards close only after it).
//   placement      the router's shard_of is one function of the key for every
//                  entry point: each item reaches (is processed, expired or
//                  coalesced on) the shard shard_of named when the actor
//                  submitted it, by submit() or try_submit() alike (the
//                  seed's `shard_of`: "a key always maps to the same shard").
//
// The log is seen from outside the engine, so each oracle only claims what
// the log proves: an item is counted in process() from the call to its
// return, a narrower window than the engine's slot (taken at dispatch,
// freed when the reactor harvests), so budget and cap checks never fire
// falsely; what the log cannot tell (the id of a completed item is released
// only when the reactor harvests it) is left to `expect` under fifo.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

struct shard_oracle_settings {
  std::vector<std::size_t> max_inflight;  ///< per class, on every shard
  std::size_t max_pending = 4096;
  std::size_t mailbox_capacity = 64;
  bool coalesce_duplicates = false;
  std::int64_t evict_after_ns = 60'000'000'000;
  std::vector<std::string> enabled;  ///< names from shard_oracle_names()
  /// Every shard has exited: check what must hold at the end too.
  bool end_of_run = true;
};

/// The first violation, in log order (then the end-of-run ones), or none.
std::optional<violation> check_shard_log(const std::vector<shard_event>& log, const shard_oracle_settings& settings);

}  // namespace lockstep::scenario
