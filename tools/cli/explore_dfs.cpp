// lockstep explore FILE... --strategy dfs: for each file, every schedule of
// one seed within the bounds, depth first (sim/dfs.hpp), to the first
// failure, the end of the tree ("verified"), or a budget (--max-schedules,
// --time, a signal: "not verified", with the position --dfs-from resumes at).
//
// --jobs N splits the tree among N threads (at most 64; testing/split_search.hpp):
// the verdict, the failing schedule and its number, the count and the
// position a budget stops at are the same bytes whatever N is (--dpor
// searches on one thread). Only a stop (--time, a signal) depends on timing.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <mutex>

#include "sim/dfs_search.hpp"
#include "testing/split_search.hpp"
#include "tools/crash_report.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/progress_line.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/stop_signals.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::cli {

namespace {
constexpr unsigned max_dfs_threads = 64;
}  // namespace

int explore_dfs(const run_options& options, const explore_options& e, const std::vector<std::string>& files) {
  if (!e.dfs_from_text.empty() && files.size() > 1) {
    throw input_error("--dfs-from: a position in one file's search, expected one scenario FILE with it, found " +
                      std::to_string(files.size()) + " files");
  }
  const std::vector<prepared_file> plan = prepare_every_file(options, files, 1);
  stop_signals::install();
  const auto started = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (e.time_limit_ms > 0) deadline = started + std::chrono::milliseconds(e.time_limit_ms);
  std::string stopped;  // why the explore stopped early: a signal or the time
  const auto should_stop = [&] {
    if (const int sig = stop_signals::received(); sig != 0) stopped = stop_signals::name(sig);
    if (stopped.empty() && deadline && std::chrono::steady_clock::now() >= *deadline) stopped = "time";
    return !stopped.empty();
  };
  const sim::dfs_bounds bounds{e.preemption_bound, e.delay_bound, sim::dfs_bounds{}.fair_after, e.dpor};
  int code = exit_held;
  for (const prepared_file& f : plan) {
    if (!stopped.empty()) {
      std::cout << "not run (stopped: " << stopped << "): " << f.o.file << "\n";
      continue;
    }
    const prepared& p = f.p;
    std::cout << "exploring scenario=" << p.name << " strategy=dfs cores=" << f.o.cores << " seed=" << f.o.first_seed
              << " " << sim::describe(bounds) << std::endl;
    const auto file_started = std::chrono::steady_clock::now();
    const sim::run_config base = config_of(f.o, f.o.first_seed, sim::trace_mode::hash);
    if (!e.dfs_from.empty()) std::cout << "resuming at " << e.dfs_from_text << "\n";
    progress_line progress("scenario=" + p.name + " strategy=dfs", std::nullopt, deadline);
    std::mutex progress_m;
    std::uint64_t ran = 0, failed = 0;
    const testing::split_plan threads{std::clamp(e.jobs, 1U, max_dfs_threads)};
    const testing::split_outcome split = testing::search_dfs_split(
        base, bounds, e.max_schedules, threads,
        [&](const sim::run_config& c) {
          thread_local const bool installed = (crash_report::install_thread(), true);
          (void)installed;
          describe_run(p, c);
          sim::run_result r = run_once(p, c);
          crash_report::clear();
          std::lock_guard lock(progress_m);
          if (!r.ok()) ++failed;
          progress.update(++ran, failed);
          return r;
        },
        should_stop, e.dfs_from);
    progress.clear();
    const sim::dfs_outcome& out = split.outcome;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - file_started).count();
    const std::string counted = std::to_string(out.schedules) + " schedules, " + sim::describe(bounds) +
                                ", seed " + std::to_string(f.o.first_seed);
    std::string tail = " (deepest " + std::to_string(out.deepest) + " decisions";
    if (out.fair_tail_runs > 0) {
      tail += "; " + std::to_string(out.fair_tail_runs) + " schedules reached step " +
              std::to_string(bounds.fair_after) + ", past which each ran round robin without branching";
    }
    if (out.sleep_blocked_runs > 0) {
      tail += "; " + std::to_string(out.sleep_blocked_runs) +
              " ended early: every fiber that could run was asleep, an order already explored";
    }
    if (out.failure && !split.ordered) {
      // Found on another thread past where the stop left the search in order.
      tail += "; found by one of " + std::to_string(threads.threads) +
              " threads while the search stopped: the schedules before it in the tree's order did not all run, "
              "and a search to the end may fail sooner";
    }
    if (!out.failure && !out.exhausted && !stopped.empty() && split.runs > out.schedules) {
      tail += "; " + std::to_string(split.runs - out.schedules) +
              " more ran past that point on other threads and run again when resumed";
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", wall);
    tail += "; " + std::string(seconds) + " s)";
    int rc = exit_held;
    if (out.failure) {
      std::cout << "schedule=" << out.schedules << " ";
      print_result_line(*out.failure);
      // The record and the rerun command carry the search (its bounds, through options.dfs).
      sim::run_config c = base;
      c.strategy = "dfs";
      c.options.dfs = std::make_shared<sim::dfs_tree>(bounds);
      rc = e.max_records == 0 ? report_unrecorded(p, c, *out.failure, "--max-records 0", nullptr)
                              : report_failure(p, c, *out.failure, f.o.record_out, nullptr, e.record_dir);
      std::cout << "failed at schedule " << out.schedules << ": " << counted << tail << "\n";
    } else if (!out.nondeterminism.empty()) {
      std::cout << "FAILED nondeterminism: " << out.nondeterminism << "\n";
      rc = exit_nondeterminism;
    } else if (out.exhausted) {
      std::cout << "verified: " << counted << ", no failure" << tail << "\n";
    } else {
      const std::string why = stopped.empty() ? "--max-schedules " + std::to_string(e.max_schedules) : stopped;
      std::cout << "not verified: stopped (" << why << ") after " << counted << ", no failure in those" << tail << "\n";
      sim::run_config c = base;
      c.options.dfs = std::make_shared<sim::dfs_tree>(bounds);
      if (bounds.dpor) {
        std::cout << "a search with --dpor cannot resume; rerun it without a budget: " << rerun_command(p, c) << "\n";
      } else {
        // The command that searched, budget and all, starting where this one stood.
        std::string resume = rerun_command(p, c);
        resume = resume.substr(0, resume.rfind(" --max-schedules ")) + " --max-schedules " +
                 std::to_string(e.max_schedules) + " --dfs-from " + (out.position.empty() ? "''" : out.position);
        std::cout << "resume with: " << resume << "\n";
      }
    }
    std::cout.flush();
    if (code == exit_held) code = rc;
  }
  if (code == exit_held && stopped == stop_signals::name(SIGINT)) code = exit_interrupted(SIGINT);
  if (code == exit_held && stopped == stop_signals::name(SIGTERM)) code = exit_interrupted(SIGTERM);
  return code;
}

}  // namespace lockstep::cli
