// dfs: one schedule of a bounded depth-first search (dfs.hpp), and the
// search's moves between runs.
#include <algorithm>
#include <iterator>
#include <memory>
#include <string>

#include "sim/dfs.hpp"

#include "sim/executor.hpp"

namespace lockstep::sim {
namespace {

constexpr std::uint64_t executor_enable_bit = executor::enable_key_bit;

std::string fiber_list(std::span<const std::uint32_t> ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

/// Candidate indices in round-robin order from the first fiber id after
/// `previous` (cyclically; from the lowest id when there is none before).
std::vector<std::uint32_t> rotation(std::span<const candidate> c, std::uint64_t previous) {
  std::vector<std::uint32_t> ids;
  ids.reserve(c.size());
  for (const candidate& k : c) ids.push_back(k.fiber);
  std::sort(ids.begin(), ids.end());
  const auto after = std::upper_bound(ids.begin(), ids.end(), previous,
                                      [](std::uint64_t p, std::uint32_t id) { return p < id; });
  std::rotate(ids.begin(), after, ids.end());
  return ids;
}

std::size_t index_of(std::span<const candidate> c, std::uint32_t fiber) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i].fiber == fiber) return i;
  }
  return c.size();
}

class dfs_strategy final : public strategy {
 public:
  explicit dfs_strategy(std::shared_ptr<dfs_tree> tree) : tree_(std::move(tree)) { tree_->begin_run(); }
  std::string_view name() const override { return "dfs"; }
  std::size_t pick(std::span<const candidate> c, std::size_t, std::uint64_t step) override {
    return tree_->pick(c, step, previous_);
  }
  // A choice has no fiber that ran before it: its ordinary outcome (0) first,
  // the others as delays, none a preemption.
  std::size_t pick_choice(std::span<const candidate> c, std::size_t, std::uint64_t step) override {
    return tree_->pick_choice(c, step);
  }
  // Every step is watched: the fiber that ran last is what preemptions and
  // the round-robin order are measured from.
  std::uint64_t next_watched_step() const override { return watched_; }
  void on_watched_step(std::uint64_t step, std::uint32_t fiber) override {
    previous_ = fiber;
    watched_ = step + 1;
    if (dpor_) tree_->note_step(fiber);
  }
  bool wants_accesses() const override { return dpor_; }
  bool wants_harness_accesses() const override { return dpor_; }
  void on_access(std::uint64_t key) override { tree_->note_access(key); }

 private:
  std::shared_ptr<dfs_tree> tree_;
  bool dpor_ = tree_->bounds().dpor;
  std::uint64_t previous_ = UINT64_MAX;
  std::uint64_t watched_ = 1;  // steps are numbered from 1
};

}  // namespace

std::string describe(const dfs_bounds& b) {
  if (b.dpor) return "no bounds, partial-order reduction";
  const auto text = [](const std::optional<std::uint32_t>& n) { return n ? std::to_string(*n) : std::string("none"); };
  return "preemption bound " + text(b.preemptions) + ", delay bound " + text(b.delays);
}

bool dfs_tree::node::fits(std::uint32_t i, const dfs_bounds& b) const {
  const std::uint32_t preemptions = preemptions_before + (i >= preempting_from ? 1U : 0U);
  if (b.preemptions && preemptions > *b.preemptions) return false;
  return !b.delays || delays_before + i <= *b.delays;
}

void dfs_tree::begin_run() {
  steps_.clear();
  pending_cause_.assign(pending_cause_.size(), std::string::npos);
  accesses_.clear();
  depth_ = 0;
  preemptions_ = 0;
  delays_ = 0;
  in_fair_tail_ = false;
  sleep_.clear();
  sleep_through_ = 0;
  sleep_node_ = 0;
  asleep_from_ = SIZE_MAX;
  replayed_steps_ = 0;
  if (bounds_.dpor && !path_.empty()) {
    replayed_steps_ = static_cast<std::size_t>(path_.back().step - 1);
    // The run replays the path up to its last decision, where an earlier run
    // carried the sleep set already (that decision keeps it): start there.
    // A choice keeps none (its step is the one that changes): start at the
    // decision between steps before it, or at the run's start.
    std::size_t d = path_.size() - 1;
    while (d > 0 && path_[d].choice) --d;
    if (!path_[d].choice) {
      sleep_node_ = d;
      sleep_through_ = static_cast<std::size_t>(path_[d].step - 1);
    }
  }
}

