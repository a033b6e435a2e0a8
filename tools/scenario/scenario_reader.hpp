// tools/scenario/scenario_reader.hpp — reads a scenario file: strict JSON
// (tools/strict_json.hpp), then the JSON Schema (schema_check.hpp), then the
// rules the schema cannot express (a core below system.cores, a range with
// lo <= hi, distinct actor names, steps, behaviour, oracles and expectations
// only for the component the system has, a class below the shards' classes).
// Every error is one cli::input_error line naming the file, the JSON pointer
// and what was expected. Rules that depend on the run (expect only under
// fifo, cores given by --cores) are checked by the CLI: check_run_settings.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// Reads and checks `path`.
scenario read_scenario_file(const std::string& path);

/// Checks `doc` (already parsed strictly); errors name `file` and pointers
/// below `prefix` (a failure record embeds the scenario under /scenario).
scenario read_scenario(const nlohmann::json& doc, const std::string& file, const std::string& prefix = "");

/// read_scenario without the schema check, for a document known to pass it
/// and to hold no swarm range: a swarm file resolved for one seed (the schema
/// typed and bounded each range's values when the file was read, so every
/// value drawn passes it too). The reader's own checks still run.
scenario read_schema_checked_scenario(const nlohmann::json& doc, const std::string& file,
                                      const std::string& prefix = "");

/// The run-time rules: `expect` only under fifo; every actor's core below
/// `cores` (the scenario's own, or --cores). Throws cli::input_error.
void check_run_settings(const scenario& s, const std::string& strategy, std::uint32_t cores,
                        const std::string& prefix = "");

}  // namespace lockstep::scenario
