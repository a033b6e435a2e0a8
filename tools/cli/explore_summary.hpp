// tools/cli/explore_summary.hpp — what an explore found, as text, as JSON
// (--json; the input of `lockstep merge`) and as JUnit XML (--junit).
//
// Everything but `wall` is a function of (target, flags, seeds run): the
// same whatever --jobs, and the same for K merged shards as for one machine.
// The JSON keeps every run's trace hash in seed order (one short string a
// run), so a merge can cut the shards at exactly the seed where one machine
// would have stopped and count distinct schedules exactly.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace lockstep::cli {

struct failing_seed {
  std::uint64_t seed = 0;
  std::string kind;     ///< sim::to_string(failure_kind)
  std::string reason;   ///< "oracle NAME", "liveness NAME", else the kind
  std::string message;  ///< the failure's message, without the executor's "[seed ...]" suffix
  std::string record;   ///< where the record was written ("" when it was lost)
  std::string command;  ///< the command that replays the record (or reruns the seed)
  nlohmann::json swarm;  ///< explore --swarm: the values the seed drew, {pointer: value}; null otherwise
};

struct explore_summary {
  /// What ran and how: the scenario (file and document), strategy, cores, pct
  /// settings, max_steps, the seed range and stop_after. Shards must agree on it.
  nlohmann::json config;
  std::string label;  ///< "scenario=FILE"
  std::optional<std::pair<std::uint64_t, std::uint64_t>> shard;  ///< (index, count) when sharded
  std::vector<std::uint64_t> trace_hashes;     ///< one per run, in seed order
  std::vector<std::uint64_t> schedule_hashes;  ///< one per run: its decisions hashed (schedule_hash_of)
  std::uint64_t probe_runs = 0;             ///< sizing runs (pct's k, surw's profile), not counted in runs
  std::vector<std::uint64_t> probe_hits;    ///< one per run: the coverage probes it reached (bit i: probe i)
  std::vector<std::uint32_t> probe_orders;  ///< one per run: the race-pair orders it saw (probes::order_ab/ba)
  std::vector<failing_seed> failures;       ///< in seed order
  /// complete | stop-after | time | SIGINT | SIGTERM
  std::string stopped = "complete";
  double wall_seconds = 0;
  unsigned jobs = 0;

  [[nodiscard]] std::uint64_t runs() const { return trace_hashes.size(); }
  [[nodiscard]] std::uint64_t distinct_schedules() const;
};

/// What the runs of a summary reached (engine/probes.hpp), computed from its
/// per-run masks and the scenario document in its config, so a merge of
/// shards gives what one machine would.
struct coverage {
  std::vector<std::string> components;   ///< lanes, flight, shards: those the scenario has
  std::vector<std::uint64_t> runs_hit;   ///< per probe: how many runs hit it
  std::vector<std::size_t> unreached;    ///< probes of those components that no run hit
  std::vector<std::uint64_t> a_then_b;   ///< per race pair: runs that saw a before a later b
  std::vector<std::uint64_t> b_then_a;   ///< per race pair: runs that saw b before a later a
  std::vector<std::string> must_reach;   ///< the scenario's "must_reach"
  std::vector<std::string> missing;      ///< of those, the probes no run hit: the must_reach verdict fails
  /// Whether probe i belongs to a component the scenario has.
  [[nodiscard]] bool applies(std::size_t probe) const;
};

coverage coverage_of(const explore_summary& s);

/// Whether a failure kind (sim::to_string) is a liveness one (exit code 3:
/// a deadlock, a step or time budget, a liveness oracle).
bool is_liveness_kind(const std::string& kind);

/// When an explore stops on failures, counted in seed order: at the
/// stop_after-th failure of any kind (0: never); or, with
/// --stop-after-liveness M, safety failures and liveness failures counted
/// apart: at the stop_after-th safety one or the M-th liveness one (0:
/// never), so an explore can go on past livelocks to look for a safety bug.
/// explore and merge count alike, so shards merge into one machine's stop.
struct failure_stop {
  std::uint64_t stop_after = 1;
  std::optional<std::uint64_t> stop_after_liveness;
  std::uint64_t safety_seen = 0;
  std::uint64_t liveness_seen = 0;
  /// From a summary's config ("stop_after", and "stop_after_liveness" when given).
  static failure_stop from_config(const nlohmann::json& config);
  /// Counts a failure of `kind`; true when the explore stops at it.
  bool stops_at(const std::string& kind);
};

/// "oracle NAME" / "liveness NAME" from a failure's message, else the kind.
std::string failure_reason(const std::string& kind, const std::string& message);

/// The exit code of the first failure in seed order (with
/// --stop-after-liveness: of the first safety failure if there is one, as
/// liveness is then kept apart); with none, exit_failed when a must_reach
/// probe was never hit, else exit_held.
int exit_code_of(const explore_summary& s);

nlohmann::json to_json(const explore_summary& s);
/// Several files' summaries: {"lockstep_explore_summaries": 1, "summaries": [each as to_json]}.
nlohmann::json to_json(const std::vector<explore_summary>& all);

/// Reads a --json file back: its one summary, or each file's of a several-file
/// explore (strictly: errors name the file and the JSON pointer).
std::vector<explore_summary> read_summaries(const std::string& path);

/// The summary lines every explore and merge ends with; the wall-clock figures
/// are on the one line that starts with "wall:".
void print_summary(std::ostream& os, const explore_summary& s);

/// JUnit XML: one testcase (this scenario under this strategy),
/// one <failure> per failing seed with its seed, reason and replay command.
std::string junit_xml(const explore_summary& s);
/// One test suite, one testcase per summary (per scenario file).
std::string junit_xml(const std::vector<explore_summary>& all);

}  // namespace lockstep::cli
