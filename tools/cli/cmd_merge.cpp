// lockstep merge RESULTS.json...: the --json summaries of `explore --shard
// I/N` (one per shard, any order) combined into the summary one machine
// exploring the whole range would have written, wall-clock fields aside.
//
// Shard I ran the seeds first+I, first+I+N, ...; each summary lists one trace
// hash per run in seed order, so the merge walks the range seed by seed,
// taking each from its shard, and stops where one machine would have: at the
// stop_after-th failure, at the range's end, or where a shard stopped early
// (--time, a signal). Each shard stops at its own stop_after-th failure,
// which is never before the range's stop_after-th, so the walk never runs
// short of a shard's results before that point.
//
// An explore of several FILEs writes one summary per file in one --json; the
// merge takes each shard's summaries apart and merges those of each file (the
// same config: scenario, strategy, settings, seed range), in the order the
// first input lists the files, and writes them as explore would have.
#include <iostream>
#include <set>

#include "sim/strategy.hpp"
#include "tools/cli/explore_runner.hpp"
#include "tools/cli/explore_summary.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

/// The first key (in order) where two configs differ, as a JSON pointer.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  for (const auto& k : keys) {
    if (!a.contains(k) || !b.contains(k) || a[k] != b[k]) return "/config/" + pointer_token(k);
  }
  return "/config";
}

struct shard_input {
  std::string path;
  explore_summary s;
};

/// Checks that the inputs are the N shards of one explore, each once; returns them by index.
std::vector<const shard_input*> shards_by_index(const std::vector<shard_input>& in) {
  const shard_input& a = in.front();
  const std::uint64_t count = a.s.shard ? a.s.shard->second : 1;
  std::vector<const shard_input*> by_index(count, nullptr);
  for (const shard_input& x : in) {
    if (x.s.config != a.s.config) {
      const std::string where = first_difference(a.s.config, x.s.config);
      throw input_error("merge: " + x.path + ": " + where + ": expected the same as in " + a.path +
                        " (shards of one explore share scenario, strategy, settings and seed range), "
                        "found " + shown(x.s.config.value(where.substr(8), nlohmann::json())));
    }
    const std::uint64_t n = x.s.shard ? x.s.shard->second : 1;
    const std::uint64_t i = x.s.shard ? x.s.shard->first : 0;
    if (n != count) {
      throw input_error("merge: " + x.path + ": /shard/count: expected " + std::to_string(count) + " as in " +
                        a.path + ", found " + std::to_string(n));
    }
    if (by_index[i] != nullptr) {
      throw input_error("merge: " + x.path + ": /shard/index: expected each shard once, found shard " +
                        std::to_string(i) + "/" + std::to_string(count) + " again (also " + by_index[i]->path + ")");
    }
    by_index[i] = &x;
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    if (by_index[i] == nullptr) {
      throw input_error("merge: expected one summary for each shard 0.." + std::to_string(count - 1) + " of " +
                        std::to_string(count) + ", found none for shard " + std::to_string(i));
    }
  }
  return by_index;
}