namespace {

// Two steps commute when they touched no object in common (both lists sorted).
bool independent(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  if (a.empty() || b.empty() || a.back() < b.front() || b.back() < a.front()) return true;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return false;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return true;
}

}  // namespace

bool dfs_tree::asleep(std::uint32_t fiber) const {
  return std::any_of(sleep_.begin(), sleep_.end(), [fiber](const sleeper& s) { return s.fiber == fiber; });
}

// Carries the sleep set through the steps run since the last call (each step
// k is step number k + 1). A step a decision took puts that decision's
// earlier tries to sleep beside what was asleep there; every step then wakes
// the sleepers it does not commute with. A step run by a sleeper (it was the
// only fiber that could run) means every runnable fiber was asleep.
void dfs_tree::update_sleep(std::size_t before) {
  for (; sleep_through_ < std::min(before, steps_.size()) && asleep_from_ == SIZE_MAX; ++sleep_through_) {
    const std::size_t k = sleep_through_;
    const std::uint32_t fiber = steps_[k].fiber;
    const bool decided = took_by_decision(k);
    // A step no decision took and no sleeper waits on changes nothing here.
    if (!decided && sleep_.empty()) continue;
    const std::size_t end = k + 1 < steps_.size() ? steps_[k + 1].first_access : accesses_.size();
    touched_.assign(accesses_.begin() + static_cast<std::ptrdiff_t>(steps_[k].first_access),
                    accesses_.begin() + static_cast<std::ptrdiff_t>(end));
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    if (decided) {
      node& n = path_[sleep_node_++];
      std::shared_ptr<const std::vector<std::uint64_t>>& took = n.took[n.chosen];
      if (!took) {
        took = std::make_shared<const std::vector<std::uint64_t>>(touched_);
      } else if (steps_[k].varies && !std::includes(took->begin(), took->end(), touched_.begin(), touched_.end())) {
        // Every run that takes this decision runs the step again with other
        // values: it sleeps on what any of them touched (took[j] is read
        // only once j's subtree, every value, is done).
        merged_.clear();
        std::set_union(took->begin(), took->end(), touched_.begin(), touched_.end(), std::back_inserter(merged_));
        took = std::make_shared<const std::vector<std::uint64_t>>(merged_);
      }
      sleep_ = n.sleep;
      for (std::uint32_t j = 0; j < n.order.size(); ++j) {
        if (j != n.chosen && n.done[j] && n.took[j]) sleep_.push_back({n.order[j], n.took[j]});
      }
    } else if (asleep(fiber)) {
      asleep_from_ = k;
      ++sleep_blocked_runs_;
      break;
    }
    if (sleep_.empty()) continue;
    std::erase_if(sleep_, [&](const sleeper& z) { return z.fiber == fiber || !independent(*z.touches, touched_); });
  }
}

std::size_t dfs_tree::pick(std::span<const candidate> c, std::uint64_t step, std::uint64_t previous) {
  if (bounds_.dpor) update_sleep();
  return decide(c, step, previous, false);
}

// Whether a decision between steps took step k (the next such node on the
// path is k's); choices inside steps carry nothing for the sleep set.
bool dfs_tree::took_by_decision(std::size_t k) {
  while (sleep_node_ < path_.size() && path_[sleep_node_].choice) ++sleep_node_;
  return sleep_node_ < path_.size() && path_[sleep_node_].step == k + 1;
}

std::size_t dfs_tree::pick_choice(std::span<const candidate> c, std::uint64_t step) {
  if (bounds_.dpor && !steps_.empty()) {
    // The step under way; for a timer tie (decided by the scheduler between
    // steps) the last step, which every value of the tie runs alike, so
    // marking it varying changes nothing but the cost of its union.
    const std::size_t k = steps_.size() - 1;
    steps_[k].varies = true;
    // The steps before it have ended: carry the sleep set through them. A
    // sleeper's step that no decision took (it was the only fiber that could
    // run) repeats an explored order, as update_sleep() would find once the
    // step ends: its choices are not branched on either.
    update_sleep(k);
    if (asleep_from_ == SIZE_MAX && sleep_through_ == k && !took_by_decision(k) && asleep(steps_[k].fiber)) {
      asleep_from_ = k;
      ++sleep_blocked_runs_;
    }
  }
  return decide(c, step, UINT64_MAX, bounds_.dpor);
}

