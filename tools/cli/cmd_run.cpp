// lockstep run FILE...: one seed of each scenario in turn, its result line,
// its trace (--trace) and, on a failure, its record.
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::cli {

namespace {

int run_file(run_options o) {
  const prepared p = prepare(o);
  auto c = config_of(o, o.seed, o.trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  std::cout << "seed=" << o.seed << " scenario=" << p.name << " strategy=" << o.strategy
            << " cores=" << o.cores << std::endl;
  describe_run(p, c);
  c = with_pct_steps(p, c);
  describe_run(p, c);
  const auto r = run_once(p, c);
  crash_report::clear();
  const bool traced = !o.trace_given || write_trace(o.trace_out, r.trace_text);
  print_result_line(r);
  if (!r.ok()) return report_failure(p, c, r, o.record_out);
  return traced ? exit_held : exit_bad_input;
}

}  // namespace

int cmd_run(run_options o) {
  resolve(o, true);
  const std::vector<std::string> files = expand_files(o.files);
  require_one_file(files, o.trace_given ? "--trace" : o.record_given ? "--record" : nullptr);
  check_every_file(o, files);
  // Every file runs; the exit code is the first file's that did not hold.
  int code = exit_held;
  for (const std::string& f : files) {
    run_options one = o;
    one.file = f;
    const int rc = run_file(one);
    if (code == exit_held) code = rc;
  }
  return code;
}

}  // namespace lockstep::cli
