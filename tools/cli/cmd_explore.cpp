// lockstep explore: many seeds of one program or scenario under one strategy.
#include <chrono>
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::cli {

int cmd_explore(run_options o) {
  resolve(o, false);
  const prepared p = prepare(o);
  std::cout << "exploring " << (p.scen ? "scenario=" : "program=") << p.name << " strategy=" << o.strategy << " cores=" << o.cores
            << " seeds=" << o.first_seed << ".." << o.first_seed + (o.seeds - 1) << std::endl;
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t done = 0;
  // Counted, not compared against first+seeds: the range may end at 2^64-1.
  for (std::uint64_t i = 0; i < o.seeds; ++i) {
    const std::uint64_t seed = o.first_seed + i;
    auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    c = with_pct_steps(p, c);
    if (o.strategy == "pct") describe_run(p, c);
    const auto r = run_once(p, c);
    ++done;
    if (!r.ok()) {
      crash_report::clear();
      std::cout << "seed=" << seed << " ";
      print_result_line(r);
      return report_failure(p, c, r, o.record_out);
    }
  }
  crash_report::clear();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "all " << done << " seeds held (" << static_cast<std::uint64_t>(done / (secs > 0 ? secs : 1e-9))
            << " runs/s)" << std::endl;
  return exit_held;
}

}  // namespace lockstep::cli
