// lockstep explore FILE...: many seeds of each scenario under one strategy,
// every file's seeds on one pool of --jobs threads (explore_runner.hpp),
// within budgets (--seeds A..B, --runs, --time, --stop-after, a signal), one
// shard of the range (--shard I/N), each file ending with its summary;
// --json and --junit hold every file's.
//
// Outcomes are taken in seed order on this thread: failures are printed and
// their records written in seed order, and the summary counts exactly the
// seeds up to where the explore stopped, so all of it is the same whatever
// --jobs is. Only the progress line (a terminal only) and the wall: line
// depend on the clock.
#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>

#include "tools/cli/explore_runner.hpp"
#include "tools/cli/explore_summary.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/progress_line.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/stop_signals.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/exit_codes.hpp"
#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

/// What one explore shares across its files.
struct explore_session {
  std::uint64_t recorded = 0;    ///< failure records written (at most --max-records)
  std::uint64_t unrecorded = 0;  ///< failures past --max-records, printed with their rerun commands
};

nlohmann::json config_json(const prepared& p, const run_options& o, const explore_options& e) {
  nlohmann::json c;
  c["scenario"] = p.name;
  c["scenario_document"] = p.scen->document;  // the same file name on two machines may hold two scenarios
  c["strategy"] = o.strategy;
  c["cores"] = o.cores;
  c["pct_depth"] = o.pct_depth;
  c["pct_steps"] = o.pct_steps;
  c["max_steps"] = o.max_steps;
  c["seeds"] = {{"first", o.first_seed}, {"last", o.last_seed}};
  c["stop_after"] = e.stop_after;
  if (e.stop_after_liveness) c["stop_after_liveness"] = *e.stop_after_liveness;  // absent: counted together
  if (p.swarm_document) c["swarm"] = true;  // each seed drew its own configuration from the ranges
  // As given (absent: not given); shards that differ in them do not merge.
  if (o.timer_ties) c["timer_ties"] = true;
  if (o.timer_jitter_ns) c["timer_jitter_ns"] = *o.timer_jitter_ns;
  if (!p.generator.empty()) c["generate"] = p.generator;  // each seed drew its whole scenario; the document is the first seed's
  return c;
}

/// A failure message without the executor's "[seed .., strategy .., ...]" suffix.
std::string headline(const std::string& message) { return message.substr(0, message.rfind(" [seed ")); }

/// Prints one failing seed as explore always has (its result line, FAILED,
/// the record and the replay command) and returns its summary entry.
failing_seed report(const prepared& p, const run_options& o, const explore_options& e, explore_session& session,
                    const failed_run& f) {
  std::cout << "seed=" << f.config.seed << " ";
  print_result_line(f.result);
  written_record w;
  if (session.recorded < e.max_records) {
    ++session.recorded;
    (void)report_failure(p, f.config, f.result, o.record_out, &w, e.record_dir);
  } else {
    ++session.unrecorded;
    (void)report_unrecorded(p, f.config, f.result, "--max-records " + std::to_string(e.max_records) + " reached", &w);
  }
  const std::string kind(sim::to_string(f.result.failed->kind));
  const std::string message = headline(f.result.failed->message);
  failing_seed out{f.config.seed, kind, failure_reason(kind, message), message, w.path, w.command, {}};
  out.swarm = for_seed(p, f.config.seed).swarm_values;
  return out;
}

}  // namespace

