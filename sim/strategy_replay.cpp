// replay: follow a recorded decision list (the fiber id chosen at each step
// that had a choice). A recorded fiber that is not runnable, or a list that
// runs out, is a divergence: the run no longer matches the recording.
#include <string>

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

}  // namespace

std::unique_ptr<strategy> make_replay_strategy(std::vector<std::uint32_t> decisions) {
  return std::make_unique<replay_strategy>(std::move(decisions));
}

}  // namespace lockstep::sim
