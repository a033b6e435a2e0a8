// tools/cli/perfetto.hpp — a run's trace (JSON Lines, sim/trace.hpp) as
// Chrome trace-event JSON (the "JSON Object Format"), which ui.perfetto.dev
// and chrome://tracing open: one track per fiber (pid 1), one per key (pid 2),
// over virtual time, the failure as a global instant.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/executor.hpp"

namespace lockstep::cli {

struct perfetto_source {
  std::string label;  ///< what ran, e.g. "scenario=FILE seed=N strategy=S" (in otherData)
  std::optional<sim::failure> failed;  ///< the run's failure: its message goes on the failure instant
};

/// The whole export: deterministic bytes for deterministic input (keys in a
/// fixed order, timestamps as exact decimals, nothing from a hash table).
/// Throws std::runtime_error on a line that is not the trace's JSON.
std::string perfetto_json(std::string_view trace_jsonl, const perfetto_source& source);

}  // namespace lockstep::cli
