// tools/scenario/composed_oracles.hpp — the end-to-end oracle of a composed
// system (composed_driver.hpp), over the four event logs together:
//
//   delivery  every item the lanes admitted is followed through the
//             composition exactly once: the consumer's lookup (with a
//             single-flight table) reads what the flight log says that
//             waiter read, and the same value every other waiter of the
//             flight read; then (with shards) the item is forwarded exactly
//             once — only after an ok answer, with the value the lookup read
//             — or kept back because the lookup answered error or abandoned;
//             a forwarded item the router took ends in exactly one shard
//             outcome (completed, expired or coalesced), one it handed back
//             is in the shard log as handed back. At the end of the run, an
//             item admitted but never through the composition, or forwarded
//             and never out of the shards, is lost. An item whose consumer
//             call failed (behaviour.consumer.outcomes: error, or a panic the
//             consumer contained) ends there: it is neither looked up nor
//             forwarded, and it is not lost.
//
// Each component's own oracles still check its own log; this one checks only
// what passes between them, so a component that loses or duplicates an item
// is caught here even with its own oracles switched off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/composed_events.hpp"
#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

struct composed_oracle_settings {
  bool lookup = false;   ///< a single-flight table is in the composition
  bool forward = false;  ///< shards are in the composition
  std::vector<std::string> enabled;  ///< names from composed_oracle_names()
  /// Lanes, flights and shards all settled: check what must hold at the end too.
  bool end_of_run = true;
};

struct composed_logs {
  const std::vector<lane_event>* lanes = nullptr;
  const std::vector<flight_event>* flights = nullptr;  ///< null without a single-flight table
  const std::vector<shard_event>* shards = nullptr;    ///< null without shards
  const std::vector<composed_event>* composed = nullptr;
};

/// The first violation, or none.
std::optional<violation> check_composed_logs(const composed_logs& logs, const composed_oracle_settings& settings);

}  // namespace lockstep::scenario
