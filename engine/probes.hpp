// engine/probes.hpp — coverage probes: one named point on every engine branch
// that a race or a policy decides, and the race pairs among them.
//
// Engine code marks a branch with LOCKSTEP_PROBE(rt, "lanes.reap_found_pending").
// The name is looked up in the table below at compile time (an unknown name
// does not compile) and the call becomes rt.probe(index), a seam operation:
// the simulator writes a `probe` trace line and marks the probe hit for the
// run; the threads backend compiles it to nothing unless
// LOCKSTEP_PROBES_ON_THREADS is defined (engine/threads/runtime.hpp).
//
// A probe's name is COMPONENT.WHAT; COMPONENT (lanes, flight, shards) says
// which component must be present in a scenario for the probe to be
// reachable there.
//
// A race pair is two probes, each marking one outcome of one race (reap vs
// route, cancel vs publish, ...). Within one run the simulator records which
// orders occurred: `a` hit before a later `b`, and `b` hit before a later `a`.
// explore reports a pair seen in only one order over its seeds.
//
// Invariants: names are unique and sorted by nothing but this table's order
// (the index is the position); at most 64 probes (a run's hits are one
// 64-bit mask) and at most 16 pairs (two bits each in a 32-bit mask).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace lockstep::probes {

// clang-format off
/// Every probe: its name, and the branch it marks.
inline constexpr std::array<std::string_view, 40> names = {
    // lanes (engine/lanes.hpp)
    "lanes.route_opened_lane",          // route found no lane for the key (first use, or after a reap/exit)
    "lanes.route_queued_behind_work",   // route admitted an item behind unfinished ones (depth > 0)
    "lanes.route_refused_at_capacity",  // route handed the item back: the lane held `capacity` items
    "lanes.reaped",                     // an idle timeout removed the lane (reap won against route)
    "lanes.reap_found_pending",         // an idle timeout found work routed meanwhile (route won against reap)
    "lanes.ended_by_router_drop",       // a lane drained and ended because every sender was gone
    "lanes.ended_by_cancel",            // a lane's fiber was cancelled
    "lanes.ended_by_consumer_exception",// the consumer threw and ended its lane
    // single flight (engine/single_flight.hpp)
    "flight.join_started",              // join found no slot: the caller leads a new flight
    "flight.join_state_running",        // join found a running flight and joined it
    "flight.join_state_publishing",     // join found a flight past its point of no return
    "flight.cancelled",                 // the last waiter left and cancelled the work
    "flight.published",                 // the worker began publishing
    "flight.cancel_lost_to_publish",    // the last waiter left too late: publication had begun
    "flight.publish_lost_to_cancel",    // the worker came to publish too late: cancelled
    "flight.answered",                  // the resolution stored an answer
    "flight.abandoned",                 // the resolution ended unanswered
    "flight.stale_resolution_kept_newer",// a resolution found a newer flight under its key and left it
    "flight.resolution_after_removal",  // a resolution found its slot already gone (cancelled)
    "flight.leave_not_last",            // a waiter left while others still wait
    // shards (engine/shard.hpp, router.hpp, scheduler.hpp)
    "shards.mailbox_full_suspends",     // submit found the mailbox full and suspends its caller
    "shards.try_submit_refused_full",   // try_submit handed the work back: mailbox full
    "shards.submit_refused_closed",     // a submit or try_submit after the shard's mailbox closed
    "shards.pending_cap_reached",       // the reactor stopped admitting: max_pending items queued
    "shards.coalesced_duplicate",       // an item with a live (key, request id) was suppressed
    "shards.expired_in_mailbox",        // an item's deadline passed before the reactor admitted it
    "shards.expired_at_dispatch",       // an expired head item was shed instead of dispatched
    "shards.dispatched_with_deadline",  // an item with a deadline dispatched before it
    "shards.class_budget_full",         // a ready key waited: its class was at max_inflight
    "shards.evicted_idle",              // the idle sweep flushed a resident state
    "shards.evict_found_busy",          // the idle sweep skipped a resident key with queued items
    "shards.admit_while_flushing",      // an item arrived for a key whose state was being flushed
    "shards.dispatch_after_flush",      // a key that was flushing became ready with items queued
    "shards.panic_contained",           // process() threw; the shard carries on (contain)
    "shards.panic_abort",               // process() threw; the shard ends the run (abort)
    "shards.failed_in_doubt",           // process() returned an error with in-doubt fallout
    "shards.failed_clean",              // process() returned an error with clean fallout
    "shards.close_found_inflight",      // the mailbox closed while items or flushes were in flight
    "shards.close_found_idle",          // the mailbox closed with nothing in flight
    "shards.final_flush_resident",      // the final flush handed resident state to on_evict
};
// clang-format on

inline constexpr std::size_t count = names.size();
static_assert(count <= 64, "a run's hits are one 64-bit mask");

/// The index of `name`; a name that is not in the table is a compile error
/// (consteval: the throw cannot be evaluated at compile time).
consteval std::uint16_t index_of(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<std::uint16_t>(i);
  }
  throw "LOCKSTEP_PROBE: no probe of that name in engine/probes.hpp";
}

/// The index of `name` at run time (readers, reports); count when unknown.
constexpr std::size_t find(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return count;
}

/// The component a probe belongs to: its name up to the first dot.
constexpr std::string_view component_of(std::string_view name) { return name.substr(0, name.find('.')); }

/// Two probes marking the two outcomes of one race; `race` names it.
struct race_pair {
  std::uint16_t a;
  std::uint16_t b;
  std::string_view race;
};

// clang-format off
inline constexpr std::array<race_pair, 6> pairs = {{
    {index_of("lanes.reaped"), index_of("lanes.reap_found_pending"), "reap vs route"},
    {index_of("flight.cancel_lost_to_publish"), index_of("flight.publish_lost_to_cancel"), "cancel vs publish"},
    {index_of("shards.evicted_idle"), index_of("shards.admit_while_flushing"), "eviction vs dispatch"},
    {index_of("shards.final_flush_resident"), index_of("shards.submit_refused_closed"), "flush vs a late write"},
    {index_of("shards.expired_at_dispatch"), index_of("shards.dispatched_with_deadline"), "deadline vs completion"},
    {index_of("shards.close_found_inflight"), index_of("shards.close_found_idle"), "shutdown vs work in flight"},
}};
// clang-format on
static_assert(pairs.size() <= 16, "a run's orders are two bits a pair in a 32-bit mask");

/// Bit of pair p in an order mask: `a` then `b` (ab) or `b` then `a` (ba).
constexpr std::uint32_t order_ab(std::size_t p) { return std::uint32_t{1} << (2 * p); }
constexpr std::uint32_t order_ba(std::size_t p) { return std::uint32_t{1} << (2 * p + 1); }

}  // namespace lockstep::probes

/// Marks a probe on runtime `rt`; `name` must be a literal in probes::names.
/// The template argument forces the lookup to happen at compile time.
#define LOCKSTEP_PROBE(rt, name) \
  (rt).probe(std::integral_constant<std::uint16_t, ::lockstep::probes::index_of(name)>::value)
