#include "explore.hpp"

#include "../sim/dfs_search.hpp"
#include "split_search.hpp"
#include "../sim/sizing_run.hpp"
#include "../sim/trace.hpp"
#include "record_fields.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <thread>

namespace lockstep::testing {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

[[noreturn]] void bad_env(const char* name, const std::string& value, const std::string& expected) {
  throw bad_input(std::string("environment variable ") + name + "=\"" + value + "\": expected " + expected);
}

std::optional<std::uint64_t> to_u64(const std::string& s) {
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno != 0) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

std::uint64_t env_u64(const char* name, std::uint64_t min, std::uint64_t fallback) {
  const auto v = env(name);
  if (!v) return fallback;
  const auto n = to_u64(*v);
  if (!n || *n < min) bad_env(name, *v, "an integer of at least " + std::to_string(min));
  return *n;
}

bool known_strategy(const std::string& s) { return s == "dfs" || (sim::is_strategy_name(s) && s != "replay"); }

// Names a generated input in a record's file name: 16 hex digits of its XXH3.
std::string input_tag(const std::string& input) { return sim::hash_hex(XXH3_64bits(input.data(), input.size())); }

// A file name from a test name: suites are separated by '/', which a file name cannot hold.
std::string file_stem(const std::string& test) {
  std::string s;
  for (char c : test) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '-' || c == '.';
    s += plain ? c : '.';
  }
  return s;
}

// The failing run again with its trace hashed, for the record. A re-run that
// differs means the body itself is not deterministic (it read a clock, an
// address, shared state left by an earlier run): that is the failure reported.
sim::run_result hashed_rerun(const sim::run_config& c, const sim::run_result& first, const test_body& body) {
  sim::run_result r = sim::run(c, body);
  const bool same = r.decisions == first.decisions && r.failed && r.failed->kind == first.failed->kind;
  if (same) return r;
  r.failed = sim::failure{sim::failure_kind::replay_divergence,
                          "the body is not deterministic: seed " + std::to_string(c.seed) + " failed (" +
                              std::string(sim::to_string(first.failed->kind)) + ": " + first.failed->message +
                              ") but the same seed run again " +
                              (r.failed ? "failed otherwise (" + r.failed->message + ")" : std::string("held")) +
                              "; the record holds the second run"};
  return r;
}

}  // namespace

void assertion_failed(const char* file, int line, const char* condition, const std::string& message) {
  const std::string where = std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
  throw sim::oracle_failed("LOCKSTEP_ASSERT", where + ": " + condition + (message.empty() ? "" : ": " + message),
                          sim::code_site(file, static_cast<std::uint32_t>(line)));
}

