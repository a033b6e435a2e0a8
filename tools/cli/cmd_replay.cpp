// lockstep replay: follow a record's decisions and say whether its failure
// reproduced, no longer reproduces, or diverged.
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"

namespace lockstep::cli {

int cmd_replay(const std::string& path, const std::string& trace_out, bool trace_given) {
  const failure_record rec = read_failure_record(path);
  if (trace_given) check_output_path("--trace", trace_out);
  (void)prepare_record(rec);  // bad input in the record is refused before anything is printed
  std::cout << "seed=" << rec.config.seed << " scenario=" << rec.scenario_file << " replaying "
            << rec.result.decisions.size() << " decisions recorded with strategy " << rec.config.strategy
            << std::endl;
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
