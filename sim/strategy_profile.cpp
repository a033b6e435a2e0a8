// profile: random's schedule, watched. surw weighs fibers by what they have
// left to do on an object; this run measures it beforehand: every step (whose
// fiber ran it) and every object a step touched. It lends the executor its
// generator as random does, so the executor draws exactly what a random run
// of the same seed draws: the same run, counted.
#include "sim/executor.hpp"
#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

// A primitive's key, not the ordering keys the executor reports beside them.
bool is_object(std::uint64_t key) {
  return (key & (executor::fiber_key_bit | executor::clock_key | executor::random_key | executor::enable_key_bit)) == 0;
}

class profile_strategy final : public strategy {
 public:
  profile_strategy(std::uint64_t seed, std::shared_ptr<run_profile> out) : rng_(seed), out_(std::move(out)) {
    *out_ = run_profile{};
  }
  std::string_view name() const override { return "profile"; }
  std::size_t pick(std::span<const candidate>, std::size_t count, std::uint64_t) override {
    return static_cast<std::size_t>(rng_.below(count));
  }
  prng* uniform_source() override { return &rng_; }

  // Every step, so each access is known to be the running fiber's.
  std::uint64_t next_watched_step() const override { return next_; }
  void on_watched_step(std::uint64_t step, std::uint32_t fiber) override {
    running_ = fiber;
    next_ = step + 1;
    grow(out_->steps, fiber);
    ++out_->steps[fiber];
  }
  bool wants_accesses() const override { return true; }
  void on_access(std::uint64_t key) override {
    if (!is_object(key)) return;
    std::vector<std::uint64_t>& by_fiber = out_->touches[key];
    grow(by_fiber, running_);
    ++by_fiber[running_];
  }

 private:
  static void grow(std::vector<std::uint64_t>& v, std::uint32_t fiber) {
    if (v.size() <= fiber) v.resize(fiber + 1, 0);
  }

  prng rng_;
  std::shared_ptr<run_profile> out_;
  std::uint64_t next_ = 1;     // steps are numbered from 1
  std::uint32_t running_ = 0;  // before the first step: the main fiber's setup
};

}  // namespace

std::unique_ptr<strategy> make_profile_strategy(std::uint64_t seed, std::shared_ptr<run_profile> out) {
  return std::make_unique<profile_strategy>(seed, std::move(out));
}

}  // namespace lockstep::sim