void apply_environment(test_options& o) {
  if (const auto v = env("LOCKSTEP_SEEDS")) {
    const auto dots = v->find("..");
    const auto a = to_u64(v->substr(0, dots));
    const auto b = dots == std::string::npos ? a : to_u64(v->substr(dots + 2));
    if (!a || !b || *b < *a) bad_env("LOCKSTEP_SEEDS", *v, "a seed or a range A..B with A <= B (e.g. 1..1000)");
    // 0..2^64-1 would be 2^64 seeds, one more than runs can count.
    if (*b - *a == UINT64_MAX) bad_env("LOCKSTEP_SEEDS", *v, "a range of fewer than 2^64 seeds");
    o.first_seed = *a;
    o.runs = *b - *a + 1;
  }
  o.runs = env_u64("LOCKSTEP_RUNS", 1, o.runs);
  if (const auto v = env("LOCKSTEP_STRATEGIES")) {
    std::vector<std::string> names;
    std::size_t at = 0;
    while (at <= v->size()) {
      const auto comma = v->find(',', at);
      const std::string name = v->substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (!known_strategy(name)) bad_env("LOCKSTEP_STRATEGIES", *v, "a comma-separated list of random, pct, pos, surw, fifo, dfs");
      names.push_back(name);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    o.strategies = names;
  }
  o.pct_depth = static_cast<std::uint32_t>(env_u64("LOCKSTEP_PCT_DEPTH", 1, o.pct_depth));
  if (o.pct_depth > 64) bad_env("LOCKSTEP_PCT_DEPTH", std::to_string(o.pct_depth), "an integer from 1 to 64");
  if (const auto v = env("LOCKSTEP_TIME_BUDGET")) {
    const auto n = to_u64(*v);
    if (!n) bad_env("LOCKSTEP_TIME_BUDGET", *v, "whole seconds (0: no budget)");
    o.time_budget_s = static_cast<double>(*n);
  }
  if (const auto v = env("LOCKSTEP_HANG_LIMIT")) {
    const auto n = to_u64(*v);
    if (!n || *n > 86'400) bad_env("LOCKSTEP_HANG_LIMIT", *v, "whole seconds from 0 (off) to 86400");
    o.hang_limit_s = static_cast<std::uint32_t>(*n);
  }
  for (auto [name, bound] : {std::pair{"LOCKSTEP_PREEMPTION_BOUND", &o.preemption_bound},
                             std::pair{"LOCKSTEP_DELAY_BOUND", &o.delay_bound}}) {
    const auto v = env(name);
    if (!v) continue;
    const auto n = to_u64(*v);
    if (*v == "none") {
      bound->reset();
    } else if (!n || *n > 1'000'000) {
      bad_env(name, *v, "a bound from 0 to 1000000, or none");
    } else {
      *bound = static_cast<std::uint32_t>(*n);
    }
  }
  o.max_schedules = env_u64("LOCKSTEP_MAX_SCHEDULES", 0, o.max_schedules);
  if (const auto v = env("LOCKSTEP_DPOR")) {
    if (*v != "0" && *v != "1") bad_env("LOCKSTEP_DPOR", *v, "0 or 1");
    o.dpor = *v == "1";
  }
  if (const auto v = env("LOCKSTEP_SEQ_CST_ONLY")) {
    if (*v != "0" && *v != "1") bad_env("LOCKSTEP_SEQ_CST_ONLY", *v, "0 or 1");
    o.seq_cst_only = *v == "1";
  }
  if (const auto v = env("LOCKSTEP_TIMER_TIES")) {
    if (*v != "0" && *v != "1") bad_env("LOCKSTEP_TIMER_TIES", *v, "0 or 1");
    o.timer_ties = *v == "1";
  }
  if (const auto v = env("LOCKSTEP_TIMER_JITTER")) {
    const auto n = to_u64(*v);
    if (!n || *n > max_timer_jitter_ns) bad_env("LOCKSTEP_TIMER_JITTER", *v, "virtual ns from 0 (off) to 1000000000000");
    o.timer_jitter_ns = static_cast<std::int64_t>(*n);
  }
  o.stop_after = env_u64("LOCKSTEP_STOP_AFTER", 0, o.stop_after);
  o.jobs = static_cast<std::uint32_t>(env_u64("LOCKSTEP_JOBS", 1, o.jobs));
  o.shrink_runs = env_u64("LOCKSTEP_SHRINK", 0, o.shrink_runs);
  if (o.jobs > 256) bad_env("LOCKSTEP_JOBS", std::to_string(o.jobs), "an integer from 1 to 256");
  o.max_steps = env_u64("LOCKSTEP_MAX_STEPS", 1, o.max_steps);
  if (const auto v = env("LOCKSTEP_RECORD_DIR")) {
    if (v->empty()) bad_env("LOCKSTEP_RECORD_DIR", *v, "a directory");
    o.record_dir = *v;
  }
}

sim::run_config config_for(const test_options& o, const std::string& strategy, std::uint64_t seed) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = strategy;
  c.cores = o.cores;
  c.options.pct_depth = o.pct_depth;
  c.options.pct_steps = strategy == "pct" ? o.pct_steps : 0;
  c.max_steps = o.max_steps;
  c.max_time_ns = o.max_time_ns;
  c.trace = sim::trace_mode::hash;
  c.seq_cst_only = o.seq_cst_only;
  c.timer_ties = o.timer_ties;
  c.timer_jitter_ns = o.timer_jitter_ns;
  return c;
}

sim::run_config with_sizing_run(sim::run_config config, const test_body& body) {
  if (!sim::needs_sizing_run(config.strategy, config.options)) return config;
  const sim::run_config probe = sim::sizing_run_of(config);
  sim::apply_sizing_run(config, sim::run(probe, body));
  return config;
}

sim::run_result run_one(const sim::run_config& config, const test_body& body) {
  return sim::run(with_sizing_run(config, body), body);
}

namespace {

/// The seeds of explore() on o.jobs threads, in batches: every run of a batch
/// goes to whichever thread is free, then the batch's outcomes are taken in
/// seed order (seed, then strategy, as the serial loop goes), stopping where
/// the serial loop would: the same runs, failures and records for any jobs.
template <class Keep, class OutOfTime>
explore_result explore_parallel(const test_options& o, const test_body& body, explore_result& out, Keep& keep,
                                OutOfTime& out_of_time) {
  struct task {
    std::uint64_t seed;
    const std::string* strategy;
    sim::run_config config;
    sim::run_result first;
    std::exception_ptr error;
  };
  std::vector<const std::string*> strategies;
  for (const std::string& s : o.strategies) {
    if (s != "dfs") strategies.push_back(&s);
  }
  if (strategies.empty()) return out;
  const std::uint64_t batch_seeds = std::uint64_t{o.jobs} * 16;
  for (std::uint64_t from = 0; from < o.runs; from += batch_seeds) {
    if (out_of_time()) {
      out.out_of_time = true;
      return out;
    }
    std::vector<task> tasks;
    for (std::uint64_t i = from; i < std::min(o.runs, from + batch_seeds); ++i) {
      for (const std::string* s : strategies) tasks.push_back(task{o.first_seed + i, s, {}, {}, nullptr});
    }
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k = next++; k < tasks.size(); k = next++) {
        task& t = tasks[k];
        try {
          t.config = with_sizing_run(config_for(o, *t.strategy, t.seed), body);
          sim::run_config fast = t.config;
          fast.trace = sim::trace_mode::off;
          t.first = sim::run(fast, body);
        } catch (...) {
          t.error = std::current_exception();
        }
      }
    };
    std::vector<std::thread> helpers;
    for (std::uint32_t j = 1; j < o.jobs; ++j) helpers.emplace_back(work);
    work();  // the calling thread takes its share (the watchdog watches it)
    for (std::thread& h : helpers) h.join();
    for (task& t : tasks) {
      if (t.error) std::rethrow_exception(t.error);
      ++out.runs;
      if (t.first.ok()) continue;
      keep(t.config, t.first, *t.strategy);
      if (o.stop_after != 0 && out.failures.size() >= o.stop_after) return out;
    }
  }
  return out;
}

}  // namespace

