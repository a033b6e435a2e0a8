// pct: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi,
// Nagarakatte, "A Randomized Scheduler with Probabilistic Guarantees of
// Finding Bugs", ASPLOS 2010).
//
// Each fiber gets a random priority >= d when it is spawned; the highest
// priority runnable fiber always runs. d-1 change points are drawn uniformly
// from [1, k]; at the i-th one the fiber about to run drops to priority d-1-i,
// below every initial priority. A bug of depth d among n fibers and k steps is
// then found with probability >= 1/(n k^(d-1)).
#include <algorithm>
#include <vector>

#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class pct_strategy final : public strategy {
 public:
  pct_strategy(std::uint64_t seed, std::uint32_t depth, std::uint64_t steps)
      : rng_(seed), depth_(depth == 0 ? 1 : depth) {
    const std::uint64_t range = steps == 0 ? 1 : steps;
    for (std::uint32_t i = 0; i + 1 < depth_; ++i) change_points_.push_back(1 + rng_.below(range));
  }

  std::string_view name() const override { return "pct"; }

  void on_spawn(std::uint32_t fiber) override {
    if (priority_.size() <= fiber) priority_.resize(fiber + 1, 0);
    // Random and, with overwhelming probability, distinct; ties break by id.
    priority_[fiber] = depth_ + (rng_.next() >> 8);
  }

  std::size_t pick(std::span<const candidate> c, std::size_t, std::uint64_t step) override {
    std::size_t best = highest(c);
    for (std::size_t i = 0; i < change_points_.size(); ++i) {
      if (change_points_[i] == step) {
        priority_[c[best].fiber] = depth_ - 1 - i;
        best = highest(c);
      }
    }
    return best;
  }

 private:
  std::size_t highest(std::span<const candidate> c) const {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
      const auto pi = prio(c[i].fiber), pb = prio(c[best].fiber);
      if (pi > pb || (pi == pb && c[i].fiber < c[best].fiber)) best = i;
    }
    return best;
  }
  std::uint64_t prio(std::uint32_t fiber) const {
    return fiber < priority_.size() ? priority_[fiber] : 0;
  }

  prng rng_;
  std::uint32_t depth_;
  std::vector<std::uint64_t> change_points_;
  std::vector<std::uint64_t> priority_;
};

}  // namespace

std::unique_ptr<strategy> make_pct_strategy(std::uint64_t seed, std::uint32_t depth,
                                            std::uint64_t steps) {
  return std::make_unique<pct_strategy>(seed, depth, steps);
}

}  // namespace lockstep::sim
