// surw: a selectively uniform random walk, after Zhao, Wolff, Mathur and
// Roychoudhury, "Selectively Uniform Concurrency Testing", ASPLOS 2025.
//
// A random walk (a uniform choice at every step) does not sample
// interleavings uniformly: a fiber with few steps left is as likely to run
// next as one with many, so short fibers finish early in most runs. Choosing
// each fiber with probability proportional to the steps it has left does give
// every interleaving of non-blocking fibers the same probability (the
// multinomial count of the interleavings that remain). The selective form
// applies that weighting to the events that matter for a bug, the accesses to
// one shared object, so that their interleavings are sampled uniformly.
//
// Here, in our own terms:
//  - the counts come from a profile (run_profile): a random run of the same
//    program and seed, counting each fiber's steps and each object's
//    accesses per fiber (the CLI and the library make it, as they size pct's
//    k: one more run per seed);
//  - the interesting object is drawn uniformly from the objects that two
//    fibers or more touched in the profile (in key order); a profile without
//    one weighs every step instead;
//  - a fiber's weight is 1 + the accesses to that object the profile says it
//    has left (its count there less those it has made in this run). The 1
//    keeps every fiber schedulable, so every interleaving stays possible (the
//    paper's completeness) and nothing starves: a spinner whose count ran
//    out weighs 1, no more than the fiber it waits on;
//  - choices that are not fibers (what a load reads, a spurious wake-up) are
//    uniform.
// Fibers are matched to the profile by id (spawn order), which is the same in
// both runs as long as the program spawns the same fibers in the same order.
#include <algorithm>
#include <vector>

#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

class surw_strategy final : public strategy {
 public:
  surw_strategy(std::uint64_t seed, std::shared_ptr<const run_profile> profile) { start(seed, std::move(profile)); }

  std::string_view name() const override { return "surw"; }

  bool restart(std::string_view name, std::uint64_t seed, const strategy_options& options) override {
    if (name != "surw") return false;
    start(seed, options.profile);
    return true;
  }

  std::size_t pick(std::span<const candidate> c, std::size_t count, std::uint64_t) override {
    std::uint64_t total = 0;
    for (const candidate& x : c) total += weight(x.fiber);
    std::uint64_t r = rng_.below(total);
    for (std::size_t i = 0; i < c.size(); ++i) {
      const std::uint64_t w = weight(c[i].fiber);
      if (r < w) return i;
      r -= w;
    }
    return count - 1;  // not reached: r < total
  }

  std::size_t pick_choice(std::span<const candidate>, std::size_t count, std::uint64_t) override {
    return static_cast<std::size_t>(rng_.below(count));
  }

  // Every step is watched so that each access is known to be the running
  // fiber's (and, without an object, each step counts against its fiber).
  std::uint64_t next_watched_step() const override { return next_; }
  void on_watched_step(std::uint64_t step, std::uint32_t fiber) override {
    running_ = fiber;
    next_ = step + 1;
    if (!has_object_) made(fiber);
  }
  bool wants_accesses() const override { return has_object_; }
  void on_access(std::uint64_t key) override {
    if (key == object_) made(running_);
  }

 private:
  void start(std::uint64_t seed, std::shared_ptr<const run_profile> profile) {
    rng_ = prng(seed);
    next_ = 1;
    running_ = 0;
    left_.clear();
    has_object_ = false;
    object_ = 0;
    if (!profile) return;
    std::vector<std::uint64_t> shared;  // in key order: the map's
    for (const auto& [key, by_fiber] : profile->touches) {
      if (std::count_if(by_fiber.begin(), by_fiber.end(), [](std::uint64_t n) { return n != 0; }) >= 2) {
        shared.push_back(key);
      }
    }
    if (shared.empty()) {
      left_ = profile->steps;
      return;
    }
    has_object_ = true;
    object_ = shared[static_cast<std::size_t>(rng_.below(shared.size()))];
    left_ = profile->touches.at(object_);
  }

  std::uint64_t weight(std::uint32_t fiber) const { return 1 + (fiber < left_.size() ? left_[fiber] : 0); }
  void made(std::uint32_t fiber) {
    if (fiber < left_.size() && left_[fiber] > 0) --left_[fiber];
  }

  prng rng_{0};
  std::uint64_t next_ = 1;
  std::uint32_t running_ = 0;
  bool has_object_ = false;
  std::uint64_t object_ = 0;         // the interesting object's key
  std::vector<std::uint64_t> left_;  // by fiber id: its accesses to it (or steps) still to come
};

}  // namespace

std::unique_ptr<strategy> make_surw_strategy(std::uint64_t seed, std::shared_ptr<const run_profile> profile) {
  return std::make_unique<surw_strategy>(seed, std::move(profile));
}

}  // namespace lockstep::sim