explore_result explore(const std::string& test, const test_options& o, const test_body& body) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto out_of_time = [&] {
    return o.time_budget_s > 0 &&
           std::chrono::duration<double>(clock::now() - start).count() >= o.time_budget_s;
  };
  // A record must read back what the test ran: more cores than a record may
  // say is refused here, before any run (a test with 100 cores once wrote
  // records its own replay refused).
  if (o.cores == 0 || o.cores > max_test_cores) {
    throw bad_input(".cores = " + std::to_string(o.cores) + ": expected 1 to " + std::to_string(max_test_cores) +
                    " simulated cores");
  }
  std::string dir = o.record_dir;
  if (dir.empty()) dir = env("LOCKSTEP_RECORD_DIR").value_or("lockstep-failures");
  explore_result out;
  const auto keep = [&](const sim::run_config& c, const sim::run_result& first, const std::string& strategy) {
    found_failure f;
    f.record = test_record{test, c, hashed_rerun(c, first, body), o.input};
    const std::string name = file_stem(test) + (o.input.empty() ? "" : "-" + input_tag(o.input)) + "-" + strategy +
                             "-" + std::to_string(c.seed) + ".json";
    f.record_path = std::filesystem::absolute(std::filesystem::path(dir) / name).string();
    write_test_record(f.record_path, f.record);
    out.failures.push_back(std::move(f));
  };
  if (std::find(o.strategies.begin(), o.strategies.end(), "dfs") != o.strategies.end()) {
    // The search first, once: it has no seeds to alternate with the others'.
    if (o.dpor && (o.preemption_bound || o.delay_bound)) {
      throw bad_input(".dpor = true: expected .preemption_bound and .delay_bound std::nullopt (LOCKSTEP_PREEMPTION_BOUND="
                      "none): the reduction searches without bounds");
    }
    const sim::dfs_bounds bounds{o.preemption_bound, o.delay_bound, 10'000, o.dpor};
    sim::run_config c = config_for(o, "dfs", o.first_seed);
    c.trace = sim::trace_mode::off;
    // On o.jobs threads, the tree split among them: the same verdict for any jobs.
    const split_outcome split = search_dfs_split(
        c, bounds, o.max_schedules, split_plan{o.jobs},
        [&body](const sim::run_config& rc) { return sim::run(rc, body); }, out_of_time);
    const sim::dfs_outcome& found = split.outcome;
    dfs_verdict v;
    v.schedules = found.schedules;
    v.fair_tail_runs = found.fair_tail_runs;
    v.bounds = sim::describe(bounds);
    out.runs += split.runs;
    if (found.failure) {
      v.failed = true;
      // Its decisions are the schedule (no seed draws them): the record replays them.
      sim::run_config replayed = config_for(o, "replay", o.first_seed);
      replayed.options.decisions = found.failure->decisions;
      keep(replayed, *found.failure, "dfs");
    } else if (!found.nondeterminism.empty()) {
      throw nondeterministic_body(found.nondeterminism);  // it says "dfs: " itself
    } else if (found.exhausted) {
      v.verified = true;
    } else {
      const bool budget = o.max_schedules != 0 && found.schedules >= o.max_schedules;
      v.stopped = (budget ? "max_schedules " + std::to_string(o.max_schedules) : std::string("the time budget")) +
                  ", at " + (found.position.empty() ? std::string("the root") : found.position);
    }
    out.dfs = v;
    if (o.stop_after != 0 && out.failures.size() >= o.stop_after) return out;
  }
  if (o.jobs > 1) return explore_parallel(o, body, out, keep, out_of_time);
  // Each strategy's configuration is made once; a run sets only its seed.
  // Made and copied per run (its strings, options and their vectors), it was
  // about a tenth of a small test's instructions per execution. A strategy
  // that wants a sizing run is configured afresh for each seed, as its
  // sizing run sets k or the profile.
  struct sampled {
    const std::string* name;
    sim::run_config untraced;
    bool sized;
  };
  std::vector<sampled> sampling;
  for (const std::string& strategy : o.strategies) {
    if (strategy == "dfs") continue;
    sim::run_config c = config_for(o, strategy, o.first_seed);
    // Explore untraced: hashing the trace doubles a small run's cost, and
    // only a failure's record needs the hash, so a failing seed is run
    // again with it (the trace never changes a decision). Nor are the
    // decisions listed (an allocation a run): a failing seed is run again
    // with them, for the record and the determinism check.
    c.trace = sim::trace_mode::off;
    c.record_decisions = false;
    const bool sized = sim::needs_sizing_run(strategy, c.options);
    sampling.push_back({&strategy, std::move(c), sized});
  }
  // A failing seed: the same run again with its decisions listed (`listed`
  // is the run's configuration, untraced, decisions on); one that no longer
  // fails the same way leaves `first` (no decisions) to keep's determinism
  // check. The record's configuration is `listed` traced, as config_for
  // makes it.
  const auto keep_failing = [&](sim::run_config listed, const sim::run_result& first, const std::string& strategy) {
    const sim::run_result again = sim::run(listed, body);
    const bool same = again.failed && again.failed->kind == first.failed->kind;
    listed.trace = sim::trace_mode::hash;
    keep(listed, same ? again : first, strategy);
  };
  for (std::uint64_t i = 0; i < o.runs; ++i) {
    for (sampled& s : sampling) {
      if (out_of_time()) {
        out.out_of_time = true;
        return out;
      }
      const std::uint64_t seed = o.first_seed + i;
      if (s.sized) {
        // k measured here, not inside the run, so the record holds the k used.
        sim::run_config c = with_sizing_run(config_for(o, *s.name, seed), body);
        c.trace = sim::trace_mode::off;
        c.record_decisions = false;
        const sim::run_result first = sim::run(c, body);
        ++out.runs;
        if (first.ok()) continue;
        c.record_decisions = true;
        keep_failing(std::move(c), first, *s.name);
      } else {
        s.untraced.seed = seed;
        const sim::run_result first = sim::run(s.untraced, body);
        ++out.runs;
        if (first.ok()) continue;
        sim::run_config c = s.untraced;
        c.record_decisions = true;
        keep_failing(std::move(c), first, *s.name);
      }
      if (o.stop_after != 0 && out.failures.size() >= o.stop_after) return out;
    }
  }
  return out;
}