std::size_t dfs_tree::decide(std::span<const candidate> c, std::uint64_t step, std::uint64_t previous, bool choice) {
  if (in_fair_tail_ || asleep_from_ != SIZE_MAX || step > bounds_.fair_after) {
    if (!in_fair_tail_ && asleep_from_ == SIZE_MAX) {
      in_fair_tail_ = true;
      ++fair_tail_runs_;
    }
    // Round robin, switching at every step: the next fiber by id after the
    // last one, cyclically (the smallest id above it, else the smallest).
    std::size_t above = c.size(), lowest = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].fiber < c[lowest].fiber) lowest = i;
      if (c[i].fiber > previous && (above == c.size() || c[i].fiber < c[above].fiber)) above = i;
    }
    return above != c.size() ? above : lowest;
  }
  if (depth_ < path_.size()) {
    // On the path an earlier run took: the same choice, which needs the same candidates.
    // (Checked without allocating: this runs at every decision of every run.)
    const node& n = path_[depth_];
    bool same = c.size() == n.order.size();
    for (std::size_t i = 0; same && i < c.size(); ++i) {
      same = std::find(n.order.begin(), n.order.end(), c[i].fiber) != n.order.end();
    }
    if (!same) {
      std::vector<std::uint32_t> seen;
      for (const candidate& k : c) seen.push_back(k.fiber);
      std::vector<std::uint32_t> before = n.order;
      std::sort(seen.begin(), seen.end());
      std::sort(before.begin(), before.end());
      throw replay_divergence("dfs: at decision " + std::to_string(depth_) + " the runnable fibers were " +
                              fiber_list(seen) + ", where an earlier run with the same decisions before it had " +
                              fiber_list(before) +
                              ": the program is not deterministic (a clock, a real random source, state kept "
                              "between runs?)");
    }
    if (n.chosen >= n.preempting_from) ++preemptions_;
    delays_ += n.chosen;
    ++depth_;
    return index_of(c, n.order[n.chosen]);
  }
  node n;
  n.preemptions_before = preemptions_;
  n.delays_before = delays_;
  n.order = rotation(c, previous);
  n.preempting_from = static_cast<std::uint32_t>(n.order.size());
  const std::size_t prev = previous > UINT32_MAX ? c.size() : index_of(c, static_cast<std::uint32_t>(previous));
  if (prev != c.size()) {
    // The rotation starts after `previous`, so it is last.
    if (c[prev].preempted) {
      // It can go on: going on is the default, anything else preempts it.
      std::rotate(n.order.begin(), n.order.end() - 1, n.order.end());
      n.preempting_from = 1;
    } else {
      // It yielded: the others first; running it again costs a preemption.
      n.preempting_from = static_cast<std::uint32_t>(n.order.size() - 1);
    }
  }
  if (path_.size() < start_.size()) {
    // Resuming: the position's choice here, which must fit as advance() would have let it.
    const std::uint32_t want = start_[path_.size()];
    if (want >= n.order.size() || !n.fits(want, bounds_)) {
      throw replay_divergence("dfs: the starting position does not fit this program: decision " +
                              std::to_string(path_.size()) + " has " + std::to_string(n.order.size()) +
                              " candidates and takes choice " + std::to_string(want) +
                              (want < n.order.size() ? " beyond the bounds" : ""));
    }
    n.chosen = want;
    if (want >= n.preempting_from) ++preemptions_;
    delays_ += want;
  }
  n.step = step;
  if (choice) {
    // Every value, the ordinary one first; a choice has no sleepers.
    n.choice = true;
    n.backtrack.assign(n.order.size(), true);
    n.done.assign(n.order.size(), false);
    n.done[0] = true;
    n.took.assign(n.order.size(), nullptr);
  } else if (bounds_.dpor) {
    // The first candidate in order that is not asleep; none: this order was
    // explored already, and the run finishes without branching.
    std::uint32_t awake = 0;
    while (awake < n.order.size() && asleep(n.order[awake])) ++awake;
    if (awake == n.order.size()) {
      asleep_from_ = steps_.size();
      ++sleep_blocked_runs_;
      return decide(c, step, previous, false);
    }
    n.chosen = awake;
    n.backtrack.assign(n.order.size(), false);
    n.done.assign(n.order.size(), false);
    n.backtrack[n.chosen] = true;
    n.done[n.chosen] = true;
    n.took.assign(n.order.size(), nullptr);
    n.sleep = sleep_;
  }
  const std::uint32_t fiber = n.order[n.chosen];
  path_.push_back(std::move(n));
  ++depth_;
  deepest_ = std::max(deepest_, depth_);
  return index_of(c, fiber);
}