/// The walk described above.
explore_summary walk(const std::vector<const shard_input*>& shards) {
  const explore_summary& a = shards.front()->s;
  explore_summary m;
  m.config = a.config;
  m.label = a.label;
  const std::uint64_t first = a.config["seeds"]["first"].get<std::uint64_t>();
  const std::uint64_t last = a.config["seeds"]["last"].get<std::uint64_t>();
  failure_stop stop = failure_stop::from_config(a.config);
  const std::uint64_t n = shards.size();
  for (std::uint64_t i = 0; i < n; ++i) {
    const shard_input& x = *shards[i];
    const seed_slice slice{first, last, i, n};
    const std::uint64_t size = slice.empty() ? 0 : slice.last_position() + 1;
    if (x.s.runs() > size || (x.s.stopped == "complete" && x.s.runs() != size)) {
      throw input_error("merge: " + x.path + ": /trace_hashes: expected " + std::to_string(size) +
                        " runs for shard " + std::to_string(i) + "/" + std::to_string(n) + " of seeds " +
                        std::to_string(first) + ".." + std::to_string(last) + ", found " + std::to_string(x.s.runs()));
    }
    m.wall_seconds = std::max(m.wall_seconds, x.s.wall_seconds);  // the shards ran side by side
    m.jobs += x.s.jobs;
  }
  std::vector<std::size_t> run_at(n, 0), failure_at(n, 0);
  for (std::uint64_t seed = first, k = 0;; ++seed, ++k) {
    const std::uint64_t i = k % n;
    const shard_input& x = *shards[i];
    if (run_at[i] == x.s.runs()) {
      m.stopped = x.s.stopped;  // it stopped early (time, a signal): one machine's run would end here too
      break;
    }
    m.schedule_hashes.push_back(x.s.schedule_hashes[run_at[i]]);
    m.probe_hits.push_back(x.s.probe_hits[run_at[i]]);
    m.probe_orders.push_back(x.s.probe_orders[run_at[i]]);
    m.trace_hashes.push_back(x.s.trace_hashes[run_at[i]++]);
    const auto& fs = x.s.failures;
    if (failure_at[i] < fs.size() && fs[failure_at[i]].seed < seed) {
      throw input_error("merge: " + x.path + ": /failing_seeds/" + std::to_string(failure_at[i]) +
                        "/seed: expected a seed of shard " + std::to_string(i) + "/" + std::to_string(n) +
                        ", found " + std::to_string(fs[failure_at[i]].seed));
    }
    if (failure_at[i] < fs.size() && fs[failure_at[i]].seed == seed) {
      m.failures.push_back(fs[failure_at[i]++]);
      if (stop.stops_at(m.failures.back().kind)) {
        m.stopped = "stop-after";
        break;
      }
    }
    if (seed == last) {
      m.stopped = "complete";
      break;
    }
  }
  // The runs that made a sizing run first: pct's unless --pct-steps gave k,
  // surw's always; under the portfolio, the seeds that fell to those.
  sim::strategy_options sizing;
  sizing.pct_steps = a.config["pct_steps"].get<std::uint64_t>();
  const std::string strategy = a.config["strategy"].get<std::string>();
  for (std::uint64_t k = 0; k < m.runs(); ++k) {
    const std::uint64_t seed = first + k;
    const std::string s = strategy == "portfolio" ? std::string(sim::portfolio_strategy(seed)) : strategy;
    m.probe_runs += sim::needs_sizing_run(s, sizing) ? 1 : 0;
  }
  return m;
}

}  // namespace

int cmd_merge(const std::vector<std::string>& inputs, const explore_options& out) {
  if (out.json_given) check_output_path("--json", out.json_out);
  if (out.junit_given) check_output_path("--junit", out.junit_out);
  // Each input's summaries, grouped by file: group g holds every input's summary of the g-th file.
  std::vector<std::vector<shard_input>> groups;
  std::size_t files = 0;
  for (const std::string& path : inputs) {
    std::vector<explore_summary> got = read_summaries(path);
    if (groups.empty()) {
      files = got.size();
      groups.resize(files);
    } else if (got.size() != files) {
      throw input_error("merge: " + path + ": expected the summaries of " + std::to_string(files) + " scenario file" +
                        (files == 1 ? "" : "s") + " as in " + inputs.front() + ", found " + std::to_string(got.size()));
    }
    for (std::size_t g = 0; g < files; ++g) {
      // The g-th file of this input must be the g-th of the first (explore runs FILEs in the order given).
      if (!groups[g].empty() && got[g].config != groups[g].front().s.config) {
        const std::string where = first_difference(groups[g].front().s.config, got[g].config);
        throw input_error("merge: " + path + ": " + (files == 1 ? "" : "/summaries/" + std::to_string(g)) + where +
                          ": expected the same as in " + groups[g].front().path +
                          " (shards of one explore share scenario, strategy, settings and seed range), found " +
                          shown(got[g].config.value(where.substr(8), nlohmann::json())));
      }
      groups[g].push_back({path, std::move(got[g])});
    }
  }
  std::vector<explore_summary> merged;
  for (const auto& group : groups) merged.push_back(walk(shards_by_index(group)));
  std::cout << "merged " << inputs.size() << " shard" << (inputs.size() == 1 ? "" : "s")
            << (files == 1 ? "" : " of " + std::to_string(files) + " scenario files") << std::endl;
  int code = exit_held;
  for (const explore_summary& m : merged) {
    const int rc = finish_summary(m, true);
    if (code == exit_held) code = rc;  // as explore: the first file's that did not hold
  }
  const bool written = write_outputs(out, merged, files > 1);
  return code == exit_held && !written ? exit_bad_input : code;
}

}  // namespace lockstep::cli
