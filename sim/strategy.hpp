// Schedule exploration strategies behind one small interface (after shuttle's
// `Scheduler`): at each step with more than one runnable fiber the executor
// asks the strategy which one runs, and on the steps a strategy watches it
// says which fiber ran. One file per strategy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::sim {

struct strategy_options;
class dfs_tree;

/// A fiber that could run at this step.
struct candidate {
  std::uint32_t fiber;     ///< fiber id: dense, in spawn order
  /// Stopped at a scheduling point still holding its core: running another
  /// fiber now preempts it. False for a fiber that yielded, was woken or is new.
  bool preempted = false;
  std::uint64_t ready_seq = 0; ///< when it became runnable; smaller is older
  /// A preempted fiber's next operation: the object it touches (the key
  /// on_access will report), or 0 when unknown (not preempted, or a
  /// scheduling point that does not say).
  std::uint64_t pending = 0;
};

class strategy {
 public:
  virtual ~strategy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// A fiber was created (PCT gives it a priority).
  virtual void on_spawn(std::uint32_t /*fiber*/) {}
  /// Index in [0, count) of the fiber to run. Called only when count > 1, and
  /// not at all when uniform_source() lends the executor a generator.
  virtual std::size_t pick(std::span<const candidate> candidates, std::size_t count,
                           std::uint64_t step) = 0;
  /// A strategy that is a plain uniform choice may lend the executor its
  /// generator, which then draws `below(count)` itself: the same draws, minus a
  /// virtual call and a candidate list per step (the hot path of `random`).
  [[nodiscard]] virtual class prng* uniform_source() { return nullptr; }
  /// The next step (numbered like `pick`'s, counting every step, choice or
  /// not) the strategy wants to hear about, or UINT64_MAX for none. The
  /// executor compares one integer per step and calls on_watched_step() only
  /// there, so other strategies pay nothing. PCT's change points use it: they
  /// must land on any step, or its bound fails.
  [[nodiscard]] virtual std::uint64_t next_watched_step() const { return UINT64_MAX; }
  /// `fiber` runs step `step` (== next_watched_step()). Teardown steps are not
  /// reported. Afterwards next_watched_step() must be later than `step`.
  virtual void on_watched_step(std::uint64_t /*step*/, std::uint32_t /*fiber*/) {}
  /// Strategies that reorder by what fibers touch (dfs with partial-order
  /// reduction) ask for on_access(): the executor then reports every object
  /// the running fiber's step touches (a lockstep primitive, another fiber, the
  /// clock). Read once per run; others pay one untaken branch per operation.
  [[nodiscard]] virtual bool wants_accesses() const { return false; }
  virtual void on_access(std::uint64_t /*key*/) {}
  /// Whether executor::harness_access() reports to on_access() too (the
  /// harness's own shared state, as one object). Read once per run.
  [[nodiscard]] virtual bool wants_harness_accesses() const { return false; }
  /// A choice that is not a fiber (executor::choose): index in [0, count),
  /// offered as candidates numbered 0..count-1 so that replay matches the
  /// recorded number. By default pick() decides; strategies whose pick reads
  /// fibers' identities (pct's priorities, dfs's round robin) override it.
  virtual std::size_t pick_choice(std::span<const candidate> candidates, std::size_t count, std::uint64_t step) {
    return pick(candidates, count, step);
  }
  /// Replay only: decisions recorded but not used when the run ended.
  [[nodiscard]] virtual std::size_t unconsumed() const { return 0; }
  /// Becomes what make_strategy(name, seed, options) would build, in place,
  /// and returns true; or returns false (changing nothing) when it cannot.
  /// An executor reused for the next run (sim::run) keeps its strategy this
  /// way instead of allocating a new one per run.
  [[nodiscard]] virtual bool restart(std::string_view /*name*/, std::uint64_t /*seed*/,
                                     const strategy_options& /*options*/) {
    return false;
  }
};

/// A recorded decision did not fit the run being replayed.
struct replay_divergence : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a guided run did (see make_guided_strategy), filled in as it runs.
struct guided_stats {
  /// A decision (0-based, over the steps that had a choice) where the fiber
  /// that ran the step before, `previous`, was runnable and another was chosen.
  struct preemption {
    std::size_t at = 0;
    std::uint32_t previous = 0;
  };
  std::vector<preemption> preemptions;
  /// Decisions where the guide did not fit (or had run out) and the fallback chose.
  std::size_t fallbacks = 0;
};

/// replay --continue: where the recorded decisions stopped fitting the run.
/// Filled in by the replay strategy during the run (the caller keeps a
/// shared_ptr to read it afterwards: the executor owns the strategy).
struct replay_departure {
  bool departed = false;
  std::uint64_t step = 0;      ///< the step that needed the decision (numbered like pick's)
  std::size_t decision = 0;    ///< index of the decision that did not fit (== size when they ran out)
  std::optional<std::uint32_t> recorded;  ///< the recorded fiber; none when the recording ran out
  std::vector<std::uint32_t> runnable;    ///< the fibers that could run at that step
};

/// What one run touched, per fiber: surw's input (strategy_surw.cpp), measured
/// by a "profile" run, which makes random's decisions for the same seed (the
/// same schedule) and counts.
struct run_profile {
  std::vector<std::uint64_t> steps;  ///< by fiber id: the steps it ran
  /// Each object touched (a primitive's key: not a fiber, the clock, the
  /// program's randomness), with how often each fiber touched it, by id.
  std::map<std::uint64_t, std::vector<std::uint64_t>> touches;
};

