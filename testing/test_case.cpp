#include "test_case.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "watchdog.hpp"

namespace lockstep::testing {

namespace {

case_outcome replay_case(const std::string& test, const std::string& path, const test_body& body) {
  const test_record rec = read_test_record(path);
  case_outcome out;
  if (rec.test != test) {
    out.report = "lockstep: " + test + ": skipped: LOCKSTEP_REPLAY=" + path + " is a record of " + rec.test + "\n";
    return out;
  }
  const char* trace_path = std::getenv("LOCKSTEP_TRACE");
  const bool traced = trace_path != nullptr && *trace_path != '\0';
  const replay_result r = replay(rec, body, traced ? sim::trace_mode::full : sim::trace_mode::hash);
  out.report = "lockstep: " + test + ": replaying " + path + ": " + std::to_string(rec.result.decisions.size()) +
               " decisions recorded with strategy " + rec.config.strategy + "\n  " + r.summary + "\n";
  if (r.run.failed) {
    out.where = r.run.failed->site;
    out.report += "  failure: " + std::string(sim::to_string(r.run.failed->kind)) + ": " + r.run.failed->message + "\n";
  }
  if (traced) {
    std::ofstream f(trace_path, std::ios::binary | std::ios::trunc);
    f << r.run.trace_text;
    f.flush();
    if (!f) throw bad_input(std::string("LOCKSTEP_TRACE=") + trace_path + ": expected a writable file");
    out.report += "  trace: " + std::string(trace_path) + "\n";
  }
  // Reproduced is a failing test: the bug is there. Diverged fails too: the
  // record no longer says what the code does. Held with the same trace passes.
  out.passed = !r.reproduced && !r.diverged && r.run.ok();
  return out;
}

case_outcome explore_case(const std::string& test, const test_options& o, const test_body& body,
                          const std::string& rerun) {
  const explore_result r = explore(test, o, body);
  case_outcome out;
  out.passed = r.failures.empty();
  if (!r.failures.empty() && r.failures.front().record.result.failed) {
    out.where = r.failures.front().record.result.failed->site;
  }
  for (const found_failure& f : r.failures) {
    out.report += "lockstep: " + test + " failed: " + describe(f.record) + "\n  record: " + f.record_path +
                  "\n  replay: LOCKSTEP_REPLAY=" + shell_quoted(f.record_path) + " " + rerun + "\n";
  }
  if (r.dfs) {
    const dfs_verdict& v = *r.dfs;
    out.report += "lockstep: " + test + ": dfs " +
                  (v.verified ? "verified: " : v.failed ? "failed: " : "not verified (stopped: " + v.stopped + "): ") +
                  std::to_string(v.schedules) + " schedules, " + v.bounds + ", seed " + std::to_string(o.first_seed) +
                  (v.fair_tail_runs > 0 ? ", " + std::to_string(v.fair_tail_runs) + " reached the fair tail" : "") +
                  "\n";
  }
  std::string strategies;
  for (const auto& s : o.strategies) strategies += (strategies.empty() ? "" : ",") + s;
  out.report += "lockstep: " + test + ": " + std::to_string(r.runs) + " runs (" + strategies + ", seeds from " +
                std::to_string(o.first_seed) + "), " + std::to_string(r.failures.size()) + " failed" +
                (r.out_of_time ? "; stopped by the time budget" : "") + "\n";
  return out;
}

}  // namespace

case_outcome run_test_case(const std::string& test, test_options o, const test_body& body,
                           const std::string& rerun) {
  try {
    apply_environment(o);
    const hang_watchdog watchdog(test, rerun, o.hang_limit_s);
    const char* replay_path = std::getenv("LOCKSTEP_REPLAY");
    if (replay_path != nullptr && *replay_path != '\0') return replay_case(test, replay_path, body);
    return explore_case(test, o, body, rerun);
  } catch (const bad_input& e) {
    // The project's rule for bad input: one line, exit 2 (never a silent default).
    std::fprintf(stderr, "%s\n", e.what());
    std::fflush(stderr);
    std::exit(2);
  }
}

}  // namespace lockstep::testing