replay_result replay(const test_record& record, const test_body& body, sim::trace_mode trace) {
  replay_result out;
  out.record = record;
  sim::run_config c = record.config;
  c.strategy = "replay";
  c.options.decisions = record.result.decisions;
  c.trace = trace;
  out.run = sim::run(c, body);
  const sim::run_result& r = out.run;
  const std::string recorded = sim::hash_hex(record.result.trace_hash);
  const std::string got = sim::hash_hex(r.trace_hash);
  const bool same = r.trace_hash == record.result.trace_hash && r.decisions == record.result.decisions;
  if (r.failed && r.failed->kind != sim::failure_kind::replay_divergence && same) {
    out.reproduced = true;
    out.summary = "reproduced: the same trace hash " + got + " after all " + std::to_string(r.decisions.size()) +
                  " recorded decisions";
  } else if (r.ok() && same) {
    out.summary = "no longer reproduces: the run held with the same trace hash " + got;
  } else if (r.ok()) {
    out.diverged = true;
    out.summary = "no longer reproduces and DIVERGED: the run held; recorded trace hash " + recorded +
                  ", replay gave " + got;
  } else {
    out.diverged = true;
    out.summary = "DIVERGED: recorded trace hash " + recorded + " after " +
                  std::to_string(record.result.decisions.size()) + " decisions, replay gave " + got + " after " +
                  std::to_string(r.decisions.size());
  }
  return out;
}

