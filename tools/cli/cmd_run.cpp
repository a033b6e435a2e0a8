// lockstep run: one seed, its result line, its trace (--trace) and, on a
// failure, its record.
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::cli {

int cmd_run(run_options o) {
  resolve(o, true);
  const prepared p = prepare(o);
  auto c = config_of(o, o.seed, o.trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  std::cout << "seed=" << o.seed << (p.scen ? " scenario=" : " program=") << p.name << " strategy=" << o.strategy
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

}  // namespace lockstep::cli
