// The quick start's main job: every scenario of the library holds on a fixed
// seed range; then each planted bug (canaries/) is found by exploration,
// recorded, and replayed to the same bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <vector>

#include <iostream>

#include "engine/plant.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

// What the main job explores: every scenario file of the library (sorted by
// name; a file with `expect` runs under fifo only, as its counts are exact
// there).
struct demo_subject {
  std::string label;
  prepared p;
  std::vector<std::string> strategies;
};

std::vector<demo_subject> demo_subjects(const std::string& library) {
  std::vector<demo_subject> out;
  for (const std::string& file : expand_files({library})) {
    scenario::scenario s = scenario::read_scenario_file(file);
    std::vector<std::string> strategies = s.expect ? std::vector<std::string>{"fifo"}
                                                   : std::vector<std::string>{"random", "pct"};
    out.push_back({file, prepare_scenario(std::move(s)), std::move(strategies)});
  }
  return out;
}

/// One row of the main job's table: a subject under one strategy over seeds
/// 1..seeds. A failure is reported (record written, replay command printed)
/// and ends the demo with its exit code.
int demo_row(const demo_subject& d, const std::string& strategy, std::uint64_t seeds, const std::string& record_dir,
             std::uint64_t& total_runs) {
  run_options o;
  o.strategy = strategy;
  o.cores = d.p.scen->cores;
  std::set<std::uint64_t> schedules;
  const auto started = std::chrono::steady_clock::now();
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    auto c = config_of(o, seed, sim::trace_mode::hash);
    c = describe_and_size(d.p, c);
    const auto r = run_once(d.p, c);
    crash_report::clear();
    if (!r.ok()) {
      std::cout << "demo FAILED: " << d.label << " seed=" << seed << " strategy=" << strategy << std::endl;
      const std::string path = record_dir + "/lockstep-demo-failure-" + std::to_string(seed) + ".json";
      return report_failure(d.p, c, r, path);
    }
    schedules.insert(schedule_hash_of(r));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  total_runs += seeds;
  char line[256];
  std::snprintf(line, sizeof line, "%-44s %-8s %6llu %8d %10zu %9.0f", d.label.c_str(), strategy.c_str(),
                static_cast<unsigned long long>(seeds), 0, schedules.size(), static_cast<double>(seeds) / secs);
  std::cout << line << std::endl;
  return exit_held;
}

/// A failure message without the executor's "[seed .., strategy .., ...]" suffix.
std::string headline_of(const std::string& message) { return message.substr(0, message.rfind(" [seed ")); }

/// A planted bug: explored with random seeds until an oracle catches it,
/// written as a record and replayed from the record alone, byte for byte.
int demo_planted_bug(const std::string& file, const std::string& record_dir) {
  const prepared p = prepare_scenario(scenario::read_scenario_file(file));
  run_options o;
  o.cores = p.scen->cores;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    const auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    const auto r = run_once(p, c);
    crash_report::clear();
    if (r.ok()) continue;
    const std::string path =
        record_dir + "/lockstep-demo-" + std::filesystem::path(file).stem().string() + ".json";
    failure_record rec{c, r, "", p.scen->document, p.name, {}};
    write_failure_record(path, rec);
    const failure_record back = read_failure_record(path);
    const auto again = replay_record(back, sim::trace_mode::hash);
    if (!reproduced(back, again)) {
      std::cout << "demo FAILED: replaying " << path << " did not reproduce the failure byte for byte" << std::endl;
      return exit_nondeterminism;
    }
    std::cout << file << ": caught at seed=" << seed << " (" << sim::to_string(r.failed->kind) << ")\n  "
              << headline_of(r.failed->message) << "\n  record " << path << " replayed: same failure, trace_hash="
              << sim::hash_hex(r.trace_hash) << "\n  replay with: " << replay_command(path) << std::endl;
    return exit_held;
  }
  std::cout << "demo FAILED: 1000 seeds did not expose the planted bug of " << file << std::endl;
  return exit_failed;
}

}  // namespace

// The quick start's main job: explore the whole scenario library over a fixed seed range with random and pct, print a
// table, then show each planted bug in the library's canaries/ caught,
// recorded and replayed.
int cmd_demo(const std::string& record_dir, const std::string& library, const std::string& seeds_text) {
  check_output_dir("--record-dir", record_dir);
  const std::uint64_t seeds = parse_u64("--seeds", seeds_text, 1, 1'000'000);
  std::error_code ec;
  if (!std::filesystem::is_directory(library, ec)) {
    throw input_error(library + ": cannot list the directory: " + (ec ? ec.message() : "not a directory"));
  }
  const std::vector<demo_subject> subjects = demo_subjects(library);
  const std::vector<std::string> canaries = expand_files({library + "/canaries"});
  std::cout << "== the scenario library (" << library << "), seeds 1.." << seeds
            << " (pct rows include the random run that sizes k)" << std::endl;
  char header[256];
  std::snprintf(header, sizeof header, "%-44s %-8s %6s %8s %10s %9s", "scenario", "strategy", "runs",
                "failures", "schedules", "runs/s");
  std::cout << header << std::endl;
  std::uint64_t total = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const demo_subject& d : subjects) {
    for (const std::string& strategy : d.strategies) {
      if (const int rc = demo_row(d, strategy, seeds, record_dir, total); rc != exit_held) return rc;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << total << " runs, 0 failures, " << static_cast<std::uint64_t>(static_cast<double>(total) / secs)
            << " runs/s" << std::endl;
  if (!plant::compiled_in()) {
    std::cout << "== planted bugs: none in this build (configure with -DLOCKSTEP_SELFCHECK=ON, as tools/dev "
                 "demo does, to see each caught)\n"
              << "demo ok: every scenario held on every seed" << std::endl;
    return exit_held;
  }
  std::cout << "== planted bugs (" << library << "/canaries): found, recorded, replayed" << std::endl;
  if (canaries.empty()) {
    std::cout << "demo FAILED: no planted-bug scenario in " << library << "/canaries" << std::endl;
    return exit_failed;
  }
  for (const std::string& file : canaries) {
    if (const int rc = demo_planted_bug(file, record_dir); rc != exit_held) return rc;
  }
  std::cout << "demo ok: every scenario held on every seed; every planted bug was caught and "
               "replayed byte for byte"
            << std::endl;
  return exit_held;
}

}  // namespace lockstep::cli
