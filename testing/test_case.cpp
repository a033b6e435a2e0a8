#include "test_case.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "shrink.hpp"
#include "tools/exit_codes.hpp"
#include "watchdog.hpp"

namespace lockstep::testing {

namespace {

/// LOCKSTEP_REPLAY_CONTINUE: "1" continues a replay past the record, "0" or
/// unset does not; anything else is refused.
bool replay_continues() {
  const char* v = std::getenv("LOCKSTEP_REPLAY_CONTINUE");
  if (v == nullptr || *v == '\0' || std::string(v) == "0") return false;
  if (std::string(v) == "1") return true;
  throw bad_input(std::string("LOCKSTEP_REPLAY_CONTINUE=\"") + v + "\": expected 1 (continue past the record) or 0");
}

/// A record beside `path` (X.json -> X<suffix>), never over it.
std::string sibling_path(const std::string& path, const std::string& suffix) {
  const std::string stem = path.size() > 5 && path.ends_with(".json") ? path.substr(0, path.size() - 5) : path;
  return stem + suffix;
}

/// Where a continued run that fails keeps its own record (the CLI's replay
/// --continue does the same).
std::string continued_path(const std::string& path) { return sibling_path(path, "-continued.json"); }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

case_outcome replay_case(const std::string& test, const std::string& path, const test_record& rec,
                         const test_body& body, const std::string& rerun) {
  const bool continuing = replay_continues();
  case_outcome out;
  out.replayed = true;
  if (rec.test != test) {
    out.report = "lockstep: " + test + ": skipped: LOCKSTEP_REPLAY=" + path + " is a record of " + rec.test + "\n";
    return out;
  }
  const char* trace_path = std::getenv("LOCKSTEP_TRACE");
  const bool traced = trace_path != nullptr && *trace_path != '\0';
  const sim::trace_mode mode = traced ? sim::trace_mode::full : sim::trace_mode::hash;
  const replay_result r = continuing ? replay_continuing(rec, body, mode) : replay(rec, body, mode);
  out.report = "lockstep: " + test + ": replaying " + path + ": " + std::to_string(rec.result.decisions.size()) +
               " decisions recorded with strategy " + rec.config.strategy +
               (continuing ? ", continuing past them (LOCKSTEP_REPLAY_CONTINUE=1)" : "") + "\n  " + r.summary + "\n";
  if (r.run.failed) {
    out.where = r.run.failed->site;
    out.report += "  failure: " + std::string(sim::to_string(r.run.failed->kind)) + ": " + r.run.failed->message + "\n";
  }
  if (continuing && r.run.failed && !r.reproduced) {
    // A new failure: its own record, which replays it exactly.
    test_record next = rec;
    next.result = r.run;
    const std::string next_path = continued_path(path);
    write_test_record(next_path, next);
    out.report += "  record: " + next_path + "\n  replay: LOCKSTEP_REPLAY=" + shell_quoted(next_path) + " " + rerun + "\n";
  }
  if (traced) {
    std::ofstream f(trace_path, std::ios::binary | std::ios::trunc);
    f << r.run.trace_text;
    f.flush();
    if (!f) throw bad_input(std::string("LOCKSTEP_TRACE=") + trace_path + ": expected a writable file");
    out.report += "  trace: " + std::string(trace_path) + "\n";
  }
  // Reproduced is a failing test: the bug is there. Diverged fails too: the
  // record no longer says what the code does. Held with the same trace passes;
  // continuing, a run that held passes wherever it left the record.
  out.passed = continuing ? r.run.ok() : !r.reproduced && !r.diverged && r.run.ok();
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
    out.report += "lockstep: " + test + " failed: " + describe(f.record) +
                  (f.record.input.empty() ? "" : "\n  input: " + f.record.input) + "\n  record: " + f.record_path +
                  "\n  replay: LOCKSTEP_REPLAY=" + shell_quoted(f.record_path) + " " + rerun + "\n";
  }
  if (!r.failures.empty() && o.shrink_runs > 0 && !r.failures.front().record_path.empty()) {
    // The first failure, with fewer preemptions if it can have them: the
    // schedule a reader follows most easily.
    const found_failure& f = r.failures.front();
    const shrink_result s = shrink(f.record, body, o.shrink_runs);
    if (s.shrunk) {
      const std::string path = sibling_path(f.record_path, "-shrunk.json");
      write_test_record(path, s.record);
      out.report += "  shrunk: " + std::to_string(s.preemptions_before) + " -> " + std::to_string(s.preemptions_after) +
                    " preemptions in " + std::to_string(s.runs) + " runs, the same failure: " +
                    std::string(sim::to_string(s.record.result.failed->kind)) + ": " +
                    first_line(s.record.result.failed->message) + "\n  shrunk record: " + path +
                    "\n  shrunk replay: LOCKSTEP_REPLAY=" + shell_quoted(path) + " " + rerun + "\n";
    }
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

std::optional<case_outcome> replay_property_case(const std::string& test, const case_of_input& case_of,
                                                 const std::string& rerun) {
  const char* replay_path = std::getenv("LOCKSTEP_REPLAY");
  if (replay_path == nullptr || *replay_path == '\0') return std::nullopt;
  try {
    const test_record rec = read_test_record(replay_path);
    if (rec.test != test) return replay_case(test, replay_path, rec, nullptr, rerun);  // skipped: another test's
    std::optional<test_body> body = case_of(rec.input);
    if (!body) {
      throw bad_input(std::string(replay_path) + ": /input: expected a case that " + test +
                      " can rebuild, found \"" + rec.input + "\"");
    }
    test_options o;
    apply_environment(o);
    const hang_watchdog watchdog(test, rerun, o.hang_limit_s);
    return replay_case(test, replay_path, rec, *body, rerun);
  } catch (const bad_input& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::fflush(stderr);
    std::exit(cli::exit_bad_input);
  }
}

case_outcome run_test_case(const std::string& test, test_options o, const test_body& body,
                           const std::string& rerun) {
  try {
    apply_environment(o);
    const hang_watchdog watchdog(test, rerun, o.hang_limit_s);
    const char* replay_path = std::getenv("LOCKSTEP_REPLAY");
    if (replay_path != nullptr && *replay_path != '\0') {
      return replay_case(test, replay_path, read_test_record(replay_path), body, rerun);
    }
    return explore_case(test, o, body, rerun);
  } catch (const bad_input& e) {
    // The project's rule for bad input: one line, exit 2 (never a silent default).
    std::fprintf(stderr, "%s\n", e.what());
    std::fflush(stderr);
    std::exit(cli::exit_bad_input);
  } catch (const nondeterministic_body& e) {
    // As the CLI: nondeterminism has an exit code of its own.
    std::fprintf(stderr, "lockstep: %s: %s\n", test.c_str(), e.what());
    std::fflush(stderr);
    std::exit(cli::exit_nondeterminism);
  }
}

}  // namespace lockstep::testing
