// Writes results/memory_model.md's table: for every litmus test (litmus.hpp),
// the outcomes C++20 allows and forbids, what the exhaustive search saw with
// the memory model on and with seq_cst_only, and how often random and pct
// sampling reach the weak outcomes (those no interleaving gives).
//
//   build/testing/litmus_report [RUNS] > table.md     (RUNS seeds per strategy, default 10000)
//   build/testing/litmus_report --spin RUNS [--seq-cst-only]   (the spin locks: failures in RUNS seeds per strategy)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "sim/dfs_search.hpp"
#include "sim/runtime.hpp"
#include "testing/litmus/litmus.hpp"

namespace sim = lockstep::sim;
namespace litmus = lockstep::litmus;

namespace {

litmus::search every_schedule(const litmus::test& t, bool seq_cst_only, std::optional<std::uint32_t> bound) {
  return litmus::every_schedule([&](std::set<std::string>& seen) { seen.insert(t.program()); }, seq_cst_only, bound,
                                std::nullopt, 0);
}

/// How many of `runs` seeds under `strategy` end in each outcome.
std::map<std::string, std::uint64_t> sampled(const litmus::test& t, const char* strategy, std::uint64_t runs) {
  std::map<std::string, std::uint64_t> seen;
  for (std::uint64_t seed = 1; seed <= runs; ++seed) {
    sim::run_config c;
    c.seed = seed;
    c.strategy = strategy;
    c.trace = sim::trace_mode::off;
    c.options.pct_steps = 100;  // these programs run 30 to 80 steps
    std::string outcome;
    (void)sim::run(c, [&](sim::runtime&) { outcome = t.program(); });
    ++seen[outcome];
  }
  return seen;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& o : s) out += (out.empty() ? "" : ", ") + o;
  return out.empty() ? "none" : out;
}

}  // namespace

/// The correct spin locks (litmus::ttas_spin_lock) under each strategy with
/// the model on: failures (and their kinds) in `runs` seeds, and the steps.
int spin(std::uint64_t runs, bool seq_cst_only) {
  std::printf("| spin lock | strategy | runs | failed | mean steps | max steps |\n|---|---|---:|---:|---:|---:|\n");
  for (const bool yielding : {true, false}) {
    for (const char* strategy : {"random", "pct", "pos", "surw", "fifo"}) {
      std::uint64_t failed = 0;
      std::uint64_t steps = 0;
      std::uint64_t most = 0;
      std::string first;
      for (std::uint64_t seed = 1; seed <= runs; ++seed) {
        const sim::run_result r = litmus::run_spin_lock(seed, strategy, yielding, seq_cst_only);
        steps += r.steps;
        most = r.steps > most ? r.steps : most;
        if (!r.ok() && failed++ == 0) first = " (seed " + std::to_string(seed) + ": " + r.failed->message + ")";
      }
      std::printf("| %s | %s | %llu | %llu%s | %.1f | %llu |\n", yielding ? "yielding" : "busy", strategy,
                  static_cast<unsigned long long>(runs), static_cast<unsigned long long>(failed), first.c_str(),
                  static_cast<double>(steps) / static_cast<double>(runs), static_cast<unsigned long long>(most));
      std::fflush(stdout);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--spin") {
    return spin(std::strtoull(argv[2], nullptr, 10), argc > 3 && std::string(argv[3]) == "--seq-cst-only");
  }
  const std::uint64_t runs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000;
  std::printf("| test | shape | allowed | seen (model on) | forbidden, seen | schedules (bound) | weak outcomes "
              "(no interleaving gives them) | random: weak / %llu | pct: weak / %llu |\n",
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(runs));
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const litmus::test& t : litmus::all_tests()) {
    // The shapes ctest bounds: two more preemptions than it affords.
    const std::optional<std::uint32_t> bound =
        t.preemption_bound ? std::optional<std::uint32_t>(*t.preemption_bound + 2) : std::nullopt;
    const litmus::search on = every_schedule(t, false, bound);
    const litmus::search sc = every_schedule(t, true, bound);
    std::set<std::string> seen_forbidden;
    for (const std::string& o : t.forbidden) {
      if (on.outcomes.count(o) != 0) seen_forbidden.insert(o);
    }
    std::set<std::string> weak;
    for (const std::string& o : on.outcomes) {
      if (sc.outcomes.count(o) == 0) weak.insert(o);
    }
    const auto hits = [&](const std::map<std::string, std::uint64_t>& m) {
      std::uint64_t n = 0;
      for (const std::string& o : weak) n += m.count(o) != 0 ? m.at(o) : 0;
      return n;
    };
    const std::uint64_t random_weak = hits(sampled(t, "random", runs));
    const std::uint64_t pct_weak = hits(sampled(t, "pct", runs));
    std::printf("| %s | %s | %zu | %zu%s | %s | %llu (%s)%s | %s | %llu | %llu |\n", t.name.c_str(), t.shape.c_str(),
                t.allowed.size(), on.outcomes.size(), on.outcomes == t.allowed ? " (exactly the allowed)" : " (DIFFERS)",
                seen_forbidden.empty() ? "none" : joined(seen_forbidden).c_str(),
                static_cast<unsigned long long>(on.schedules),
                bound ? ("preemptions " + std::to_string(*bound)).c_str() : "none", on.exhausted ? "" : " NOT EXHAUSTED",
                joined(weak).c_str(), static_cast<unsigned long long>(random_weak),
                static_cast<unsigned long long>(pct_weak));
    std::fflush(stdout);
  }
  return 0;
}
