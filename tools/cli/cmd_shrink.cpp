// lockstep shrink: a scenario record's failing case made smaller while it
// fails the same oracle (tools/cli/shrinker.hpp has the search), written as a
// new record that `lockstep replay` reproduces, with the sizes before and after.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/shrinker.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

namespace shrink_impl {

/// Next to the input: a.json -> a.shrunk.json (any other name gets the suffix).
std::string default_output(const std::string& input) {
  const std::string ext = ".json";
  if (input.size() > ext.size() && input.compare(input.size() - ext.size(), ext.size(), ext) == 0) {
    return input.substr(0, input.size() - ext.size()) + ".shrunk.json";
  }
  return input + ".shrunk.json";
}

void print_sizes(const case_size& before, const case_size& after) {
  const auto row = [](const char* what, std::uint64_t b, std::uint64_t a) {
    std::cout << "  " << std::left << std::setw(12) << what << std::right << std::setw(8) << b << std::setw(8) << a
              << "\n";
  };
  std::cout << "  " << std::left << std::setw(12) << "" << std::right << std::setw(8) << "before" << std::setw(8)
            << "after" << "\n";
  row("cores", before.cores, after.cores);
  row("actors", before.actors, after.actors);
  row("steps", before.steps, after.steps);
  row("items", before.items, after.items);
  row("keys", before.keys, after.keys);
  row("decisions", before.decisions, after.decisions);
  row("preemptions", before.preemptions, after.preemptions);
}

}  // namespace shrink_impl

int cmd_shrink(const shrink_options& o) {
  using namespace shrink_impl;
  shrink_limits limits;
  limits.max_runs = parse_u64("--max-runs", o.max_runs_text, 1, 100'000'000);
  limits.time_ms = parse_duration_ms("--time", o.time_text);
  const failure_record rec = read_failure_record(o.record);
  if (!rec.result.failed) throw input_error(o.record + ": /failure: expected a failing run's record, but it has none");
  const std::string out = o.out.empty() ? default_output(o.record) : o.out;
  check_output_path(o.out.empty() ? "shrink's output" : "-o", out);
  (void)prepare_record(rec);  // bad input in the record is refused before anything runs

  std::cout << "seed=" << rec.config.seed << " scenario=" << rec.scenario_file << " shrinking " << o.record
            << " (strategy " << rec.config.strategy << ", " << rec.result.decisions.size() << " decisions)"
            << std::endl;
  const auto check = replay_record(rec, sim::trace_mode::hash);
  if (!reproduced(rec, check)) {
    std::cout << "does not fail as recorded: its replay "
              << (check.ok() ? std::string("held") : "failed differently (" + std::string(sim::to_string(check.failed->kind)) +
                                                         ": " + check.failed->message + ")")
              << ", trace hash " << sim::hash_hex(check.trace_hash) << " where the record has "
              << sim::hash_hex(rec.result.trace_hash) << "; nothing to shrink\n";
    return exit_nondeterminism;
  }

  const shrink_outcome s = shrink_record(rec, limits);
  // The shrunk record must replay like any other: check it before writing it.
  failure_record written = s.shrunk;
  written.path = out;
  const auto again = replay_record(written, sim::trace_mode::hash);
  if (!reproduced(written, again)) {
    std::cout.flush();
    std::cerr << "lockstep: shrink: internal error: the shrunk case did not replay to its own failure (trace hash "
              << sim::hash_hex(again.trace_hash) << ", expected " << sim::hash_hex(written.result.trace_hash)
              << "); nothing written\n";
    return exit_nondeterminism;
  }
  // Stored as replay reports it (its message names the strategy that ran).
  written.result = again;
  written.result.trace_text.clear();
  write_failure_record(out, written);

  std::cout << "shrunk, still failing " << s.oracle << ":\n";
  print_sizes(s.before, s.after);
  std::cout << "search: " << s.runs << " candidate runs, " << s.kept << " kept, " << s.rounds
            << (s.rounds == 1 ? " round" : " rounds") << " of scenario then schedule";
  if (s.out_of_runs) std::cout << "; stopped by --max-runs " << limits.max_runs << ": the smallest case found so far";
  if (s.out_of_time) std::cout << "; stopped by --time " << o.time_text << ": the smallest case found so far";
  std::cout << "\n";
  std::cout << "failure: " << sim::to_string(written.result.failed->kind) << ": " << written.result.failed->message
            << "\n"
            << "shrunk record: " << out << "\n"
            << "replay with: " << replay_command(out) << "\n";
  std::cout.flush();
  return exit_code_of(written.result.failed->kind);
}

}  // namespace lockstep::cli