bool write_outputs(const explore_options& e, const std::vector<explore_summary>& all, bool several,
                   const std::vector<std::string>& not_run) {
  bool ok = true;
  const auto put = [&](const char* flag, const std::string& path, const std::string& text) {
    const std::string why = write_output_file(path, text);
    if (why.empty()) return;
    std::cerr << "lockstep: " << flag << " " << printable(path, 200) << ": not written: " << why << "\n";
    ok = false;
  };
  if (e.json_given) {
    nlohmann::json j = several ? to_json(all) : to_json(all.front());
    if (several && !not_run.empty()) j["not_run"] = not_run;
    // replace: a message with bytes that are not UTF-8 must not lose the summary.
    put("--json", e.json_out, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (e.junit_given) put("--junit", e.junit_out, junit_xml(all));
  return ok;
}

int finish_summary(const explore_summary& s, bool outputs_written) {
  print_summary(std::cout, s);
  const int code = exit_code_of(s);
  if (code == exit_held && s.stopped == "complete") {
    std::cout << "all " << s.runs() << " seeds held ("
              << static_cast<std::uint64_t>(static_cast<double>(s.runs()) / (s.wall_seconds > 0 ? s.wall_seconds : 1e-9))
              << " runs/s)\n";
  }
  std::cout.flush();
  return code == exit_held && !outputs_written ? exit_bad_input : code;
}

namespace {

/// "exploring scenario=..." for one file.
void print_header(const prepared_file& f, const explore_options& e) {
  std::cout << "exploring scenario=" << f.p.name << " strategy=" << f.o.strategy << " cores=" << f.o.cores
            << " seeds=" << f.o.first_seed << ".." << f.o.last_seed;
  if (e.sharded) std::cout << " shard=" << e.shard_index << "/" << e.shard_count;
  if (f.p.swarm_document) std::cout << " swarm";
  if (f.o.timer_ties) std::cout << " timer_ties";
  if (f.o.timer_jitter_ns) std::cout << " timer_jitter_ns=" << *f.o.timer_jitter_ns;
  std::cout << std::endl;
}

/// One file's part of the explore, to its summary (printed by the caller);
/// nothing when a stop came before any of its runs finished. `begun`: its
/// header is already printed.
/// Its wall time counts from `started` (the explore's start for the first
/// file, the previous file's end for the others: the pool ran ahead on it
/// meanwhile), so the files' walls add up to the explore's.
std::optional<explore_summary> explore_file(const prepared_file& f, const explore_options& e,
                                            explore_session& session, explore_runner& runner,
                                            std::chrono::steady_clock::time_point started,
                                            std::optional<std::chrono::steady_clock::time_point> deadline,
                                            bool begun) {
  const run_options& o = f.o;
  const prepared& p = f.p;
  explore_summary s;
  s.config = config_json(p, o, e);
  s.label = "scenario=" + p.name;
  if (e.sharded) s.shard = std::pair{e.shard_index, e.shard_count};
  s.jobs = e.jobs;
  const seed_slice slice{o.first_seed, o.last_seed, e.shard_index, e.shard_count};

  // The header is printed at once, or after a stop at the file's first outcome.
  const auto begin = [&] {
    if (begun) return;
    begun = true;
    print_header(f, e);
  };
  if (runner.stop_reason().empty()) begin();

  std::optional<std::uint64_t> planned;
  // An open range (A..) has no planned total, only --time's deadline if any.
  if (!slice.empty() && o.last_seed != UINT64_MAX) planned = slice.last_position() + 1;
  progress_line progress(s.label + " strategy=" + o.strategy, planned, deadline);

  bool stopped_after = false;
  failure_stop stop = failure_stop::from_config(s.config);
  seed_outcome out;
  for (;;) {
    const auto got = runner.next(out, std::chrono::milliseconds(100));
    if (got == explore_runner::poll::end) break;
    if (got == explore_runner::poll::outcome) {
      begin();
      s.trace_hashes.push_back(out.trace_hash);
      s.schedule_hashes.push_back(out.schedule_hash);
      s.probe_hits.push_back(out.probe_hits);
      s.probe_orders.push_back(out.probe_orders);
      if (out.probed) ++s.probe_runs;
      if (out.failure) {
        progress.clear();
        s.failures.push_back(report(p, o, e, session, *out.failure));
        if (stop.stops_at(s.failures.back().kind)) {
          stopped_after = true;
          runner.drop_target();  // later seeds' outcomes are dropped: one machine stops here too
          break;
        }
      }
    }
    runner.poll_stop();  // the workers check it between runs; this covers a pool that waits on us
    progress.update(s.runs(), s.failures.size());
  }
  progress.clear();
  if (!begun) return std::nullopt;
  // A budget that ran out as the last seed finished stopped nothing.
  if (stopped_after) {
    s.stopped = "stop-after";
  } else if (runner.exhausted()) {
    s.stopped = "complete";
  } else {
    s.stopped = runner.stop_reason();
  }
  s.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return s;
}

}  // namespace

int cmd_explore(run_options o, explore_options e) {
  resolve(o, false);
  resolve_explore(o, e);
  // --generate: one explore of drawn scenarios, named like a file.
  const std::vector<std::string> files =
      o.generate.empty() ? expand_files(o.files) : std::vector<std::string>{"generated-" + o.generate};
  require_one_file(files, o.record_given ? "--record" : nullptr);
  if (o.strategy == "dfs") return explore_dfs(o, e, files);
  std::vector<prepared_file> plan;
  if (o.generate.empty()) {
    check_swarm_files(o, files);
    plan = prepare_every_file(o, files, e.jobs);
  } else {
    prepared_file g{o, {}};
    g.p = prepare_generated(g.o);
    plan.push_back(std::move(g));
  }
  remove_stale_outputs(e);
  // Before the first line: whoever sees it may signal, and the signal must stop cleanly.
  stop_signals::install();
  // --time is the whole explore's budget, however many files share it.
  auto started = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (e.time_limit_ms > 0) deadline = started + std::chrono::milliseconds(e.time_limit_ms);

  std::vector<explore_target> targets;
  for (const prepared_file& f : plan) {
    targets.push_back({&f.p, &f.o, seed_slice{f.o.first_seed, f.o.last_seed, e.shard_index, e.shard_count}});
  }
  // Polled by every worker between runs, so a stop comes on time even when
  // this thread waits for a CPU behind a thousand workers.
  const auto should_stop = [deadline]() -> std::string {
    if (const int sig = stop_signals::received(); sig != 0) return stop_signals::name(sig);
    if (deadline && std::chrono::steady_clock::now() >= *deadline) return "time";
    return "";
  };
  // The first file's header before any worker starts: a seed that crashes
  // the process must find what came before it printed.
  if (!plan.empty()) print_header(plan.front(), e);
  explore_runner runner(std::move(targets), e.jobs, should_stop);
  if (!runner.refused().empty()) {
    // Said once, on stderr: the results are those any --jobs gives.
    std::cerr << "lockstep: --jobs " << e.jobs << ": the system refused threads past " << runner.jobs_started()
              << " (" << runner.refused() << "); running on " << runner.jobs_running()
              << ", leaving memory for the runs\n";
  }

  std::vector<explore_summary> all;
  std::vector<std::string> not_run;  // the files a stop (--time, a signal) came before
  explore_session session;
  int code = exit_held;
  for (const prepared_file& f : plan) {
    const bool first = &f == &plan.front();
    std::optional<explore_summary> s = explore_file(f, e, session, runner, started, deadline, first);
    runner.next_target();
    started = std::chrono::steady_clock::now();
    if (!s) {
      not_run.push_back(f.o.file);
      std::cout << "not run (stopped: " << runner.stop_reason() << "): " << f.o.file << "\n";
      continue;
    }
    all.push_back(std::move(*s));
    // The outputs are written once, after the last file: here only the text.
    const int rc = finish_summary(all.back(), true);
    // The exit code is the first file's that did not hold.
    if (code == exit_held) code = rc;
  }
  // A stop by a signal with nothing found is not "held": a CI job cancelled
  // mid-explore must not pass. It exits as a shell reports the signal.
  const std::string stopped = runner.stop_reason();
  if (code == exit_held && stopped == stop_signals::name(SIGINT)) code = exit_interrupted(SIGINT);
  if (code == exit_held && stopped == stop_signals::name(SIGTERM)) code = exit_interrupted(SIGTERM);
  if (session.unrecorded > 0) {
    std::cout << session.unrecorded << " failures past --max-records " << e.max_records
              << " have no record; each one's rerun command is printed with it\n";
  }
  const bool written = write_outputs(e, all, files.size() > 1, not_run);
  return code == exit_held && !written ? exit_bad_input : code;
}

}  // namespace lockstep::cli
