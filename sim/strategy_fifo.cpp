// fifo: the fiber that has been runnable longest runs first. No randomness, so
// a scenario can state exact expectations (tokio's polling order is FIFO too).
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class fifo_strategy final : public strategy {
 public:
  std::string_view name() const override { return "fifo"; }
  std::size_t pick(std::span<const candidate> c, std::size_t, std::uint64_t) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
      if (c[i].ready_seq < c[best].ready_seq) best = i;
    }
    return best;
  }
  bool restart(std::string_view name, std::uint64_t, const strategy_options&) override { return name == "fifo"; }
};

}  // namespace

std::unique_ptr<strategy> make_fifo_strategy() { return std::make_unique<fifo_strategy>(); }

}  // namespace lockstep::sim
