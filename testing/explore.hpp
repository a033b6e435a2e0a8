// Exploring a test body over many schedules, from plain C++: the library side
// of what `lockstep explore` and `lockstep replay` do for scenario files.
//
// A body is `void(sim::runtime&)`: it runs as the main fiber of a fresh
// simulation on core 0, spawns what it tests (rt.spawn_on(core, ...)), and
// fails the run by throwing: an oracle (LOCKSTEP_ASSERT, sim::check), an
// uncaught exception, rt.abort(); deadlocks and budgets are detected for it.
// Each run is a pure function of (body, seed, strategy, options), so a
// failure's record replays it exactly, with nothing else at hand but the
// binary that holds the body.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../sim/runtime.hpp"
#include "../sim/strategy.hpp"
#include "test_record.hpp"

namespace lockstep::testing {

using test_body = std::function<void(sim::runtime&)>;

/// What one test explores. Field order matters to designated initializers:
/// LOCKSTEP_TEST_CASE(name, .cores = 2, .runs = 5000).
struct test_options {
  std::uint32_t cores = 1;          ///< simulated cores (one per thread the test models)
  std::uint64_t first_seed = 1;     ///< seeds first_seed, first_seed + 1, ...
  std::uint64_t runs = 500;         ///< seeds per strategy
  /// Strategies, alternated seed by seed (so a time budget covers each). The
  /// default is sim::portfolio (random, pct, pos, surw), the one with the
  /// fewest executions to the first failure at its worst
  /// (results/strategies.md): 2,000 runs and 1,000 sizing runs (pct's k,
  /// surw's profile) by default.
  std::vector<std::string> strategies{std::begin(sim::portfolio), std::end(sim::portfolio)};
  std::uint32_t pct_depth = 3;      ///< d
  std::uint64_t pct_steps = 0;      ///< k; 0: the length of a random run of the same seed (as the CLI)
  double time_budget_s = 0;         ///< wall-clock budget for the whole exploration; 0: none
  std::uint64_t stop_after = 1;     ///< failures before stopping; 0: run every seed
  std::uint64_t max_steps = 1'000'000;              ///< per run: more is a step_budget failure
  std::int64_t max_time_ns = 3600LL * 1'000'000'000;  ///< per run: virtual time budget
  std::string record_dir{};         ///< where records go; empty: LOCKSTEP_RECORD_DIR or ./lockstep-failures
  /// "dfs" among the strategies: every schedule of first_seed within these
  /// bounds, depth first (sim/dfs.hpp), searched once before the seeds of the
  /// others; nullopt is unbounded. The default bounds preemptions at 2.
  std::optional<std::uint32_t> preemption_bound = 2;
  std::optional<std::uint32_t> delay_bound{};
  std::uint64_t max_schedules = 1'000'000;  ///< dfs: its budget (0: none); past it "not verified"
  /// dfs: dynamic partial-order reduction (sim/dfs.hpp): interleavings that
  /// only reorder steps on different lockstep objects run once. Searches
  /// without bounds: set preemption_bound (and delay_bound) to std::nullopt.
  /// Sound when the fibers share state only through lockstep's types.
  bool dpor = false;
  /// Wall-clock seconds a fiber may run without reaching a lockstep
  /// operation before the test binary reports it (fiber, last operation and
  /// line, seed, rerun command) and exits 3: a real blocking call in code
  /// under test would otherwise hang it silently (testing/watchdog.hpp). 0: off.
  std::uint32_t hang_limit_s = 10;
  /// OS threads that run the seeds (LOCKSTEP_JOBS): the outcome (runs,
  /// failures, records) is the same for any value, as if they ran one by one
  /// in seed order. Above 1 the test body runs on several threads at once, so
  /// it must not share state between runs outside the simulation; the hang
  /// watchdog sees only the calling thread's share. dfs searches on one.
  std::uint32_t jobs = 1;
  /// A failing case's first failure is shrunk (testing/shrink.hpp): fewer
  /// preemptions, the same failure, in a record of its own beside the
  /// first (LOCKSTEP_SHRINK=0 turns it off). At most this many runs.
  std::uint64_t shrink_runs = 500;
  /// sim_std's atomics as sequentially consistent (every load reads the
  /// newest store) instead of the C++ memory model (sim/memory_model.hpp),
  /// which lets relaxed and acquire loads read older stores where C++ allows
  /// (LOCKSTEP_SEQ_CST_ONLY=1). Cheaper; finds no bug that needs a stale read.
  bool seq_cst_only = false;
  /// Timers due at one virtual instant as a choice: all fire together, or
  /// one alone first (sim::run_config::timer_ties; LOCKSTEP_TIMER_TIES=1).
  bool timer_ties = false;
  /// Each timed wait (sleep, a wait with a timeout) ends up to this many
  /// virtual ns late, never early, by a recorded choice, so timers cross
  /// their neighbours' deadlines (sim::run_config::timer_jitter_ns;
  /// LOCKSTEP_TIMER_JITTER=NS). 0: off.
  std::int64_t timer_jitter_ns = 0;
  /// What this case was generated from, in words or JSON (a property's
  /// generated program): kept in each record ("input") and printed with the
  /// failure. A non-empty input also names the records
  /// (TEST-INPUTHASH-STRATEGY-SEED.json, the hash XXH3 of the input), so the
  /// cases of one property (rapidcheck shrinking, say) do not overwrite each
  /// other's records.
  std::string input{};
};

/// Overrides `o` from the environment, so CI can soak without recompiling:
///   LOCKSTEP_SEEDS=A..B (first_seed = A, runs = B - A + 1), LOCKSTEP_RUNS=N,
///   LOCKSTEP_STRATEGIES=random,pct, LOCKSTEP_PCT_DEPTH=D, LOCKSTEP_TIME_BUDGET=S
///   (seconds), LOCKSTEP_STOP_AFTER=N, LOCKSTEP_MAX_STEPS=N, LOCKSTEP_RECORD_DIR=DIR,
///   LOCKSTEP_PREEMPTION_BOUND=N|none, LOCKSTEP_DELAY_BOUND=N|none, LOCKSTEP_MAX_SCHEDULES=N,
///   LOCKSTEP_DPOR=0|1, LOCKSTEP_HANG_LIMIT=S (seconds; 0: off), LOCKSTEP_SEQ_CST_ONLY=0|1,
///   LOCKSTEP_TIMER_TIES=0|1, LOCKSTEP_TIMER_JITTER=NS.
/// Throws bad_input naming the variable and what was expected.
void apply_environment(test_options& o);

/// The run configuration of one seed under one strategy, the trace hashed
/// (pct_steps still 0 when it is to be measured: see with_sizing_run).
sim::run_config config_for(const test_options& o, const std::string& strategy, std::uint64_t seed);

/// A config that needs a sizing run (sim::needs_sizing_run) gets it, as the
/// CLI's do: pct with pct_steps 0 its k from a random run of the same seed,
/// surw its profile from it; any other config is returned as it is.
sim::run_config with_sizing_run(sim::run_config config, const test_body& body);

/// Runs one seed (after with_sizing_run); the trace is as `config.trace` says.
sim::run_result run_one(const sim::run_config& config, const test_body& body);

struct found_failure {
  test_record record;
  std::string record_path;  ///< absolute; empty when no record was written
};

/// What the dfs search of a test found (when "dfs" was among its strategies).
struct dfs_verdict {
  std::uint64_t schedules = 0;
  bool verified = false;       ///< every schedule within the bounds ran and held
  bool failed = false;         ///< a schedule failed: its record is among the failures
  std::string stopped;         ///< neither: why it stopped ("max_schedules", "time") and where
  std::uint64_t fair_tail_runs = 0;
  std::string bounds;          ///< "preemption bound 2, delay bound none"
};

struct explore_result {
  std::uint64_t runs = 0;
  std::optional<dfs_verdict> dfs;
  std::vector<found_failure> failures;
  bool out_of_time = false;  ///< the time budget stopped it before the last seed
};

/// The dfs search found `body` not deterministic: a run with the same
/// decisions as an earlier one saw other runnable fibers, or ended sooner (a
/// clock, a real random source, state kept between runs). No record could
/// replay it, so none is written; the test binary exits 4, as the CLI does.
struct nondeterministic_body : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Explores `body` over o.runs seeds per strategy, writing each failure's
/// record under o.record_dir (as <test>-<strategy>-<seed>.json). Throws
/// bad_input for options it cannot honour, nondeterministic_body (above).
explore_result explore(const std::string& test, const test_options& o, const test_body& body);

struct replay_result {
  test_record record;
  sim::run_result run;
  /// The run failed with the record's failure, the same decisions and the
  /// same trace hash: the bug is still there, byte for byte.
  bool reproduced = false;
  /// The run made other decisions or another trace than the record: the body
  /// or the code under test changed, or it is not deterministic.
  bool diverged = false;
  std::string summary;  ///< one line saying which, with both hashes
  /// replay_continuing only: where the run left the record ("" when it
  /// followed every recorded decision), said as a sentence.
  std::string departure;
};

/// Follows the record's decisions (the replay strategy, as `lockstep replay`);
/// `trace` full keeps the JSON Lines in run.trace_text.
replay_result replay(const test_record& record, const test_body& body,
                     sim::trace_mode trace = sim::trace_mode::hash);

/// LOCKSTEP_REPLAY_CONTINUE: follows the record's decisions while they fit,
/// then goes on under the random strategy seeded with the record's seed (the
/// CLI's `replay --continue`), so a record kept from a bug that has since been
/// fixed (or a changed test) runs to an end: "no longer fails" when that run
/// held, reproduced when it is the same run, and otherwise the new failure.
replay_result replay_continuing(const test_record& record, const test_body& body,
                                sim::trace_mode trace = sim::trace_mode::hash);

/// One line for a failure: seed, strategy, cores, kind and message, trace hash.
std::string describe(const test_record& record);

/// `s` quoted for a POSIX shell when it needs it.
std::string shell_quoted(const std::string& s);

}  // namespace lockstep::testing

namespace lockstep::testing {
/// LOCKSTEP_ASSERT's failure: an oracle named after the macro, the message
/// "file:line: condition" with the file's base name (the same on every machine).
[[noreturn]] void assertion_failed(const char* file, int line, const char* condition, const std::string& message);
}  // namespace lockstep::testing

/// An assertion inside a test body (any fiber): when `cond` is false the run
/// fails as an oracle naming the file, line and condition; the exploration
/// records it and goes on, the test binary does not abort.
#define LOCKSTEP_ASSERT(cond) \
  ((cond) ? void(0) : ::lockstep::testing::assertion_failed(__FILE__, __LINE__, #cond, std::string()))
/// The same with a message of the caller's (a std::string or a string literal).
#define LOCKSTEP_ASSERT_MSG(cond, msg) \
  ((cond) ? void(0) : ::lockstep::testing::assertion_failed(__FILE__, __LINE__, #cond, std::string(msg)))
