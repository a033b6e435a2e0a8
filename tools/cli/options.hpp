// tools/cli/options.hpp — the flags shared by run, explore and
// check-determinism, taken as text and checked by resolve() (one line, exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace lockstep::cli {

// Numbers are taken as text and parsed by parse_u64: CLI11 would accept "-1"
// (wrapping it), " 1" or "0x10" for an unsigned flag.
struct run_options {
  std::string program = "pipeline";
  std::string options_json = "{}";
  std::string seed_text = "1";        // run
  std::string first_seed_text = "1";  // explore, check-determinism
  std::string seeds_text = "100";
  std::string strategy = "random";
  std::string cores_text = "2";
  std::string pct_depth_text = "3";
  std::string pct_steps_text = "0";
  std::string max_steps_text = "10000000";
  std::string trace_out;
  std::string record_out;
  std::string file;  // a scenario file: selects scenario mode
  bool trace_given = false;
  bool record_given = false;
  bool file_given = false;
  bool cores_given = false;
  bool program_given = false;
  bool options_given = false;

  std::uint64_t seed = 1;
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 100;
  std::uint32_t cores = 2;
  std::uint32_t pct_depth = 3;
  std::uint64_t pct_steps = 0;  // 0: measured from a random run of the same program and seed
  std::uint64_t max_steps = 10'000'000;
};

/// Strict decimal: digits only (no sign, space, base prefix), no overflow, in [min, max].
std::uint64_t parse_u64(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max);

/// Parses and range-checks the text flags into their numbers; checks output paths.
void resolve(run_options& o, bool with_seed);

/// Adds FILE, --program, --options, the seed flags, --strategy, --cores, the PCT flags, --max-steps, --record.
void add_run_flags(CLI::App& app, run_options& o, bool with_seed);

}  // namespace lockstep::cli