bool dfs_tree::advance() {
  start_.clear();  // the first run took the starting position; the next are the search's
  if (depth_ < path_.size()) {
    nondeterminism_ = "dfs: a run ended after " + std::to_string(depth_) + " decisions, where an earlier run with "
                      "the same decisions took " + std::to_string(path_.size()) +
                      ": the program is not deterministic (a clock, a real random source, state kept between runs?)";
    return false;
  }
  if (bounds_.dpor) return advance_dpor();
  while (!path_.empty()) {
    node& n = path_.back();
    const std::uint32_t next = n.chosen + 1;
    // Costs only grow along the order, so the first child that does not fit ends this node.
    if (next < n.order.size() && n.fits(next, bounds_)) {
      n.chosen = next;
      // Positions only grow: the first one at the end ends the search.
      return !end_ || !at_or_after(next_choices(), *end_);
    }
    path_.pop_back();
  }
  return false;
}

std::optional<std::vector<std::uint32_t>> dfs_tree::split_off() {
  if (bounds_.dpor) throw std::invalid_argument("dfs: a search with partial-order reduction cannot be split");
  // Every decision on the path has its later siblings still to run (the
  // deepest one's choice is the next run's); the shallowest gives the most.
  for (std::size_t j = 0; j < path_.size(); ++j) {
    const node& n = path_[j];
    const std::uint32_t next = n.chosen + 1;
    if (next >= n.order.size() || !n.fits(next, bounds_)) continue;
    std::vector<std::uint32_t> from;
    from.reserve(j + 1);
    for (std::size_t i = 0; i < j; ++i) from.push_back(path_[i].chosen);
    from.push_back(next);
    if (end_ && at_or_after(from, *end_)) continue;  // past this part's end; a deeper one may be before it
    end_ = from;
    return from;
  }
  return std::nullopt;
}

std::vector<std::uint32_t> dfs_tree::choices() const {
  std::vector<std::uint32_t> out;
  out.reserve(path_.size());
  for (const node& n : path_) out.push_back(n.chosen);
  return out;
}

std::vector<std::uint32_t> dfs_tree::next_choices() const { return path_.empty() ? start_ : choices(); }

bool at_or_after(std::span<const std::uint32_t> prefix, std::span<const std::uint32_t> bound) {
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const std::uint32_t mine = i < prefix.size() ? prefix[i] : 0;  // defaults past the prefix
    if (mine != bound[i]) return mine > bound[i];
  }
  return true;  // under the bound's position
}

void dfs_tree::note_step(std::uint32_t fiber) {
  std::size_t cause = std::string::npos;
  if (fiber < pending_cause_.size()) {
    cause = pending_cause_[fiber];
    pending_cause_[fiber] = std::string::npos;
  }
  steps_.push_back({fiber, accesses_.size(), cause});
}

void dfs_tree::note_access(std::uint64_t key) {
  if (steps_.empty()) return;  // before the first step: the run's setup
  if ((key & executor_enable_bit) != 0 && (key & ~executor_enable_bit) <= UINT32_MAX) {
    const auto fiber = static_cast<std::size_t>(key & ~executor_enable_bit);
    if (fiber >= pending_cause_.size()) pending_cause_.resize(fiber + 1, std::string::npos);
    pending_cause_[fiber] = steps_.size() - 1;
    return;
  }
  accesses_.push_back(key);
}

