// The simulated programs the CLI can run, by name. Each takes its options as
// a JSON object (validated, with errors naming the JSON pointer) and runs as
// the main fiber of a simulation, checking its oracles with sim::check.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/runtime.hpp"
#include "tools/failure_record.hpp"

namespace lockstep::cli {

struct program {
  std::string description;
  /// Fills defaults and validates; throws input_error via the reader.
  std::function<nlohmann::json(const json_reader& options)> normalise;
  std::function<void(sim::runtime&, const nlohmann::json& options)> run;
};

/// grommet: the shard reactor behind its router (tools/program_grommet.cpp).
program grommet_program();
/// velo: the per-key lane router (tools/program_velo.cpp).
program velo_program();
/// probation: the single-flight table (tools/program_probation.cpp).
program probation_program();

/// Every program, ordered by name.
const std::map<std::string, program>& programs();

}  // namespace lockstep::cli
