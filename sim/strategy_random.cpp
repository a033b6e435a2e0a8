// random: every runnable fiber equally likely at every step.
#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class random_strategy final : public strategy {
 public:
  explicit random_strategy(std::uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "random"; }
  std::size_t pick(std::span<const candidate>, std::size_t count, std::uint64_t) override {
    return static_cast<std::size_t>(rng_.below(count));
  }
  prng* uniform_source() override { return &rng_; }
  bool restart(std::string_view name, std::uint64_t seed, const strategy_options&) override {
    if (name != "random") return false;
    rng_ = prng(seed);
    return true;
  }

 private:
  prng rng_;
};

}  // namespace

std::unique_ptr<strategy> make_random_strategy(std::uint64_t seed) {
  return std::make_unique<random_strategy>(seed);
}

}  // namespace lockstep::sim