// The races of the run just ended (see dfs.hpp), each adding a fiber to try
// at the decision before its earlier step. Objects get dense ids (their rank
// among the run's), clocks live in flat arrays kept between runs.
void dfs_tree::add_backtrack_points() {
  // Past the point where every runnable fiber was asleep the run repeats an
  // explored order: its races there are another run's.
  const std::size_t explored = std::min(steps_.size(), asleep_from_);
  const std::size_t access_end = explored < steps_.size() ? steps_[explored].first_access : accesses_.size();
  keys_.assign(accesses_.begin(), accesses_.begin() + static_cast<std::ptrdiff_t>(access_end));
  std::sort(keys_.begin(), keys_.end());
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  const auto id_of = [this](std::uint64_t key) {
    return static_cast<std::size_t>(std::lower_bound(keys_.begin(), keys_.end(), key) - keys_.begin());
  };
  std::size_t fibers = 0;
  for (std::size_t k = 0; k < explored; ++k) fibers = std::max<std::size_t>(fibers, steps_[k].fiber + 1);
  const std::size_t f_count = fibers;
  clock_.assign(f_count * f_count, 0);
  after_.resize(explored * f_count);
  before_.resize(f_count);
  now_.resize(f_count);
  last_step_.assign(keys_.size(), std::string::npos);
  last_fiber_.resize(keys_.size());
  last_seq_.resize(keys_.size());
  last_clock_.resize(keys_.size() * f_count);
  // Steps are numbered from 1: the decision of step number s is path_[node_of_step_[s]].
  node_of_step_.assign(explored + 2, std::string::npos);
  for (std::size_t i = 0; i < path_.size(); ++i) {
    if (!path_[i].choice && path_[i].step < node_of_step_.size()) node_of_step_[path_[i].step] = i;
  }
  const std::size_t replayed = replayed_steps_;
  for (std::size_t k = 0; k < explored; ++k) {
    const std::uint32_t p = steps_[k].fiber;
    const std::size_t end = k + 1 < steps_.size() ? steps_[k + 1].first_access : accesses_.size();
    // What happened before this step: its fiber's past, and the step that
    // made it runnable (its spawn or its wake-up) with that step's past.
    std::copy_n(clock_.begin() + static_cast<std::ptrdiff_t>(p * f_count), f_count, before_.begin());
    if (steps_[k].cause != std::string::npos) {
      const std::uint32_t* c = after_.data() + steps_[k].cause * f_count;
      for (std::size_t f = 0; f < f_count; ++f) before_[f] = std::max(before_[f], c[f]);
    }
    now_ = before_;
    const std::uint32_t seq = ++now_[p];
    for (std::size_t a = steps_[k].first_access; a < end; ++a) {
      const std::size_t id = id_of(accesses_[a]);
      const std::size_t j = last_step_[id];
      if (j == std::string::npos) continue;
      const std::uint32_t q = last_fiber_[id];
      // A race of two steps before the path's last decision was found by the
      // run that first took them (the same steps, the same objects).
      if (q != p && k >= replayed && before_[q] < last_seq_[id]) {
        // j and k race: the decision of step j + 1 gets a fiber to try that
        // starts the reversal (add_source, once k's clock is whole).
        races_.push_back(j);
      }
      const std::uint32_t* c = last_clock_.data() + id * f_count;
      for (std::size_t f = 0; f < f_count; ++f) now_[f] = std::max(now_[f], c[f]);
    }
    for (const std::size_t j : races_) {
      if (const std::size_t at = node_of_step_[j + 1]; at != std::string::npos) add_source(path_[at], j, k, f_count);
    }
    races_.clear();
    for (std::size_t a = steps_[k].first_access; a < end; ++a) {
      const std::size_t id = id_of(accesses_[a]);
      last_step_[id] = k;
      last_fiber_[id] = p;
      last_seq_[id] = seq;
      std::copy(now_.begin(), now_.end(), last_clock_.begin() + static_cast<std::ptrdiff_t>(id * f_count));
    }
    std::copy(now_.begin(), now_.end(), after_.begin() + static_cast<std::ptrdiff_t>(k * f_count));
    std::copy(now_.begin(), now_.end(), clock_.begin() + static_cast<std::ptrdiff_t>(p * f_count));
  }
}

