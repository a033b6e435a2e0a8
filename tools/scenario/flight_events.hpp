// tools/scenario/flight_events.hpp — the single-flight table's event log: what
// the flights did, as the driver observes it from the outside — what join()
// and wait() returned, what the worker it starts does (begin_publishing's
// answer, a panic, stopping early, its resolution going out of scope), a
// waiter's fiber being cancelled — plus the table's own `cancelled` and
// `retired` transitions through the observer the table's constructor takes
// (a public argument, not a hook added for this): both happen under the
// table lock, and only there does their order against joins mean anything. Each event is kept for the oracles
// (flight_oracles.hpp) and written as one trace line ("ev":"flight.…"), so it
// is part of the trace hash.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/scenario/event_log.hpp"

namespace lockstep::scenario {

enum class flight_event_kind : std::uint8_t {
  joined,     ///< join() returned (leader: this waiter must start the work; called_at: log size when it was called)
  led,        ///< the leader's worker started
  published,  ///< the worker's begin_publishing() returned true (answer, value: what it then answers)
  cancelled,  ///< the table's last waiter left before publication (the table's observer)
  answered,   ///< a waiter's wait() returned (outcome, value)
  left,       ///< a waiter's fiber was cancelled after its join: it dropped its share
  panicked,   ///< the worker threw
  abandoned,  ///< the worker ended without answering (panic, stopped early, or cancelled)
  retired,    ///< the resolution let go of the flight (the table's observer, under the table lock)
};

/// answered: what the waiter read.
enum class flight_answer : std::uint8_t { ok, error, abandoned };

struct flight_event {
  flight_event_kind kind = flight_event_kind::joined;
  std::int64_t t = 0;          ///< virtual time, ns
  std::uint64_t key = 0;
  std::uint64_t flight = 0;    ///< the table's flight id (from 1)
  std::uint64_t waiter = 0;    ///< joined, answered, left: run-wide waiter number (from 1)
  bool leader = false;         ///< joined
  std::uint64_t called_at = 0; ///< joined: how many events the log held when join() was called
  flight_answer answer = flight_answer::ok;  ///< answered, published
  std::uint64_t value = 0;     ///< answered (ok, error), published
};

constexpr std::string_view name_of(flight_event_kind k) {
  switch (k) {
    case flight_event_kind::joined: return "flight.joined";
    case flight_event_kind::led: return "flight.led";
    case flight_event_kind::published: return "flight.published";
    case flight_event_kind::cancelled: return "flight.cancelled";
    case flight_event_kind::answered: return "flight.answered";
    case flight_event_kind::left: return "flight.left";
    case flight_event_kind::panicked: return "flight.panicked";
    case flight_event_kind::abandoned: return "flight.abandoned";
    case flight_event_kind::retired: return "flight.retired";
  }
  return "flight.?";
}

constexpr std::string_view name_of(flight_answer a) {
  switch (a) {
    case flight_answer::ok: return "ok";
    case flight_answer::error: return "error";
    case flight_answer::abandoned: return "abandoned";
  }
  return "?";
}

/// The event's fields after "n" in its trace line (fixed order).
inline void write_fields(sim::trace& line, const flight_event& e) {
  line.field_u("key", e.key).field_u("flight", e.flight);
  switch (e.kind) {
    case flight_event_kind::joined:
      line.field_u("waiter", e.waiter).field("leader", e.leader ? "yes" : "no").field_u("called_at", e.called_at);
      break;
    case flight_event_kind::answered:
      line.field_u("waiter", e.waiter).field("answer", name_of(e.answer));
      if (e.answer != flight_answer::abandoned) line.field_u("value", e.value);
      break;
    case flight_event_kind::left:
      line.field_u("waiter", e.waiter);
      break;
    case flight_event_kind::published:
      line.field("answer", name_of(e.answer)).field_u("value", e.value);
      break;
    default:
      break;
  }
}

/// Appends events; in the sim, writes each to the run's trace (event_log.hpp).
/// Never suspends nor throws on a full log: the table's observer calls it under the table lock.
template <class Rt>
using flight_event_log = event_log<Rt, flight_event>;

}  // namespace lockstep::scenario
