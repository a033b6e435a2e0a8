// Measures the classic bug programs (classic/programs.hpp) for
// results/classic_bugs.md: for each bug, the executions to its first failure
// per strategy (the median and the largest over 20 base seeds for random and
// pct; the schedules dfs runs to it, preemption bound 2, at most 100,000; the
// library's default portfolio, random, pct, pos and surw alternated, from
// seed 1), and each fix run `--fix-runs` times under the default (none may
// fail) and searched by dfs.
//
//   classic_bugs_report [--fix-runs N]   (default 1,000,000) > table.md
//   classic_bugs_report --strategies     the executions to the first failure
//                                        per strategy (results/strategies.md)
//   classic_bugs_report --many-threads B the same for reorder(N), N setters and
//                                        a checker, over B base seeds
//   classic_bugs_report --many-threads-dfs  reorder(N) under dfs, preemption bounds 1
//                                        and 2, delay bounds 1, 2 and 3
//   classic_bugs_report --reorder-pct N B CAP  reorder(N) under pct, d = 2 and 3, over B
//                                        base seeds, at most CAP executions each
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/strategy.hpp"
#include "testing/classic/programs.hpp"
#include "testing/tests/scratch_dir.hpp"

namespace lt = lockstep::testing;
namespace sim = lockstep::sim;

namespace {

constexpr std::uint64_t cap = 100'000;

/// Where the runs' records go: one directory for the whole report, removed at exit.
std::string report_dir() {
  static const std::string dir = lockstep::testing_scratch::scratch_dir("lockstep-classic-report");
  return dir;
}

lt::explore_result explore(const lockstep::classic::classic_program& p, bool buggy, lt::test_options o) {
  o.hang_limit_s = 0;
  o.record_dir = report_dir();
  return lt::explore(p.name, o, [&p, buggy](sim::runtime&) { p.run(buggy); });
}

/// Runs until the first failure from `first_seed` under `strategies`
/// alternated seed by seed (cap + 1: none within cap). pct_steps 0: each pct
/// seed's k sized by a random run first (as surw's profile is), not counted
/// unless `count_sizing`.
std::uint64_t to_first_failure(const lockstep::classic::classic_program& p, std::vector<std::string> strategies,
                               std::uint64_t first_seed, std::uint64_t pct_steps = 0, bool count_sizing = false) {
  lt::test_options o;
  o.strategies = strategies;
  o.first_seed = first_seed;
  o.runs = cap / o.strategies.size();
  o.pct_steps = pct_steps;
  const lt::explore_result r = explore(p, true, o);
  if (r.failures.empty()) return cap + 1;
  std::uint64_t executions = r.runs;
  if (count_sizing) {
    sim::strategy_options k;
    k.pct_steps = pct_steps;
    for (std::uint64_t i = 0; i < r.runs; ++i) executions += sim::needs_sizing_run(strategies[i % strategies.size()], k);
  }
  return executions;
}

std::string shown(std::uint64_t n) { return n > cap ? "> 100,000" : std::to_string(n); }

/// "median (largest)" over 20 base seeds (1, 1,000,001, ...).
template <class F>
std::string over_base_seeds(F executions) {
  std::vector<std::uint64_t> n;
  for (std::uint64_t base = 0; base < 20; ++base) n.push_back(executions(base * 1'000'000 + 1));
  std::sort(n.begin(), n.end());
  return shown((n[9] + n[10]) / 2) + " (" + shown(n.back()) + ")";
}

/// --strategies: executions to the first failure per strategy, sizing runs
/// (pct's k, surw's profile) counted, for results/strategies.md.
int strategies_table() {
  const std::vector<std::vector<std::string>> columns = {
      {"random"}, {"pct"}, {"pos"}, {"surw"}, {"random", "pct"}, {"random", "pos"}, {"random", "pct", "pos", "surw"}};
  std::cout << "| program |";
  for (const auto& c : columns) {
    std::string name;
    for (const auto& s : c) name += (name.empty() ? "" : "+") + s;
    std::cout << " " << name << " |";
  }
  std::cout << " pct, k = 1000 |\n|---|";
  for (std::size_t i = 0; i <= columns.size(); ++i) std::cout << "---:|";
  std::cout << "\n";
  for (const auto& p : lockstep::classic::classic_programs()) {
    const auto with = [&p](const std::vector<std::string>& s, std::uint64_t k = 0) {
      return over_base_seeds([&](std::uint64_t seed) { return to_first_failure(p, s, seed, k, true); });
    };
    std::cout << "| " << p.name << " |";
    for (const auto& c : columns) std::cout << " " << with(c) << " |";
    std::cout << " " << with({"pct"}, 1000) << " |\n";
    std::cout.flush();
  }
  return 0;
}

/// A dfs verdict in a cell: the schedules to the failure, or what held.
std::string dfs_cell(const lt::explore_result& r) {
  if (!r.dfs) return "?";
  const lt::dfs_verdict& v = *r.dfs;
  if (v.failed) return std::to_string(v.schedules);
  if (v.verified) return "none: all " + std::to_string(v.schedules) + " held";
  return "none in " + std::to_string(v.schedules) + " (stopped)";
}

}  // namespace

