// tools/cli/prepared.hpp — what a run runs (a scenario), how a run is configured, and the one place a
// prepared target is run.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/cli/options.hpp"
#include "tools/failure_record.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::cli {

/// What a run runs: a scenario, read and checked.
struct prepared {
  std::shared_ptr<const scenario::scenario> scen;
  std::string name;  // the scenario's file
  /// --swarm on a file with swarm ranges: its document, ranges and all, which
  /// for_seed resolves for each run; null otherwise. `scen` is then the
  /// document resolved for seed 0, with the ranges' document in scen->document.
  std::shared_ptr<const nlohmann::json> swarm_document;
  /// A prepared for one seed of such a file: the values drawn, {pointer: value}; null otherwise.
  nlohmann::json swarm_values;
  /// explore --generate: the component each seed draws a whole scenario of
  /// (generate.hpp), which for_seed draws; "" otherwise. `scen` is then the
  /// scenario drawn for the range's first seed.
  std::string generator;
};

/// `p` for one seed: a swarm file's ranges drawn from it (swarm.hpp), with
/// the values drawn; a generated scenario drawn for it; any other `p` as it is.
prepared for_seed(const prepared& p, std::uint64_t seed);

/// --swarm with one FILE that has no swarm ranges is refused (there is nothing
/// to draw); among several files, those without ranges run as they are.
void check_swarm_files(const run_options& o, const std::vector<std::string>& files);

prepared prepare_scenario(scenario::scenario s);

/// The scenario FILE the flags name (o.file; its system.cores is the default
/// for --cores). Run-time rules are checked here.
prepared prepare(run_options& o);

/// explore --generate: the component's scenarios, one per seed (o.generate).
prepared prepare_generated(run_options& o);

/// Reads and checks every file before the first runs, so bad input in any
/// of them is one line and exit 2 before any output.
void check_every_file(const run_options& o, const std::vector<std::string>& files);

/// One FILE of several, prepared: its options (its own cores unless --cores
/// was given) and its scenario.
struct prepared_file {
  run_options o;
  prepared p;
};

/// prepare() of every file, on up to `jobs` threads at once, each file once;
/// bad input is the first file's in the order given (one line, exit 2,
/// before any output), whatever the threads. A refused thread only means
/// fewer of them.
std::vector<prepared_file> prepare_every_file(const run_options& o, const std::vector<std::string>& files,
                                              unsigned jobs);

sim::run_config config_of(const run_options& o, std::uint64_t seed, sim::trace_mode trace);

/// Runs the scenario once under `c`.
sim::run_result run_once(const prepared& p, const sim::run_config& c);

/// What "distinct schedules" counts: the run's decisions (every pick and draw
/// the strategy made), hashed. Not the trace hash: the trace starts with the
/// seed, so every seed would count as a schedule of its own even under fifo.
inline std::uint64_t schedule_hash_of(const sim::run_result& r) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the decisions' bytes, little-endian
  for (const std::uint32_t d : r.decisions) {
    for (int b = 0; b < 4; ++b) {
      h ^= (d >> (8 * b)) & 0xffU;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

/// `c` after its sizing run, when it needs one (sim::needs_sizing_run): pct's
/// k measured by a random run of the same seed, surw's profile taken from it.
sim::run_config with_sizing_run(const prepared& p, sim::run_config c);

/// What a record ran: the scenario it embeds (checked like a file, errors
/// naming the record and /scenario/...).
prepared prepare_record(const failure_record& rec);

// Runs a record's scenario again, following its recorded decisions.
sim::run_result replay_record(const failure_record& rec, sim::trace_mode trace);

/// Whether a replay reproduced the recorded failure: it failed, not by
/// diverging, with the same trace hash, after following exactly the
/// recorded decisions (a run that fails before using them all is not the
/// recorded run).
bool reproduced(const failure_record& rec, const sim::run_result& r);

}  // namespace lockstep::cli