struct strategy_options {
  std::uint32_t pct_depth = 3;            ///< d: bugs of depth d are found with p >= 1/(n k^(d-1))
  /// k: change points are drawn from [1, k], in steps (every step counts,
  /// whether or not it had a choice). Set it near the run's length: a
  /// k far beyond a short run puts every change point past its end (the CLI
  /// measures it from a random run of the same program and seed).
  std::uint64_t pct_steps = 10'000;
  std::vector<std::uint32_t> decisions;   ///< replay, guided: the recorded fiber ids
  std::shared_ptr<guided_stats> guided;   ///< guided: where it reports (may be null)
  /// replay: when set, a decision that does not fit is not a divergence: it
  /// is described here and the run goes on under the random strategy seeded
  /// with the run's seed (`lockstep replay --continue`).
  std::shared_ptr<replay_departure> continue_from;
  /// dfs: the search a run takes its schedule from (dfs.hpp); required by "dfs".
  std::shared_ptr<dfs_tree> dfs;
  /// "profile": where the run's profile goes; "surw": the profile of a
  /// random run of the same program and seed (none: every weight is 1, a
  /// random walk).
  std::shared_ptr<run_profile> profile;
};

/// "random", "pct", "pos", "surw", "fifo", "replay" or "dfs" (with
/// options.dfs), "guided" (shrink's own) or "profile" (with options.profile);
/// throws std::invalid_argument otherwise.
std::unique_ptr<strategy> make_strategy(std::string_view name, std::uint64_t seed,
                                        const strategy_options& options);

/// Whether a run under `strategy` wants a random run of the same program and
/// seed first (the CLI and the library make it): pct whose k is 0 (k becomes
/// that run's length), surw without a profile (that run's profile).
[[nodiscard]] inline bool needs_sizing_run(std::string_view strategy, const strategy_options& o) {
  return (strategy == "pct" && o.pct_steps == 0) || (strategy == "surw" && !o.profile);
}

/// The portfolio (results/strategies.md): the strategies that, alternated,
/// reach the classic bugs in the fewest executions at their worst. The
/// library runs each seed under each of them; the CLI's `--strategy
/// portfolio` (explore's default) runs seed s under portfolio[(s - 1) % 4]:
/// seed 1 random, 2 pct, 3 pos, 4 surw, 5 random, ... So a range's first
/// seed, 1 by default, runs as `run --seed 1` (random) runs it.
inline constexpr std::string_view portfolio[] = {"random", "pct", "pos", "surw"};
[[nodiscard]] constexpr std::string_view portfolio_strategy(std::uint64_t seed) {
  constexpr std::uint64_t n = sizeof portfolio / sizeof portfolio[0];
  return portfolio[(seed + n - 1) % n];
}

/// The strategies a seed's run may be asked to use (the CLI's run, explore
/// and trace take these; explore adds portfolio and dfs).
inline constexpr std::string_view sampling_strategies[] = {"random", "pct", "pos", "surw", "fifo"};

/// The names make_strategy accepts, for usage messages.
/// A record may name any of them (replay: a schedule no seed produces).
inline constexpr std::string_view strategy_names[] = {"random", "pct", "pos", "surw", "fifo", "replay"};
static_assert(std::size(sampling_strategies) + 1 == std::size(strategy_names),
              "strategy_names is sampling_strategies and replay");
/// strategy_names as a message lists them: "random, pct, ..., replay".
inline std::string strategy_name_list() {
  std::string s;
  for (const std::string_view n : strategy_names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}
/// Whether `name` is one of strategy_names.
[[nodiscard]] constexpr bool is_strategy_name(std::string_view name) {
  for (const std::string_view n : strategy_names) {
    if (n == name) return true;
  }
  return false;
}

std::unique_ptr<strategy> make_random_strategy(std::uint64_t seed);
std::unique_ptr<strategy> make_pct_strategy(std::uint64_t seed, std::uint32_t depth,
                                            std::uint64_t steps);
/// Partial-order sampling (strategy_pos.cpp).
std::unique_ptr<strategy> make_pos_strategy(std::uint64_t seed);
/// A selectively uniform random walk over `profile` (strategy_surw.cpp).
std::unique_ptr<strategy> make_surw_strategy(std::uint64_t seed, std::shared_ptr<const run_profile> profile);
/// random's decisions for `seed`, counting what each fiber touches into `out`.
std::unique_ptr<strategy> make_profile_strategy(std::uint64_t seed, std::shared_ptr<run_profile> out);
std::unique_ptr<strategy> make_fifo_strategy();
std::unique_ptr<strategy> make_replay_strategy(std::vector<std::uint32_t> decisions);
/// Follows `guide` where the recorded fiber is runnable; otherwise (and past
/// its end) keeps the fiber that ran the step before, else the lowest id.
/// Never diverges. Reports preemptions and fallbacks into `stats` if given.
std::unique_ptr<strategy> make_guided_strategy(std::vector<std::uint32_t> guide,
                                               std::shared_ptr<guided_stats> stats);
/// Replay that, where the decisions stop fitting, records the departure in
/// `departure` and continues as make_random_strategy(seed) would pick.
std::unique_ptr<strategy> make_continuing_replay_strategy(std::vector<std::uint32_t> decisions, std::uint64_t seed,
                                                          std::shared_ptr<replay_departure> departure);

}  // namespace lockstep::sim
