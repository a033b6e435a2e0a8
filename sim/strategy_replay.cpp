// replay: follow a recorded decision list (the fiber id chosen at each step
// that had a choice). A recorded fiber that is not runnable, or a list that
// runs out, is a divergence: the run no longer matches the recording
// (unless the run continues past it: make_continuing_replay_strategy).
#include <string>

#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class replay_strategy final : public strategy {
 public:
  explicit replay_strategy(std::vector<std::uint32_t> decisions) : decisions_(std::move(decisions)) {}
  std::string_view name() const override { return "replay"; }

  std::size_t pick(std::span<const candidate> c, std::size_t, std::uint64_t) override {
    if (next_ >= decisions_.size()) {
      throw replay_divergence("the recording has " + std::to_string(decisions_.size()) +
                              " decisions but the run needs more; runnable were " + list(c));
    }
    const std::uint32_t want = decisions_[next_];
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].fiber == want) {
        ++next_;
        return i;
      }
    }
    throw replay_divergence("decision " + std::to_string(next_) + " expected fiber " +
                            std::to_string(want) + " to run, but runnable were " + list(c));
  }

  std::size_t unconsumed() const override { return decisions_.size() - next_; }

 private:
  static std::string list(std::span<const candidate> c) {
    std::string s = "[";
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (i) s += ",";
      s += std::to_string(c[i].fiber);
    }
    return s + "]";
  }
  std::vector<std::uint32_t> decisions_;
  std::size_t next_ = 0;
};

// replay --continue: the recorded decisions while they fit; from the first
// that does not (its fiber is not runnable, or they ran out) the random
// strategy's draws, from a generator seeded as random's is, so the continued
// run is as deterministic as any seed's.
class continuing_replay_strategy final : public strategy {
 public:
  continuing_replay_strategy(std::vector<std::uint32_t> decisions, std::uint64_t seed,
                             std::shared_ptr<replay_departure> departure)
      : decisions_(std::move(decisions)), rng_(seed), departure_(std::move(departure)) {}
  // Named like replay: the failure messages a replay prints stay the same.
  std::string_view name() const override { return "replay"; }

  std::size_t pick(std::span<const candidate> c, std::size_t count, std::uint64_t step) override {
    if (!departure_->departed) {
      if (next_ < decisions_.size()) {
        const std::uint32_t want = decisions_[next_];
        for (std::size_t i = 0; i < c.size(); ++i) {
          if (c[i].fiber == want) {
            ++next_;
            return i;
          }
        }
        departure_->recorded = want;
      }
      departure_->departed = true;
      departure_->step = step;
      departure_->decision = next_;
      for (const candidate& k : c) departure_->runnable.push_back(k.fiber);
    }
    return static_cast<std::size_t>(rng_.below(count));
  }

  // Decisions left over when the run ends are not a divergence here: the
  // caller compares the count used with the recording's and says so.
  std::size_t unconsumed() const override { return 0; }

 private:
  std::vector<std::uint32_t> decisions_;
  std::size_t next_ = 0;
  prng rng_;
  std::shared_ptr<replay_departure> departure_;
};

}  // namespace

std::unique_ptr<strategy> make_continuing_replay_strategy(std::vector<std::uint32_t> decisions, std::uint64_t seed,
                                                          std::shared_ptr<replay_departure> departure) {
  return std::make_unique<continuing_replay_strategy>(std::move(decisions), seed, std::move(departure));
}

std::unique_ptr<strategy> make_replay_strategy(std::vector<std::uint32_t> decisions) {
  return std::make_unique<replay_strategy>(std::move(decisions));
}

}  // namespace lockstep::sim
