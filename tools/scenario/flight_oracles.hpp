// tools/scenario/flight_oracles.hpp — the single-flight table's oracles
// (DESIGN.md §6), as functions of the event log alone (flight_events.hpp):
//
//   one_leader      each flight has exactly one joined waiter that leads it
//                   and at most one worker, and no join starts a flight while
//                   another flight of its key is still in the table;
//   cancel_publish  no publication after a cancellation and no cancellation
//                   after publication began; no waiter reads anything from a
//                   flight cancelled while it still waited;
//   same_value      an answer a waiter reads (not "abandoned") is the one its
//                   flight's worker published (the published event carries
//                   what the worker then answers): never one from a flight
//                   that published nothing; and every waiter that read an
//                   answer from one flight read
//                   the same one;
//   servable        a join called after a flight was cancelled or retired
//                   (after a panic, say) never joins that flight: the key
//                   gets a fresh one;
//   answered        every waiter that joined ends exactly once, answered or
//                   left — checked at the end of the run, after the
//                   liveness budget, so a hung waiter is caught here.
//
// The log is seen from outside the table, so each oracle only claims what
// the log proves: a join is judged by when it was called (called_at), not
// by when its fiber got round to logging it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

struct flight_oracle_settings {
  std::vector<std::string> enabled;  ///< names from flight_oracle_names()
  /// The run is over: check what must hold at the end too.
  bool end_of_run = true;
};

/// The first violation, in log order (then the end-of-run ones), or none.
std::optional<violation> check_flight_log(const std::vector<flight_event>& log, const flight_oracle_settings& settings);

}  // namespace lockstep::scenario
