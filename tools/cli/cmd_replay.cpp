// lockstep replay: follow a record's decisions and say whether its failure
// reproduced, no longer reproduces, or diverged; with --continue, go on past
// a divergence under the seeded random strategy and judge the new run.
#include <filesystem>
#include <iostream>
#include <memory>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/scenario/swarm.hpp"

namespace lockstep::cli {
namespace {

std::string fiber_list(const std::vector<std::uint32_t>& fibers) {
  std::string s = "[";
  for (std::size_t i = 0; i < fibers.size(); ++i) s += (i ? "," : "") + std::to_string(fibers[i]);
  return s + "]";
}

/// Next to the record, so a continued run never overwrites the record it came from.
std::string continued_path(const std::string& record_path) {
  const std::filesystem::path p(record_path);
  return (p.parent_path() / (p.stem().string() + "-continued.json")).string();
}

// The record's decisions while they fit, then the random strategy seeded with
// the record's seed: the run a changed scenario or engine gives from there.
int replay_continuing(const failure_record& rec, const std::string& trace_out, bool trace_given,
                      const replay_continue& more) {
  const prepared p = prepare_record(rec);
  const std::size_t recorded = rec.result.decisions.size();
  std::cout << "seed=" << rec.config.seed << " scenario=" << rec.scenario_file << " replaying " << recorded
            << " decisions recorded with strategy " << rec.config.strategy
            << "; past one that does not fit, continuing under the random strategy with seed " << rec.config.seed
            << std::endl;
  sim::run_config c = rec.config;
  c.strategy = "replay";
  c.options.decisions = rec.result.decisions;
  c.options.continue_from = std::make_shared<sim::replay_departure>();
  c.trace = trace_given ? sim::trace_mode::full : sim::trace_mode::hash;
  crash_report::describe("lockstep: crashed replaying " + rec.path + " with --continue (" + run_summary(p, rec.config) +
                         ")\nrerun with: " + replay_command(rec.path) + " --continue\n");
  const auto r = run_once(p, c);
  crash_report::clear();
  const bool traced = !trace_given || write_trace(trace_out, r.trace_text);
  print_result_line(r);
  const sim::replay_departure& d = *c.options.continue_from;
  bool diverged = true;
  if (d.departed && d.recorded) {
    std::cout << "DIVERGED at step " << d.step << ": the recorded decision " << d.decision << " (of " << recorded
              << ") is fiber " << *d.recorded << ", but runnable were " << fiber_list(d.runnable)
              << "; the run continued from there under the random strategy (seed " << rec.config.seed << ")\n";
  } else if (d.departed) {
    std::cout << "DIVERGED at step " << d.step << ": all " << recorded
              << " recorded decisions were used and the run needed more, runnable were " << fiber_list(d.runnable)
              << "; the run continued from there under the random strategy (seed " << rec.config.seed << ")\n";
  } else if (r.decisions.size() < recorded) {
    std::cout << "DIVERGED at step " << r.steps << ": the run ended after " << r.decisions.size() << " of the "
              << recorded << " recorded decisions; nothing was left to continue\n";
  } else if (r.trace_hash != rec.result.trace_hash) {
    std::cout << "DIVERGED: every recorded decision fit, but the trace differs (recorded trace hash "
              << sim::hash_hex(rec.result.trace_hash) << ", this run " << sim::hash_hex(r.trace_hash) << ")\n";
  } else {
    diverged = false;
  }
  int code = exit_held;
  if (!diverged && reproduced(rec, r)) {
    std::cout << "reproduced: the same trace hash " << sim::hash_hex(r.trace_hash) << " after all " << recorded
              << " recorded decisions\n";
    code = exit_failed;
  } else if (r.ok()) {
    std::cout << "the " << (diverged ? "continued " : "") << "run held: no failure\n";
  } else {
    std::cout << "the " << (diverged ? "continued " : "") << "run failed\n";
    // Its own record: the decisions it made, so `replay` follows it exactly.
    code = report_failure(p, rec.config, r, more.record_given ? more.record_out : continued_path(rec.path));
  }
  std::cout.flush();
  return traced ? code : exit_bad_input;
}

}  // namespace

int cmd_replay(const std::string& path, const std::string& trace_out, bool trace_given, const replay_continue& more) {
  const failure_record rec = read_failure_record(path);
  if (trace_given) check_output_path("--trace", trace_out);
  if (more.record_given) check_output_path("--record", more.record_out);
  if (more.record_given && !more.on) {
    throw input_error("--record: is where replay --continue writes a continued run that fails; expected --continue with it");
  }
  if (more.on) return replay_continuing(rec, trace_out, trace_given, more);
  (void)prepare_record(rec);  // bad input in the record is refused before anything is printed
  std::cout << "seed=" << rec.config.seed << " scenario=" << rec.scenario_file << " replaying "
            << rec.result.decisions.size() << " decisions recorded with strategy " << rec.config.strategy
            << std::endl;
  // A swarm run's record embeds the resolved scenario; the values are shown for the reader.
  if (!rec.swarm.is_null()) std::cout << "swarm: " << scenario::swarm::values_text(rec.swarm) << std::endl;
  const auto r = replay_record(rec, trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  const bool traced = !trace_given || write_trace(trace_out, r.trace_text);
  print_result_line(r);
  int code = exit_held;
  if (r.ok()) {
    std::cout << "no longer reproduces: the run held (recorded trace hash " << sim::hash_hex(rec.result.trace_hash)
              << ", replay gave " << sim::hash_hex(r.trace_hash) << ")\n";
  } else if (reproduced(rec, r)) {
    std::cout << "reproduced: the same trace hash " << sim::hash_hex(r.trace_hash) << " after all "
              << r.decisions.size() << " recorded decisions\n";
    code = exit_failed;
  } else {
    std::cout << "DIVERGED: recorded trace hash " << sim::hash_hex(rec.result.trace_hash) << " after "
              << rec.result.decisions.size() << " decisions, replay gave " << sim::hash_hex(r.trace_hash)
              << " after " << r.decisions.size() << "\n";
    code = exit_nondeterminism;
  }
  if (r.failed) std::cout << "failure: " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  std::cout.flush();
  return traced ? code : exit_bad_input;
}

}  // namespace lockstep::cli
