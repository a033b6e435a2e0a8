// lockstep check-determinism FILE...: each seed of each scenario twice, the
// trace bytes and decisions compared (the first differing line printed when
// they differ); with --jobs N also explore's outcomes on one thread against N;
// with --swarm each seed's drawn configuration, as explore --swarm draws it.
#include <chrono>
#include <iostream>

#include "tools/cli/explore_runner.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/trace_diff.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

std::string shown_line(const trace_line_at& l) {
  const std::string step = l.step ? "step " + std::to_string(*l.step) : "before the first step";
  return "(" + step + ") " + (l.present ? printable(l.text, 400) : std::string("<the trace ended>"));
}

/// Every outcome of the range, in seed order, as explore gets them on `jobs` threads.
std::vector<seed_outcome> outcomes_with(const prepared& p, const run_options& o, unsigned jobs) {
  explore_runner runner(p, o, seed_slice{o.first_seed, o.last_seed, 0, 1}, jobs);
  std::vector<seed_outcome> all;
  seed_outcome out;
  for (;;) {
    const auto got = runner.next(out, std::chrono::milliseconds(1000));
    if (got == explore_runner::poll::end) break;
    if (got == explore_runner::poll::outcome) all.push_back(std::move(out));
  }
  return all;
}

/// "" when the two outcomes would print, count and record the same; else what differs.
std::string outcome_difference(const seed_outcome& a, const seed_outcome& b) {
  if (a.seed != b.seed) return "seed " + std::to_string(a.seed) + " against seed " + std::to_string(b.seed);
  if (a.trace_hash != b.trace_hash) {
    return "trace hash " + sim::hash_hex(a.trace_hash) + " against " + sim::hash_hex(b.trace_hash);
  }
  if (a.schedule_hash != b.schedule_hash) return "the decisions (schedule hash) differ";
  if (a.probed != b.probed) return "PCT's probe run differs";
  if (!a.failure != !b.failure) return a.failure ? "failed against held" : "held against failed";
  if (!a.failure) return "";
  const auto& fa = *a.failure;
  const auto& fb = *b.failure;
  // What the record holds: the configuration the run had and what it produced.
  if (fa.result.failed->kind != fb.result.failed->kind || fa.result.failed->message != fb.result.failed->message) {
    return "failure '" + fa.result.failed->message + "' against '" + fb.result.failed->message + "'";
  }
  if (fa.result.decisions != fb.result.decisions || fa.result.steps != fb.result.steps ||
      fa.result.end_time_ns != fb.result.end_time_ns || fa.config.options.pct_steps != fb.config.options.pct_steps) {
    return "the failure records differ";
  }
  return "";
}

int check_file(run_options o, unsigned jobs, bool jobs_given) {
  const prepared p = prepare(o);
  for (std::uint64_t i = 0; i < o.seeds; ++i) {
    const std::uint64_t seed = o.first_seed + i;
    // The whole trace, not only its hash: a difference is then shown where it starts.
    auto c = config_of(o, seed, sim::trace_mode::full);
    c = describe_and_size(p, c);
    const auto a = run_once(p, c);
    const auto b = run_once(p, c);
    std::cout << "seed=" << seed << " trace_hash=" << sim::hash_hex(a.trace_hash);
    // --swarm: each run drew its configuration from the seed, so the values are part of what must repeat.
    if (p.swarm_document) std::cout << " swarm: " << scenario::swarm::values_text(for_seed(p, seed).swarm_values);
    if (a.trace_text != b.trace_text || a.trace_hash != b.trace_hash || a.decisions != b.decisions) {
      crash_report::clear();
      std::cout << " NONDETERMINISTIC: second run gave " << sim::hash_hex(b.trace_hash) << "\n";
      if (const auto d = first_trace_difference(a.trace_text, b.trace_text)) {
        std::cout << "first difference at trace line " << d->line << ":\n"
                  << "  run 1 " << shown_line(d->a) << "\n"
                  << "  run 2 " << shown_line(d->b) << "\n";
      } else {
        std::cout << "the traces are equal but the decisions differ: " << a.decisions.size() << " against "
                  << b.decisions.size() << "\n";
      }
      std::cout << "rerun with: " << rerun_command(p, c) << std::endl;
      return exit_nondeterminism;
    }
    std::cout << " (twice): " << a.trace_text.size() << " trace bytes equal" << std::endl;
  }
  crash_report::clear();
  if (jobs_given) {
    // explore's own runner, as explore runs it: what it prints, counts and
    // records must not depend on how many threads ran the seeds.
    const auto one = outcomes_with(p, o, 1);
    const auto many = outcomes_with(p, o, jobs);
    crash_report::clear();
    for (std::size_t i = 0; i < one.size() || i < many.size(); ++i) {
      std::string why;
      if (i >= one.size() || i >= many.size()) {
        why = "--jobs 1 ran " + std::to_string(one.size()) + " seeds, --jobs " + std::to_string(jobs) + " ran " +
              std::to_string(many.size());
      } else {
        why = outcome_difference(one[i], many[i]);
      }
      if (!why.empty()) {
        const std::uint64_t seed = i < one.size() ? one[i].seed : many[i].seed;
        std::cout << "NONDETERMINISTIC: explore --jobs 1 and --jobs " << jobs << " differ at seed " << seed << ": "
                  << why << "\n";
        std::cout.flush();
        return exit_nondeterminism;
      }
    }
    std::cout << "explore --jobs 1 and --jobs " << jobs << ": the same outcome for all " << one.size()
              << " seeds (trace hashes, schedules, failures and their records)" << std::endl;
  }
  return exit_held;
}

}  // namespace

int cmd_check_determinism(run_options o, const std::string& jobs_text, bool jobs_given) {
  resolve(o, false);
  const unsigned jobs = jobs_given ? static_cast<unsigned>(parse_u64("--jobs", jobs_text, 1, 1024)) : 1;
  const std::vector<std::string> files = expand_files(o.files);
  check_swarm_files(o, files);
  check_every_file(o, files);
  // Every file is checked; the exit code is the first file's that did not hold.
  int code = exit_held;
  for (const std::string& f : files) {
    run_options one = o;
    one.file = f;
    if (files.size() > 1) std::cout << "== " << f << std::endl;
    const int rc = check_file(one, jobs, jobs_given);
    if (code == exit_held) code = rc;
  }
  return code;
}

}  // namespace lockstep::cli
