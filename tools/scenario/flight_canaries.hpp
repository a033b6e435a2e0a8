// tools/scenario/flight_canaries.hpp — what the single-flight race tests
// (engine/tests/test_single_flight_races.cpp) and the scenario flights driver
// (flights_driver.cpp) share: each flight's story as the table's observer
// reports it, and the ordering oracles checked at the instant each
// transition happens. Their canaries are bugs planted in the real table
// (engine/plant.hpp).
//
// Failure reporting: every broken rule goes to the caller's
// `violate(oracle, message)`. The observer runs under the table lock or in
// destructors, where nothing may throw, so a violate must only record; each
// user reports afterwards (BOOST_TEST in the tests).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/single_flight.hpp"

namespace lockstep::models::probation {

// --- the oracles over the observer's reports ------------------------------------

/// What one flight did, in the order the observer saw it.
template <class K>
struct flight_story {
  K key{};
  int started = 0, cancelled = 0, publishing = 0, answered = 0, abandoned = 0, retired = 0;
};

template <class K>
using flight_log = std::map<std::uint64_t, flight_story<K>>;

/// Records transition `e` of flight `id` (of `key`) and checks it against the
/// flight's story so far and against the other flights of its key.
template <class K, class Violate>
void observe(flight_log<K>& flights, const K& key, std::uint64_t id, flight_event e, Violate&& violate) {
  flight_story<K>& s = flights[id];
  const std::string f = "flight " + std::to_string(id) + " of key " + std::to_string(key) + ": ";
  switch (e) {
    case flight_event::started:
      for (const auto& [other, o] : flights)
        if (other != id && o.key == key && o.started && o.cancelled == 0 && o.retired == 0)
          violate("one flight per key", f + "started while flight " + std::to_string(other) + " still held the key");
      s.key = key;
      ++s.started;
      break;
    case flight_event::cancelled:
      if (s.publishing) violate("no cancellation after publication began", f + "cancelled while publishing");
      ++s.cancelled;
      break;
    case flight_event::publishing:
      if (s.cancelled) violate("no publication after a cancellation", f + "began publishing after it was cancelled");
      ++s.publishing;
      break;
    case flight_event::answered:
      if (!s.publishing || s.cancelled) violate("no publication after a cancellation", f + "answered without winning publication");
      if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
      ++s.answered;
      break;
    case flight_event::abandoned:
      if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
      ++s.abandoned;
      break;
    case flight_event::retired:
      if (s.answered + s.abandoned != 1) violate("one outcome per flight", f + "retired without exactly one outcome");
      ++s.retired;
      break;
  }
}

/// Lives in a request between its join and its waiter guard (made just after
/// the join, so destroyed just before the guard, on every way out):
/// while the request counted as a waiter, its flight cannot have been cancelled.
template <class World>
struct still_counted {
  World& w;
  std::uint64_t flight;
  std::size_t i;
  ~still_counted() {
    if (w.flights[flight].cancelled > 0)
      w.violate("no cancellation under a counted waiter",
                "request " + std::to_string(i) + ": flight " + std::to_string(flight) + " was cancelled while it still counted");
  }
};

}  // namespace lockstep::models::probation
