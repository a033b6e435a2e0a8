// guided: follow a decision list where it fits, and where it does not (the
// recorded fiber is not runnable, or the list has run out) keep running the
// fiber that ran the step before, or else the runnable fiber with the lowest
// id. Unlike replay it never diverges, so a shortened or edited list still
// gives a run: `lockstep shrink` uses it to take preemptions out of a
// failing schedule. No randomness: the run is a function of the list alone.
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class guided_strategy final : public strategy {
 public:
  guided_strategy(std::vector<std::uint32_t> guide, std::shared_ptr<guided_stats> stats)
      : guide_(std::move(guide)), stats_(std::move(stats)) {
    if (stats_) *stats_ = guided_stats{};
  }
  std::string_view name() const override { return "guided"; }

  std::size_t pick(std::span<const candidate> c, std::size_t, std::uint64_t) override {
    const std::size_t at = next_++;
    const std::size_t previous = index_of(c, last_fiber_);
    std::size_t chosen = c.size();
    if (at < guide_.size()) chosen = index_of(c, guide_[at]);
    if (chosen == c.size()) {
      if (stats_) ++stats_->fallbacks;
      chosen = previous != c.size() ? previous : lowest(c);
    }
    // A preemption: the fiber that ran the step before could go on, and another runs.
    if (previous != c.size() && chosen != previous && stats_) {
      stats_->preemptions.push_back({at, c[previous].fiber});
    }
    return chosen;
  }

  // Every step is watched (not only those with a choice): the fiber that ran
  // last is what a preemption is measured against.
  std::uint64_t next_watched_step() const override { return watched_; }
  void on_watched_step(std::uint64_t step, std::uint32_t fiber) override {
    last_fiber_ = fiber;
    watched_ = step + 1;
  }

 private:
  static std::size_t index_of(std::span<const candidate> c, std::uint64_t fiber) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].fiber == fiber) return i;
    }
    return c.size();
  }
  static std::size_t lowest(std::span<const candidate> c) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
      if (c[i].fiber < c[best].fiber) best = i;
    }
    return best;
  }

  std::vector<std::uint32_t> guide_;
  std::shared_ptr<guided_stats> stats_;
  std::size_t next_ = 0;
  std::uint64_t last_fiber_ = UINT64_MAX;  // none yet: no step has run
  std::uint64_t watched_ = 1;              // steps are numbered from 1
};

}  // namespace

std::unique_ptr<strategy> make_guided_strategy(std::vector<std::uint32_t> guide,
                                               std::shared_ptr<guided_stats> stats) {
  return std::make_unique<guided_strategy>(std::move(guide), std::move(stats));
}

}  // namespace lockstep::sim