replay_result replay_continuing(const test_record& record, const test_body& body, sim::trace_mode trace) {
  replay_result out;
  out.record = record;
  sim::run_config c = record.config;
  c.strategy = "replay";
  c.options.decisions = record.result.decisions;
  c.options.continue_from = std::make_shared<sim::replay_departure>();
  c.trace = trace;
  out.run = sim::run(c, body);
  const sim::run_result& r = out.run;
  const sim::replay_departure& d = *c.options.continue_from;
  const std::size_t recorded = record.result.decisions.size();
  if (d.departed && d.recorded) {
    out.departure = "the recorded decision " + std::to_string(d.decision) + " (of " + std::to_string(recorded) +
                    ") at step " + std::to_string(d.step) + " is fiber " + std::to_string(*d.recorded) +
                    ", which was not runnable; the run went on under the random strategy (seed " +
                    std::to_string(record.config.seed) + ")";
  } else if (d.departed) {
    out.departure = "all " + std::to_string(recorded) + " recorded decisions were used at step " +
                    std::to_string(d.step) + " and the run needed more; it went on under the random strategy (seed " +
                    std::to_string(record.config.seed) + ")";
  } else if (r.decisions.size() < recorded) {
    out.departure = "the run ended after " + std::to_string(r.decisions.size()) + " of the " +
                    std::to_string(recorded) + " recorded decisions";
  } else if (r.trace_hash != record.result.trace_hash) {
    out.departure = "every recorded decision fit, but the trace differs (recorded " +
                    sim::hash_hex(record.result.trace_hash) + ", this run " + sim::hash_hex(r.trace_hash) + ")";
  }
  out.diverged = !out.departure.empty();
  if (!out.diverged && r.failed && r.decisions == record.result.decisions) {
    out.reproduced = true;
    out.summary = "reproduced: the same trace hash " + sim::hash_hex(r.trace_hash) + " after all " +
                  std::to_string(recorded) + " recorded decisions";
  } else if (r.ok()) {
    out.summary = std::string("no longer fails: the ") + (out.diverged ? "continued " : "") + "run held" +
                  (out.diverged ? " (" + out.departure + ")" : " with every recorded decision");
  } else {
    out.summary = std::string("fails: the ") + (out.diverged ? "continued " : "") + "run failed" +
                  (out.diverged ? " (" + out.departure + ")" : "");
  }
  return out;
}

std::string describe(const test_record& record) {
  const sim::run_result& r = record.result;
  std::string s = "seed=" + std::to_string(record.config.seed) + " strategy=" + record.config.strategy;
  if (record.config.strategy == "pct") {
    s += " (d=" + std::to_string(record.config.options.pct_depth) +
         ", k=" + std::to_string(record.config.options.pct_steps) + ")";
  }
  s += " cores=" + std::to_string(record.config.cores);
  if (record.config.seq_cst_only) s += " seq_cst_only";  // (the memory model off)
  if (record.config.timer_ties) s += " timer_ties";
  if (record.config.timer_jitter_ns != 0) s += " timer_jitter_ns=" + std::to_string(record.config.timer_jitter_ns);
  if (r.failed) s += ": " + std::string(sim::to_string(r.failed->kind)) + ": " + r.failed->message;
  s += " (trace hash " + sim::hash_hex(r.trace_hash) + ", " + std::to_string(r.decisions.size()) + " decisions)";
  return s;
}

std::string shell_quoted(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./=:,+-@%") == std::string::npos;
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace lockstep::testing
