// pct: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi,
// Nagarakatte, "A Randomized Scheduler with Probabilistic Guarantees of
// Finding Bugs", ASPLOS 2010).
//
// Each fiber gets a random priority >= d when it is spawned; the highest
// priority runnable fiber always runs. d-1 change points k_1..k_{d-1} are
// drawn uniformly from [1, k]; the fiber that runs step k_i then drops to
// priority i, below every initial priority. A bug of depth d among n fibers
// and k steps is then found with probability >= 1/(n k^(d-1)).
//
// Steps are the executor's: every step counts, whether or not it had a
// choice. The bound assumes each change point lands on a given step with
// probability 1/k; skipping steps without a choice would drop the change
// points that fall there (most of them, in a run where one fiber often runs
// alone), so the executor reports every watched step (on_watched_step).
//
// Strict priorities starve: a fiber spinning on a lock keeps the highest
// priority and the holder never runs, so a correct spin lock failed
// `step_budget` under pct in about 40% of seeds (never under random). So
// past 2k steps (and at least 1,000, so that a small k does not make the rest
// of a longer run random) a pct run goes on under uniformly random choices
// from its own stream: a fair scheduler, under which a spin ends once the
// holder is scheduled. The change points all lie in [1, k], so the bound is
// kept. A program that still does not finish is a real livelock, under every
// strategy.
//
// Yields keep their priority. Coyote's and shuttle's PCT drop a yielding
// thread to the lowest priority, but here a fiber on a shared simulated core
// switches only where it blocks or yields: on one core a yield is every
// interleaving there is, and demoting each yielder turns pct into round
// robin (the depth-2 and depth-3 bound tests below fail with it).
#include <algorithm>
#include <vector>

#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

constexpr std::uint64_t min_fair_after = 1000;  // steps

class pct_strategy final : public strategy {
 public:
  pct_strategy(std::uint64_t seed, std::uint32_t depth, std::uint64_t steps) : rng_(seed) { start(depth, steps); }

  bool restart(std::string_view name, std::uint64_t seed, const strategy_options& options) override {
    if (name != "pct") return false;
    rng_ = prng(seed);
    changes_.clear();
    next_ = 0;
    priority_.clear();
    start(options.pct_depth, options.pct_steps);
    return true;
  }

  void start(std::uint32_t depth, std::uint64_t steps) {
    depth_ = depth == 0 ? 1 : depth;
    const std::uint64_t range = steps == 0 ? 1 : steps;
    fair_after_ = range > UINT64_MAX / 2 ? UINT64_MAX : std::max<std::uint64_t>(2 * range, min_fair_after);
    for (std::uint32_t i = 1; i < depth_; ++i) changes_.push_back({1 + rng_.below(range), i});
    // In step order, so the executor watches one step at a time; stable, so
    // change points drawn on the same step apply in draw order.
    std::stable_sort(changes_.begin(), changes_.end(),
                     [](const change& a, const change& b) { return a.step < b.step; });
  }

  std::string_view name() const override { return "pct"; }

  void on_spawn(std::uint32_t fiber) override {
    grow(fiber);
    // Random and, with overwhelming probability, distinct; ties break by id.
    // A fiber spawned mid-run draws afresh, as the paper's new threads do.
    priority_[fiber] = depth_ + (rng_.next() >> 8);
  }

  std::size_t pick(std::span<const candidate> c, std::size_t count, std::uint64_t step) override {
    if (step > fair_after_) return static_cast<std::size_t>(rng_.below(count));
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
      const auto pi = prio(c[i].fiber), pb = prio(c[best].fiber);
      if (pi > pb || (pi == pb && c[i].fiber < c[best].fiber)) best = i;
    }
    return best;
  }

  // Priorities order fibers, not a choice's outcomes: those are drawn uniformly.
  std::size_t pick_choice(std::span<const candidate>, std::size_t count, std::uint64_t) override {
    return static_cast<std::size_t>(rng_.below(count));
  }

  std::uint64_t next_watched_step() const override {
    return next_ < changes_.size() ? changes_[next_].step : UINT64_MAX;
  }

  void on_watched_step(std::uint64_t step, std::uint32_t fiber) override {
    grow(fiber);
    for (; next_ < changes_.size() && changes_[next_].step == step; ++next_) {
      priority_[fiber] = changes_[next_].priority;
    }
  }

 private:
  struct change {
    std::uint64_t step;
    std::uint64_t priority;
  };

  void grow(std::uint32_t fiber) {
    if (priority_.size() <= fiber) priority_.resize(fiber + 1, 0);
  }
  std::uint64_t prio(std::uint32_t fiber) const {
    return fiber < priority_.size() ? priority_[fiber] : 0;
  }

  prng rng_;
  std::uint32_t depth_ = 1;
  std::vector<change> changes_;  // by step
  std::size_t next_ = 0;         // the first change point not yet reached
  std::vector<std::uint64_t> priority_;  // initial >= d, change points 1..d-1
  std::uint64_t fair_after_ = UINT64_MAX;  // max(2k, 1000): later steps pick uniformly
};

}  // namespace

std::unique_ptr<strategy> make_pct_strategy(std::uint64_t seed, std::uint32_t depth,
                                            std::uint64_t steps) {
  return std::make_unique<pct_strategy>(seed, depth, steps);
}

}  // namespace lockstep::sim
