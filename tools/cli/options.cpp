#include "tools/cli/options.hpp"

#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

std::uint64_t parse_u64(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max) {
  const std::string expected = flag + ": expected a decimal integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", found '" + printable(text, max_shown_chars) + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) throw input_error(expected);
  std::uint64_t v = 0;
  for (char c : text) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) throw input_error(expected);
    v = v * 10 + digit;
  }
  if (v < min || v > max) throw input_error(expected);
  return v;
}

void resolve(run_options& o, bool with_seed) {
  if (with_seed) {
    o.seed = parse_u64("--seed", o.seed_text, 0, UINT64_MAX);
  } else {
    o.first_seed = parse_u64("--first-seed", o.first_seed_text, 0, UINT64_MAX);
    o.seeds = parse_u64("--seeds", o.seeds_text, 1, std::uint64_t{1} << 40);
    // The last seed is first + seeds - 1: it must not wrap past 2^64 - 1.
    if (o.first_seed > UINT64_MAX - (o.seeds - 1)) {
      throw input_error("--first-seed " + o.first_seed_text + " with --seeds " + o.seeds_text +
                        ": expected a range ending at most at 18446744073709551615, found one past it");
    }
  }
  o.cores = static_cast<std::uint32_t>(parse_u64("--cores", o.cores_text, 1, 64));
  o.pct_depth = static_cast<std::uint32_t>(parse_u64("--pct-depth", o.pct_depth_text, 1, 64));
  o.pct_steps = parse_u64("--pct-steps", o.pct_steps_text, 0, UINT64_MAX);
  o.max_steps = parse_u64("--max-steps", o.max_steps_text, 1, UINT64_MAX);
  if (o.trace_given) check_output_path("--trace", o.trace_out);
  if (o.record_given) check_output_path("--record", o.record_out);
}

void add_run_flags(CLI::App& app, run_options& o, bool with_seed) {
  app.add_option("file", o.file, "a scenario file (JSON, scenarios/README.md); instead of --program");
  app.add_option("--program", o.program, "simulated program (see `lockstep programs`)");
  app.add_option("--options", o.options_json, "the program's options as a JSON object");
  if (with_seed) {
    app.add_option("--seed", o.seed_text, "seed of the run (decimal, 0 to 2^64-1)");
  } else {
    app.add_option("--first-seed", o.first_seed_text, "first seed (decimal)");
    app.add_option("--seeds", o.seeds_text, "how many seeds (1 to 2^40)");
  }
  app.add_option("--strategy", o.strategy, "random | pct | fifo")
      ->check(CLI::IsMember({"random", "pct", "fifo"}));
  app.add_option("--cores", o.cores_text, "simulated cores (1 to 64)");
  app.add_option("--pct-depth", o.pct_depth_text, "PCT bug depth d (d-1 priority change points; 1 to 64)");
  app.add_option("--pct-steps", o.pct_steps_text,
                 "PCT: steps k the change points are drawn from (default 0: the length of a random run "
                 "of the same program and seed, so change points land inside the run)");
  app.add_option("--max-steps", o.max_steps_text, "step budget (a livelock past it; at least 1)");
  app.add_option("--record", o.record_out,
                 "where to write the failure record (default: lockstep-failure-PROGRAM-SEED.json here; for a "
                 "scenario, results/failures/FILE-STRATEGY-SEED.json)");
}

}  // namespace lockstep::cli