// Reversing the race of steps j and k (k by fiber p) means running first,
// at j's decision, the steps after j that do not happen after it, then k: v
// in source-DPOR's terms (Abdulla, Aronis, Jonsson, Sagonas, POPL 2014). The
// decision must try one of v's initials, a fiber whose first step in v has
// no step of v before it; none is added when it tries one already. Trying p
// (Flanagan & Godefroid's rule) is not enough: when p's step k happens after
// a step in v (p learned something from a fiber that ran after j), running p
// first at j's decision does not reach the reversal, and whole outcomes were
// missed (test_litmus, partial_order_reduction_misses_no_outcome_of_the_full_search).
void dfs_tree::add_source(node& n, std::size_t j, std::size_t k, std::size_t f_count) {
  if (std::all_of(n.backtrack.begin(), n.backtrack.end(), [](bool b) { return b; })) return;  // nothing to add
  const std::uint32_t q = steps_[j].fiber;
  const std::uint32_t seq_j = after_[j * f_count + q];
  first_seq_.assign(f_count, UINT32_MAX);  // by fiber: the seq of its first step in v
  initials_.clear();
  const auto has_predecessor_in_v = [&](const std::uint32_t* clock) {
    for (std::size_t f = 0; f < f_count; ++f) {
      if (first_seq_[f] != UINT32_MAX && clock[f] >= first_seq_[f]) return true;
    }
    return false;
  };
  for (std::size_t i = j + 1; i < k; ++i) {
    const std::uint32_t* clock = after_.data() + i * f_count;
    if (clock[q] >= seq_j) continue;  // happens after j: not in v
    const std::uint32_t fi = steps_[i].fiber;
    if (!has_predecessor_in_v(clock)) initials_.push_back(fi);
    first_seq_[fi] = std::min(first_seq_[fi], clock[fi]);
  }
  const std::uint32_t p = steps_[k].fiber;
  if (!has_predecessor_in_v(now_.data())) initials_.push_back(p);  // k ends v (now_: all k happens after)
  std::size_t pick = n.order.size();
  for (const std::uint32_t f : initials_) {
    const auto at = std::find(n.order.begin(), n.order.end(), f);
    if (at == n.order.end()) continue;
    const auto i = static_cast<std::size_t>(at - n.order.begin());
    if (n.backtrack[i] || n.done[i]) return;  // tried there already
    if (pick == n.order.size() || f == p) pick = i;
  }
  if (pick != n.order.size()) {
    n.backtrack[pick] = true;
  } else {
    n.backtrack.assign(n.order.size(), true);  // no initial could run there: every candidate
  }
}

bool dfs_tree::advance_dpor() {
  update_sleep();  // the last steps' objects, for the decisions that took them
  add_backtrack_points();
  while (!path_.empty()) {
    node& n = path_.back();
    for (std::uint32_t i = 0; i < n.order.size(); ++i) {
      if (!n.backtrack[i] || n.done[i]) continue;
      n.done[i] = true;
      const std::uint32_t f = n.order[i];
      if (std::any_of(n.sleep.begin(), n.sleep.end(), [f](const sleeper& z) { return z.fiber == f; })) continue;
      n.chosen = i;
      return true;
    }
    path_.pop_back();
  }
  return false;
}

std::string dfs_tree::position() const { return format_position(choices()); }

std::string format_position(std::span<const std::uint32_t> choices) {
  // Mostly default choices (0): a run of three or more of one choice is written c*n.
  std::string s;
  for (std::size_t i = 0; i < choices.size();) {
    std::size_t n = 1;
    while (i + n < choices.size() && choices[i + n] == choices[i]) ++n;
    if (!s.empty()) s += '.';
    s += std::to_string(choices[i]);
    if (n >= 3) {
      s += "*" + std::to_string(n);
    } else {
      n = 1;
    }
    i += n;
  }
  return s;
}

std::optional<std::vector<std::uint32_t>> parse_position(std::string_view text) {
  std::vector<std::uint32_t> out;
  if (text.empty()) return out;
  const auto number = [](std::string_view t, std::uint64_t max) -> std::optional<std::uint64_t> {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    std::uint64_t v = 0;
    for (const char ch : t) v = v * 10 + static_cast<std::uint64_t>(ch - '0');
    return v <= max ? std::optional<std::uint64_t>(v) : std::nullopt;
  };
  constexpr std::uint64_t max_path = 10'000'000;  // decisions: a run's step budget caps a path far below
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t dot = std::min(text.find('.', at), text.size());
    const std::string_view token = text.substr(at, dot - at);
    const std::size_t star = token.find('*');
    const auto choice = number(token.substr(0, star), UINT32_MAX);
    const auto count = star == std::string_view::npos ? std::optional<std::uint64_t>(1)
                                                      : number(token.substr(star + 1), max_path);
    if (!choice || !count || *count == 0 || out.size() + *count > max_path) return std::nullopt;
    out.insert(out.end(), *count, static_cast<std::uint32_t>(*choice));
    at = dot + 1;
  }
  return out;
}

std::unique_ptr<strategy> make_dfs_strategy(std::shared_ptr<dfs_tree> tree) {
  return std::make_unique<dfs_strategy>(std::move(tree));
}

}  // namespace lockstep::sim
