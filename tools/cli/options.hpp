// tools/cli/options.hpp — the flags shared by run, explore and
// check-determinism, taken as text and checked by resolve() (one line, exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::cli {

// Numbers are taken as text and parsed by parse_u64: CLI11 would accept "-1"
// (wrapping it), " 1" or "0x10" for an unsigned flag.
struct run_options {
  std::string seed_text = "1";        // run
  std::string first_seed_text = "1";  // explore, check-determinism
  std::string seeds_text = "100";
  std::string strategy = "random";
  std::string cores_text = "2";
  std::string pct_depth_text = "3";
  std::string pct_steps_text = "0";
  std::string max_steps_text = "10000000";
  std::string timer_jitter_text;  // "": not given (0, or under --swarm drawn from each seed)
  std::string trace_out;
  std::string record_out;
  std::vector<std::string> files;  // as given: scenario files and directories (expand_files)
  std::string file;                // the one scenario file this run or explore is of
  bool trace_given = false;
  bool record_given = false;
  bool cores_given = false;
  bool first_seed_given = false;
  // --swarm (run, explore): a file's swarm ranges are drawn from each seed (tools/scenario/swarm.hpp).
  bool swarm = false;
  std::string generate;  // explore --generate COMPONENT: each seed draws a whole scenario ("": files)
  // --backend threads (run only): the real pinned-thread backend, its clock
  // real, each virtual ns of the file taking time_scale real ns.
  std::string backend = "sim";
  std::string time_scale_text = "1000";
  bool time_scale_given = false;
  std::string sim_only_flag;  // the first flag given that only the simulator has (--seed, --strategy...)
  std::uint64_t time_scale = 1000;

  std::uint64_t seed = 1;
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 100;
  std::uint64_t last_seed = 100;  // explore, check-determinism: first_seed + seeds - 1, or B of --seeds A..B
  std::uint32_t cores = 2;
  std::uint32_t pct_depth = 3;
  std::uint64_t pct_steps = 0;  // 0: measured from a random run of the same scenario and seed
  std::uint64_t max_steps = 10'000'000;
  // Timers as choices (sim::run_config::timer_ties, timer_jitter_ns): on with
  // --timer-ties and --timer-jitter NS; under --swarm drawn from each seed
  // (swarm_timers) as far as those flags do not say.
  bool timer_ties = false;
  std::optional<std::int64_t> timer_jitter_ns;
};

/// What --swarm draws for seed `seed` when the timer flags do not say: ties
/// on or off, and a jitter bound of 0, 1, 10, 100, 1,000 or 10,000 ns (timers
/// then move across neighbours' deadlines at every scale a file's delays
/// have; 0 and off keep the same-instant races the files set up on purpose).
/// A rerun of the seed draws the same.
struct swarm_timer_draw {
  bool ties = false;
  std::int64_t jitter_ns = 0;
};
swarm_timer_draw swarm_timers(std::uint64_t seed);

/// explore's own flags: workers, budgets, shard, summaries (text until resolve_explore).
struct explore_options {
  std::string jobs_text;  // empty: the machine's cores
  std::string runs_text;
  std::string time_text;
  std::string stop_after_text = "1";
  std::string stop_after_liveness_text;  // "": not given (liveness counts with --stop-after)
  std::string shard_text = "0/1";
  std::string max_records_text = "100";
  std::string record_dir = "results/failures";
  bool record_dir_given = false;
  std::string json_out;
  std::string junit_out;
  bool json_given = false;
  bool junit_given = false;
  bool stop_after_liveness_given = false;
  // --strategy dfs: the bounds of the search and its budget ("none": unbounded).
  std::string preemption_bound_text;  // "": not given (2 unless --delay-bound is)
  std::string delay_bound_text;       // "": not given (none)
  std::string max_schedules_text = "1000000";
  std::string dfs_from_text;  // "": from the root
  std::vector<std::uint32_t> dfs_from;
  bool dpor = false;  // --dpor: partial-order reduction (sim/dfs.hpp), without bounds
  /// The explore flags given that a dfs search has no use for, or the dfs
  /// flags given without it: resolve_explore refuses them by name.
  std::vector<std::string> given;
  std::optional<std::uint32_t> preemption_bound;
  std::optional<std::uint32_t> delay_bound;
  std::uint64_t max_schedules = 1'000'000;  // 0: none

  unsigned jobs = 1;
  std::uint64_t stop_after = 1;  // 0: never stop on failures
  std::optional<std::uint64_t> stop_after_liveness;  // given: liveness failures counted apart (0: never stop on them)
  std::uint64_t max_records = 100;  // records written at most, over every file of one explore
  std::uint64_t time_limit_ms = 0;  // 0: no wall-clock budget
  std::uint64_t shard_index = 0;
  std::uint64_t shard_count = 1;
  bool sharded = false;
};

/// Strict decimal: digits only (no sign, space, base prefix), no overflow, in [min, max].
std::uint64_t parse_u64(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max);
/// A wall-clock duration: digits then ms, s, m or h (1 ms to 8760 h), in ms;
/// an input_error naming `flag` otherwise.
std::uint64_t parse_duration_ms(const std::string& flag, const std::string& text);

/// Parses and range-checks the text flags into their numbers; checks output paths.
void resolve(run_options& o, bool with_seed);

/// Removes an earlier run's --json and --junit (once every input was checked):
/// they are written at the end, and a run killed before it leaves none.
void remove_stale_outputs(const explore_options& e);

/// Checks explore's flags; --runs N narrows the range to its first N seeds.
void resolve_explore(run_options& o, explore_options& e);
/// --strategy dfs's flags, and the explore flags it refuses (part of resolve_explore).
void resolve_dfs(run_options& o, explore_options& e);

/// Adds --jobs, --runs, --time, --stop-after, --shard, --json, --junit.
void add_explore_flags(CLI::App& app, explore_options& e);

/// The scenario files FILE... names, in order: a directory stands for its
/// *.json files sorted by name; throws input_error for a directory without
/// any or one that cannot be listed.
std::vector<std::string> expand_files(const std::vector<std::string>& given);

/// Throws input_error unless `files` holds exactly one file, when `flag`
/// (an output naming one file, like --trace) is given; nullptr: no such flag.
void require_one_file(const std::vector<std::string>& files, const char* flag);

/// Adds FILE..., the seed flags, --strategy, --cores, the PCT flags, --max-steps,
/// --backend, --time-scale, --record.
/// with_dfs: --strategy takes dfs too (explore only).
void add_run_flags(CLI::App& app, run_options& o, bool with_seed, bool with_dfs = false);

/// Adds --swarm (run and explore).
/// explore's --generate COMPONENT (lanes, shards, flights, composed, any).
void add_generate_flag(CLI::App& app, run_options& o);
void add_swarm_flag(CLI::App& app, run_options& o);

/// replay's --backend: sim only, and a threads one refused saying why.
void add_replay_backend_flag(CLI::App& app);

}  // namespace lockstep::cli
