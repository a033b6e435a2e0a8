// Measures the classic bug programs (classic/programs.hpp) for
// results/classic_bugs.md: for each bug, the executions to its first failure
// per strategy (the median and the largest over 20 base seeds for random and
// pct; the schedules dfs runs to it, preemption bound 2, at most 100,000; the
// library's default, random and pct alternated, from seed 1), and each fix
// run `--fix-runs` times under the default (none may fail) and searched by dfs.
//
//   classic_bugs_report [--fix-runs N]   (default 1,000,000) > table.md
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "testing/classic/programs.hpp"

namespace lt = lockstep::testing;
namespace sim = lockstep::sim;

namespace {

constexpr std::uint64_t cap = 100'000;

lt::explore_result explore(const lockstep::classic::classic_program& p, bool buggy, lt::test_options o) {
  o.hang_limit_s = 0;
  o.record_dir = (std::filesystem::temp_directory_path() / ("lockstep-classic-report-" + std::to_string(::getpid())))
                     .string();
  return lt::explore(p.name, o, [&p, buggy](sim::runtime&) { p.run(buggy); });
}

/// Executions until the first failure from `first_seed` (cap + 1: none within cap).
std::uint64_t to_first_failure(const lockstep::classic::classic_program& p, const std::string& strategy,
                               std::uint64_t first_seed) {
  lt::test_options o;
  o.strategies = {strategy};
  o.first_seed = first_seed;
  o.runs = cap;
  const lt::explore_result r = explore(p, true, o);
  return r.failures.empty() ? cap + 1 : r.runs;
}

std::string shown(std::uint64_t n) { return n > cap ? "> 100,000" : std::to_string(n); }

/// A dfs verdict in a cell: the schedules to the failure, or what held.
std::string dfs_cell(const lt::explore_result& r) {
  if (!r.dfs) return "?";
  const lt::dfs_verdict& v = *r.dfs;
  if (v.failed) return std::to_string(v.schedules);
  if (v.verified) return "none: all " + std::to_string(v.schedules) + " held";
  return "none in " + std::to_string(v.schedules) + " (stopped)";
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t fix_runs = 1'000'000;
  if (argc == 3 && std::string(argv[1]) == "--fix-runs") fix_runs = std::strtoull(argv[2], nullptr, 10);
  std::cout << "| program | bug | default (random+pct) | random median (max) | pct median (max) | dfs | fix: "
            << fix_runs << " runs | fix: dfs |\n|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& p : lockstep::classic::classic_programs()) {
    lt::test_options defaults;
    defaults.runs = cap / 2;
    const lt::explore_result d = explore(p, true, defaults);
    std::string cells[2];
    int i = 0;
    for (const char* strategy : {"random", "pct"}) {
      std::vector<std::uint64_t> n;
      for (std::uint64_t base = 0; base < 20; ++base) n.push_back(to_first_failure(p, strategy, base * 1'000'000 + 1));
      std::sort(n.begin(), n.end());
      cells[i++] = shown((n[9] + n[10]) / 2) + " (" + shown(n.back()) + ")";
    }
    lt::test_options dfs;  // the default bounds: preemptions at 2
    dfs.strategies = {"dfs"};
    dfs.max_schedules = 100'000;
    const lt::explore_result s = explore(p, true, dfs);
    lt::test_options fix;
    fix.runs = fix_runs / 2;
    const lt::explore_result f = explore(p, false, fix);
    const lt::explore_result fd = explore(p, false, dfs);
    std::cout << "| " << p.name << " | " << p.kind << " | " << (d.failures.empty() ? "not found" : std::to_string(d.runs))
              << " | " << cells[0] << " | " << cells[1] << " | "
              << dfs_cell(s) << " | "
              << (f.failures.empty() ? std::to_string(f.runs) + " held" : "FAILED: " + lt::describe(f.failures.front().record))
              << " | " << dfs_cell(fd) << " |\n";
  }
  return 0;
}