/// --many-threads: reorder(N) for N setters, executions to the first failure
/// per strategy (sizing runs counted), over `bases` base seeds, at most `cap`;
/// the last column is pct with one change point (--pct-depth 2).
int many_threads_table(std::uint64_t bases) {
  std::cout << "| setters (threads) | random | pct | pos | surw | portfolio | pct, d = 2 |\n"
               "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const int setters : {2, 5, 10, 20, 50, 100}) {
    const lockstep::classic::classic_program p{"reorder", "many threads", "SCTBench reorder_X_bad", nullptr};
    const auto run = [setters](bool buggy) { lockstep::classic::reorder(setters, buggy); };
    std::cout << "| " << setters << " (" << setters + 1 << ") |";
    for (const std::vector<std::string>& s : std::vector<std::vector<std::string>>{
             {"random"}, {"pct"}, {"pos"}, {"surw"}, {"random", "pct", "pos", "surw"}, {"pct", "d2"}}) {
      const bool depth_2 = s.size() == 2 && s[1] == "d2";  // pct with one change point
      std::vector<std::uint64_t> n;
      for (std::uint64_t base = 0; base < bases; ++base) {
        lt::test_options o;
        o.strategies = depth_2 ? std::vector<std::string>{"pct"} : s;
        if (depth_2) o.pct_depth = 2;
        o.first_seed = base * 1'000'000 + 1;
        o.runs = cap / o.strategies.size();
        o.hang_limit_s = 0;
        o.record_dir = report_dir();
        const lt::explore_result r = lt::explore(p.name, o, [&run](sim::runtime&) { run(true); });
        std::uint64_t executions = r.runs;
        for (std::uint64_t i = 0; i < r.runs; ++i) {
          executions += sim::needs_sizing_run(o.strategies[i % o.strategies.size()], {});
        }
        n.push_back(r.failures.empty() ? cap + 1 : executions);
      }
      std::sort(n.begin(), n.end());
      std::cout << " " << shown((n[(n.size() - 1) / 2] + n[n.size() / 2]) / 2) << " (" << shown(n.back()) << ") |";
      std::cout.flush();
    }
    std::cout << "\n";
  }
  return 0;
}

/// --many-threads-dfs: reorder(N) under the bounded search, with preemption
/// bounds 1 and 2 and with delay bounds 1, 2 and 3 (no preemption bound):
/// the schedules it runs to the first failure (at most `cap`).
int many_threads_dfs_table() {
  struct bounds {
    std::optional<std::uint32_t> preemptions, delays;
  };
  const std::vector<bounds> columns{{1, std::nullopt}, {2, std::nullopt}, {std::nullopt, 1}, {std::nullopt, 2},
                                    {std::nullopt, 3}};
  std::cout << "| setters (threads) | preemption bound 1 | preemption bound 2 | delay bound 1 | delay bound 2 | "
               "delay bound 3 |\n|---|---:|---:|---:|---:|---:|\n";
  for (const int setters : {2, 5, 10, 20, 50, 100}) {
    std::cout << "| " << setters << " (" << setters + 1 << ") |";
    for (const bounds& b : columns) {
      lt::test_options o;
      o.strategies = {"dfs"};
      o.preemption_bound = b.preemptions;
      o.delay_bound = b.delays;
      o.max_schedules = cap;
      o.hang_limit_s = 0;
      o.record_dir = report_dir();
      const lt::explore_result r =
          lt::explore("reorder", o, [setters](sim::runtime&) { lockstep::classic::reorder(setters, true); });
      std::cout << " " << dfs_cell(r) << " |";
      std::cout.flush();
    }
    std::cout << "\n";
  }
  return 0;
}

