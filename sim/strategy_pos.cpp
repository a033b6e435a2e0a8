// pos: partial-order sampling (Yuan, Yang, Gu, "Partial Order Aware
// Concurrency Sampling", CAV 2018).
//
// Every pending event (a runnable fiber's next step) holds a random priority,
// and the highest runs. When an event runs, the events of other fibers that
// race with it (touch an object it touched) draw new priorities; the rest keep
// theirs. A uniformly random walk places a short fiber's events early (each
// step is a coin toss between the fibers); keeping priorities across
// independent steps spreads the order of racing events more evenly over the
// run, which is what the paper measures as closer to uniform over partial
// orders.
//
// Here an event is a fiber's step between two scheduling points, known by the
// fiber and the ready_seq it stopped with (a fiber that stops again, blocks,
// wakes or yields has a new one, and draws a new priority). What a pending
// event touches is the object its scheduling point named (candidate::pending:
// the atomics, locks, channels, notifies and vars do; a sleep, a spawn or a
// join does not, and their events never redraw on a race). What the running
// event touched comes from on_access. Races are by object, not by reads and
// writes: two loads of one atomic count as racing, which redraws more often
// than the paper's rule (every schedule stays reachable either way).
//
// Like pct's strict priorities, kept priorities can starve: a busy spinner
// redraws at every step while the fiber it waits on keeps a low one, so a spin
// takes about 1/p steps for that priority p. Past fair_after steps a run goes
// on under uniformly random choices from its own stream (as pct's does), so a
// correct program never exhausts its step budget for that.
#include <algorithm>
#include <vector>

#include "sim/prng.hpp"
#include "sim/strategy.hpp"

namespace lockstep::sim {
namespace {

// Steps, every step counted. A spin that waits on a fiber of priority p lasts
// about 1/p steps, so a run goes past this in about 1 of 10,000 spins, and
// on: a run never fails its step budget (1,000,000 in the library's tests,
// 10,000,000 in the CLI's) for pos's priorities alone.
constexpr std::uint64_t fair_after = 10'000;
constexpr std::size_t touched_compact_from = 256;  // objects noted since the last choice

class pos_strategy final : public strategy {
 public:
  explicit pos_strategy(std::uint64_t seed) : rng_(seed) {}

  std::string_view name() const override { return "pos"; }

  bool restart(std::string_view name, std::uint64_t seed, const strategy_options&) override {
    if (name != "pos") return false;
    rng_ = prng(seed);
    events_.clear();
    touched_.clear();
    compact_at_ = touched_compact_from;
    return true;
  }

  bool wants_accesses() const override { return true; }
  void on_access(std::uint64_t key) override {
    touched_.push_back(key);
    if (touched_.size() >= compact_at_) {  // a long stretch without a choice: keep each object once
      std::sort(touched_.begin(), touched_.end());
      touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
      compact_at_ = std::max(touched_compact_from, 2 * touched_.size());  // amortised: many distinct objects
    }
  }

  std::size_t pick(std::span<const candidate> c, std::size_t count, std::uint64_t step) override {
    if (step > fair_after) {
      touched_.clear();
      compact_at_ = touched_compact_from;
      return static_cast<std::size_t>(rng_.below(count));
    }
    std::size_t best = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      event& e = at(c[i].fiber);
      const bool is_new = !e.drawn || e.ready_seq != c[i].ready_seq;
      const bool raced = c[i].pending != 0 && std::find(touched_.begin(), touched_.end(), c[i].pending) != touched_.end();
      if (is_new || raced) {
        e.priority = rng_.next();
        e.ready_seq = c[i].ready_seq;
        e.drawn = true;
      }
      if (i == 0) continue;
      const event& b = events_[c[best].fiber];
      if (e.priority > b.priority || (e.priority == b.priority && c[i].fiber < c[best].fiber)) best = i;
    }
    touched_.clear();
    compact_at_ = touched_compact_from;
    return best;
  }

  // A choice that is not a fiber (what a load reads, a spurious wake-up):
  // drawn uniformly, as pct's are.
  std::size_t pick_choice(std::span<const candidate>, std::size_t count, std::uint64_t) override {
    return static_cast<std::size_t>(rng_.below(count));
  }

 private:
  struct event {
    std::uint64_t priority = 0;
    std::uint64_t ready_seq = 0;  // the step the priority was drawn for
    bool drawn = false;
  };

  event& at(std::uint32_t fiber) {
    if (events_.size() <= fiber) events_.resize(fiber + 1);
    return events_[fiber];
  }

  prng rng_;
  std::vector<event> events_;          // by fiber id
  std::vector<std::uint64_t> touched_;  // objects touched since the last choice
  std::size_t compact_at_ = touched_compact_from;
};

}  // namespace

std::unique_ptr<strategy> make_pos_strategy(std::uint64_t seed) { return std::make_unique<pos_strategy>(seed); }

}  // namespace lockstep::sim
