// lockstep check-determinism FILE...: each seed of each scenario twice, the
// trace hashes and decisions compared.
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::cli {

namespace {

int check_file(run_options o) {
  const prepared p = prepare(o);
  for (std::uint64_t i = 0; i < o.seeds; ++i) {
    const std::uint64_t seed = o.first_seed + i;
    auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    c = with_pct_steps(p, c);
    describe_run(p, c);
    const auto a = run_once(p, c);
    const auto b = run_once(p, c);
    std::cout << "seed=" << seed << " trace_hash=" << sim::hash_hex(a.trace_hash);
    if (a.trace_hash != b.trace_hash || a.decisions != b.decisions) {
      crash_report::clear();
      std::cout << " NONDETERMINISTIC: second run gave " << sim::hash_hex(b.trace_hash) << "\n"
                << "rerun with: " << rerun_command(p, c) << std::endl;
      return exit_nondeterminism;
    }
    std::cout << " (twice)" << std::endl;
  }
  crash_report::clear();
  return exit_held;
}

}  // namespace

int cmd_check_determinism(run_options o) {
  resolve(o, false);
  const std::vector<std::string> files = expand_files(o.files);
  check_every_file(o, files);
  // Every file is checked; the exit code is the first file's that did not hold.
  int code = exit_held;
  for (const std::string& f : files) {
    run_options one = o;
    one.file = f;
    if (files.size() > 1) std::cout << "== " << f << std::endl;
    const int rc = check_file(one);
    if (code == exit_held) code = rc;
  }
  return code;
}

}  // namespace lockstep::cli