/// --reorder-pct N B CAP: reorder(N) under pct with one and two change points
/// (d = 2, 3), executions to the first failure (sizing runs counted) over B
/// base seeds, at most CAP each: the 101-thread case beyond the table's cap.
int reorder_pct(int setters, std::uint64_t bases, std::uint64_t most) {
  std::cout << "| setters (threads) | pct, d = 2 | pct, d = 3 | cap |\n|---|---:|---:|---:|\n| " << setters << " ("
            << setters + 1 << ") |";
  for (const std::uint32_t depth : {2U, 3U}) {
    std::vector<std::uint64_t> n;
    for (std::uint64_t base = 0; base < bases; ++base) {
      lt::test_options o;
      o.strategies = {"pct"};
      o.pct_depth = depth;
      o.first_seed = base * 10'000'000 + 1;
      o.runs = most / 2;  // each run of pct is two executions (its sizing run)
      o.hang_limit_s = 0;
      o.record_dir = report_dir();
      const lt::explore_result r =
          lt::explore("reorder", o, [setters](sim::runtime&) { lockstep::classic::reorder(setters, true); });
      n.push_back(r.failures.empty() ? most + 1 : 2 * r.runs);
    }
    std::sort(n.begin(), n.end());
    const auto cell = [most](std::uint64_t x) { return x > most ? "> " + std::to_string(most) : std::to_string(x); };
    std::cout << " " << cell((n[(n.size() - 1) / 2] + n[n.size() / 2]) / 2) << " (" << cell(n.back()) << ") |";
    std::cout.flush();
  }
  std::cout << " " << most << " |\n";
  return 0;
}

namespace {

/// argv[i] as a whole number in [lo, hi]; otherwise one line naming the
/// argument and what was expected, and exit 2 (a median of no seeds, or a
/// run of no setters, is never measured).
std::uint64_t count_arg(char** argv, int i, const char* name, std::uint64_t lo, std::uint64_t hi) {
  const std::string text = argv[i];
  std::size_t used = 0;
  std::uint64_t v = 0;
  try {
    v = text.empty() || text[0] == '-' ? 0 : std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < lo || v > hi) {
    std::cerr << "classic_bugs_report: " << argv[1] << " " << name << " \"" << text << "\": expected a whole number from "
              << lo << " to " << hi << "\n";
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t fix_runs = 1'000'000;
  if (argc == 2 && std::string(argv[1]) == "--strategies") return strategies_table();
  if (argc == 5 && std::string(argv[1]) == "--reorder-pct") {
    return reorder_pct(static_cast<int>(count_arg(argv, 2, "N (setters)", 1, 1000)),
                       count_arg(argv, 3, "B (base seeds)", 1, 1000), count_arg(argv, 4, "CAP", 2, 100'000'000));
  }
  if (argc == 2 && std::string(argv[1]) == "--many-threads-dfs") return many_threads_dfs_table();
  if (argc == 3 && std::string(argv[1]) == "--many-threads") {
    return many_threads_table(count_arg(argv, 2, "B (base seeds)", 1, 1000));
  }
  if (argc == 3 && std::string(argv[1]) == "--fix-runs") fix_runs = count_arg(argv, 2, "N", 1, 100'000'000);
  std::cout << "| program | bug | default (portfolio) | random median (max) | pct median (max) | dfs | fix: "
            << fix_runs << " runs | fix: dfs |\n|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& p : lockstep::classic::classic_programs()) {
    lt::test_options defaults;
    defaults.runs = cap / defaults.strategies.size();
    const lt::explore_result d = explore(p, true, defaults);
    std::string cells[2];
    int i = 0;
    for (const char* strategy : {"random", "pct"}) {
      cells[i++] = over_base_seeds([&](std::uint64_t seed) { return to_first_failure(p, {strategy}, seed); });
    }
    lt::test_options dfs;  // the default bounds: preemptions at 2
    dfs.strategies = {"dfs"};
    dfs.max_schedules = 100'000;
    const lt::explore_result s = explore(p, true, dfs);
    lt::test_options fix;
    fix.runs = fix_runs / fix.strategies.size();
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
