// Bounded exhaustive search of a program's schedules: depth-first over the
// tree of scheduling decisions, one run per leaf, every run a fresh execution
// from the start (stateless model checking, as in VeriSoft and CHESS).
//
// Bounds keep the tree finite and small enough to finish while still holding
// the schedules in which most bugs show:
//
// * preemptions (iterative context bounding: Musuvathi & Qadeer, PLDI 2007):
//   running another fiber while the one that ran the step before stopped at a
//   scheduling point, still able to go on, costs one. Switching after it
//   blocked, ended or yielded is free, and so is which fiber runs then, with
//   one exception: running a fiber that just yielded again costs one (else a
//   spin loop that yields would be a free, endless branch).
// * delays (delay bounding: Emmi, Qadeer & Rakamaric, POPL 2011): a
//   deterministic round-robin scheduler gives the default choice (the fiber
//   that ran the step before while it can go on without a yield, else the next
//   one by id after it, cyclically); taking the candidate j places further
//   along that rotation costs j delays. Bounds every choice, free ones too.
//
// Past `fair_after` steps a run makes no more branches: it continues under
// the round-robin scheduler, switching at every step, so that a spinning
// fiber cannot starve the one it waits for and a correct program never ends
// in a false livelock. What was verified is then "every schedule within the
// bounds over the first fair_after steps" (the summary counts such runs).
//
// With dpor, a decision's other candidates are tried only where a run shows
// they matter (dynamic partial-order reduction: Flanagan & Godefroid, POPL
// 2005): each step's accesses (the lockstep objects it touched, reported by
// the executor) and vector clocks over them give, for every step, the last
// earlier step of another fiber that touched one of the same objects and does
// not happen before it: a race, so the decision before that earlier step
// gets this step's fiber to try (or, when that fiber could not run there,
// every candidate). Interleavings that only reorder steps on different
// objects run once. Every access counts as a write (two reads of one atomic
// are ordered too: fewer schedules pruned, none missed). Sound only when the
// fibers share state through lockstep's types: plain memory two fibers touch
// outside a lockstep mutex is invisible to it, and reorderings of such steps
// are pruned as if they commuted.
//
// A choice a step makes that is not a fiber (which store a relaxed load
// reads, a store's place in modification order, a weak compare-exchange's
// spurious failure, which waiter notify_one wakes, a spurious wake-up) is a
// node of its own. Without dpor it is branched on like any decision (its
// values as delays). With dpor every value is tried, as loom does for the
// stores a load may read: the reduction prunes only reorderings of steps,
// and each run's races are those of the values it took. A step that made a
// choice may touch other objects with another value (the code after the
// operation branches on it: a harness event logged, another waiter woken),
// so its fiber sleeps on what the step touched in any of its values' runs:
// every run through the decision runs the step again, and a sibling reads
// the union only once the fiber's subtree, every value, is done. The values a
// step may take depend on the objects it touches (a load's on its
// location's stores and the loading thread's view), which a step that
// touches none of them does not change; a seq_cst fence, which touches no
// object, only narrows what a later seq_cst load may read. A timer tie's
// order and a timed wait's lateness are such choices too: every value tried.
//
// Sleep sets (Godefroid, 1996; used with DPOR in Flanagan & Godefroid's
// algorithm) prune what the backtrack sets alone still repeat: once a
// decision has tried fiber p, a sibling choice q whose step is independent of
// p's step (they touched no object in common) carries p asleep into its
// subtree, where p is not chosen again until a step dependent on p's step
// runs. A run that reaches a point where every runnable fiber is asleep
// repeats an order already explored: it is finished without branching and
// its steps past that point add no backtrack points. (A sleeper that runs
// because it alone could, with no decision, is found at its step's first
// choice, so that the choice is not branched on, or else when the step ends.)
//
// Two runs that take the same decisions must see the same runnable fibers at
// each; a program that does not (it reads a clock, a real random source, or
// state left by an earlier run) is reported as nondeterministic: its run
// fails as a replay divergence naming the decision.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "strategy.hpp"

namespace lockstep::sim {

struct dfs_bounds {
  std::optional<std::uint32_t> preemptions;  ///< none: unbounded
  std::optional<std::uint32_t> delays;       ///< none: unbounded
  std::uint64_t fair_after = 10'000;         ///< steps; past it no branching (see above)
  /// Dynamic partial-order reduction (below); only without bounds.
  bool dpor = false;
};

/// How verdicts name the bounds: "preemption bound 2, delay bound none", or
/// "no bounds, partial-order reduction".
std::string describe(const dfs_bounds& b);

/// The search's state between runs: the path of the run under way, each
/// decision with the candidates in the order they are tried. A run follows
/// the path's choices, then extends it with default choices; advance() moves
/// to the next schedule, depth first.
class dfs_tree {
 public:
  /// Throws std::invalid_argument for dpor with a bound (the reduction would
  /// prune schedules the bound keeps, and "verified" would not hold).
  explicit dfs_tree(dfs_bounds bounds) : bounds_(bounds) {
    if (bounds_.dpor && (bounds_.preemptions || bounds_.delays)) {
      throw std::invalid_argument("dfs: partial-order reduction searches without bounds (preemption and delay "
                                  "bound none)");
    }
  }

  /// The first run takes these choices (a position() printed by an earlier
  /// search, parsed by parse_position) and the search goes on from there, as
  /// that search would have. A choice that does not fit the program (past its
  /// candidates or its bounds) fails that run as a replay divergence.
  /// Not with dpor: the choices tried before it there, and where they raced,
  /// are not in a position (std::invalid_argument).
  void start_at(std::vector<std::uint32_t> choices) {
    if (bounds_.dpor && !choices.empty()) {
      throw std::invalid_argument("dfs: a search with partial-order reduction cannot resume at a position");
    }
    start_ = std::move(choices);
  }

  /// Ends the search before `end` (a position, as start_at takes it): the
  /// schedules it runs are those from its start up to, not including, the
  /// first one at or after `end` in depth-first order, and advance() returns
  /// false there. Splitting a search into parts (split_off) sets it; not with
  /// dpor (std::invalid_argument).
  void end_at(std::vector<std::uint32_t> end) {
    if (bounds_.dpor) throw std::invalid_argument("dfs: a search with partial-order reduction cannot be split");
    end_ = std::move(end);
  }
  [[nodiscard]] const std::optional<std::vector<std::uint32_t>>& end() const { return end_; }

  /// Between runs (after advance() returned true): gives away the latest part
  /// of what remains, for another search to run. That part starts at the
  /// untried choices of the shallowest decision on the path that has one
  /// within the end; this search then ends there (end_at), and the other
  /// runs from the returned position to this search's old end. nullopt when
  /// only the schedules under the deepest decision remain. Not with dpor.
  /// The schedules of the two searches together are this one's, in the same
  /// order: one part's, then the other's.
  [[nodiscard]] std::optional<std::vector<std::uint32_t>> split_off();

  /// The choices the next run starts with (the path after advance(), the
  /// starting position before the first run); past them it takes defaults.
  [[nodiscard]] std::vector<std::uint32_t> next_choices() const;
  /// The choices the run just ended took, decision by decision (call before
  /// advance()): the failing schedule's place in the search's order.
  [[nodiscard]] std::vector<std::uint32_t> choices() const;

  /// After a run: the next schedule within the bounds, false when every one
  /// has run (the tree is exhausted).
  [[nodiscard]] bool advance();

  [[nodiscard]] const dfs_bounds& bounds() const { return bounds_; }
  /// Runs that reached the fair tail (no branching past fair_after).
  [[nodiscard]] std::uint64_t fair_tail_runs() const { return fair_tail_runs_; }
  /// dpor: runs cut short by their sleep sets (every runnable fiber asleep:
  /// an order already explored), finished without branching.
  [[nodiscard]] std::uint64_t sleep_blocked_runs() const { return sleep_blocked_runs_; }
  /// The deepest path seen, in decisions: how far apart the search's leaves are.
  [[nodiscard]] std::size_t deepest() const { return deepest_; }
  /// Where the search stands: the choice taken at each decision of the current
  /// path, as indices into that decision's order, a run of three or more
  /// alike as choice*count ("0*12.1.0.2" is twelve defaults, then 1, 0, 2;
  /// "" at the root).
  [[nodiscard]] std::string position() const;

  /// Why the search cannot go on: the last run ended before taking every
  /// decision an earlier run with the same choices took (nondeterminism);
  /// "" otherwise. advance() returns false then.
  [[nodiscard]] const std::string& nondeterminism() const { return nondeterminism_; }

  // The per-run strategy's side (strategy_dfs.cpp).
  void begin_run();
  /// The index into `c` to run at step `step`; `previous` is the fiber that
  /// ran the step before (UINT64_MAX before the first). Throws
  /// replay_divergence when `c` is not what an earlier run saw here.
  std::size_t pick(std::span<const candidate> c, std::uint64_t step, std::uint64_t previous);
  /// A choice inside step `step` (which store a load reads, whether a weak
  /// compare-exchange fails, which waiter a notify wakes): candidates
  /// numbered 0..n-1, the ordinary outcome 0 first. With dpor every value is
  /// tried (see above).
  std::size_t pick_choice(std::span<const candidate> c, std::uint64_t step);
  /// dpor: fiber `fiber` runs the next step; the step touches `key`.
  void note_step(std::uint32_t fiber);
  void note_access(std::uint64_t key);

 private:
  /// dpor: the objects one step touched, sorted; shared by the decision that
  /// took the step and the sleep sets that hold it (copied along every run).
  using touch_set = std::shared_ptr<const std::vector<std::uint64_t>>;
  /// dpor: a fiber asleep, with the objects its next step touches.
  struct sleeper {
    std::uint32_t fiber;
    touch_set touches;
  };
  struct node {
    std::vector<std::uint32_t> order;  ///< candidate fiber ids (a choice's values), default first
    /// A choice inside a step, not a decision between fibers' steps: dpor
    /// tries all its values and keeps it out of the sleep sets and races.
    bool choice = false;
    std::uint32_t chosen = 0;          ///< index into order
    /// Choices from this index on cost a preemption: 1 when the fiber that
    /// ran before stopped at a scheduling point (order[0] is it), the last
    /// when it yielded (order.back() is it), order.size() when it cannot run.
    std::uint32_t preempting_from = 0;
    std::uint32_t preemptions_before = 0;
    std::uint32_t delays_before = 0;
    std::uint64_t step = 0;          ///< dpor: the step it decided
    std::vector<bool> backtrack;     ///< dpor: order[i] is to be tried here
    std::vector<bool> done;          ///< dpor: order[i] was tried here
    std::vector<sleeper> sleep;      ///< dpor: asleep when a run reaches this decision
    /// dpor: what the step each tried candidate took touched (sorted keys),
    /// by index into order; set when that step has run.
    std::vector<touch_set> took;
    [[nodiscard]] bool fits(std::uint32_t i, const dfs_bounds& b) const;
  };
  dfs_bounds bounds_;
  std::vector<node> path_;
  std::size_t depth_ = 0;           ///< decisions taken in the run under way
  std::uint32_t preemptions_ = 0;   ///< spent so far in the run under way
  std::uint32_t delays_ = 0;
  bool in_fair_tail_ = false;
  std::uint64_t fair_tail_runs_ = 0;
  std::size_t deepest_ = 0;
  std::string nondeterminism_;
  std::vector<std::uint32_t> start_;
  std::optional<std::vector<std::uint32_t>> end_;
  // dpor: the run's steps (their fibers) and what each touched.
  struct step_record {
    std::uint32_t fiber;
    std::size_t first_access;  ///< into accesses_; the next step's is its end
    std::size_t cause;         ///< the step that spawned or woke this fiber before it; npos: none
    /// It made a choice: what it touches may differ with the value, so its
    /// fiber sleeps on what every value's run of it touched (update_sleep).
    bool varies = false;
  };
  std::vector<std::size_t> pending_cause_;  ///< by fiber: the step that made it runnable (npos: none)
  std::vector<step_record> steps_;
  std::vector<std::uint64_t> accesses_;
  // dpor: the run's sleep set now, carried step by step (update_sleep).
  std::vector<sleeper> sleep_;
  std::vector<std::uint64_t> merged_;  ///< update_sleep's scratch: a varying step's touches over its runs
  std::size_t sleep_through_ = 0;   ///< steps_ the sleep set has been carried through
  std::size_t sleep_node_ = 0;      ///< the next path_ node whose step update_sleep meets
  std::size_t asleep_from_ = SIZE_MAX;  ///< steps_ index where every runnable fiber was asleep
  std::uint64_t sleep_blocked_runs_ = 0;
  // add_backtrack_points' and update_sleep's working storage, kept between
  // runs (a run allocating its vector clocks afresh spent most of its time in
  // malloc).
  std::vector<std::uint64_t> keys_;         ///< the run's objects, sorted: their dense ids
  std::vector<std::uint32_t> clock_;        ///< by fiber: its vector clock (fibers x fibers)
  std::vector<std::uint32_t> after_;        ///< by step: its clock
  std::vector<std::uint32_t> before_, now_;
  std::vector<std::size_t> last_step_;      ///< by object: the last step that touched it
  std::vector<std::uint32_t> last_fiber_, last_seq_, last_clock_;
  std::vector<std::size_t> node_of_step_;   ///< by step number: its decision's index in path_
  std::vector<std::uint64_t> touched_;
  std::vector<std::uint32_t> first_seq_, initials_;  ///< add_source's
  std::vector<std::size_t> races_;                   ///< the earlier steps the step at hand races with
  std::size_t replayed_steps_ = 0;  ///< steps before the path's last decision, as an earlier run took them
  std::size_t decide(std::span<const candidate> c, std::uint64_t step, std::uint64_t previous, bool choice);
  /// Carries the sleep set through the run's steps before `before` (all: the
  /// last step has ended).
  void update_sleep(std::size_t before = SIZE_MAX);
  bool took_by_decision(std::size_t k);
  [[nodiscard]] bool asleep(std::uint32_t fiber) const;
  void add_backtrack_points();
  void add_source(node& n, std::size_t j, std::size_t k, std::size_t f_count);
  bool advance_dpor();
};

/// Whether the schedules that start with `prefix` and take default choices
/// (0) past it come at or after `bound` in depth-first order: schedules
/// compare as their choices do, lexicographically, and a schedule under a
/// position (starting with it) is at or after it.
bool at_or_after(std::span<const std::uint32_t> prefix, std::span<const std::uint32_t> bound);

/// Choices as position() writes them ("0*12.1.0.2").
std::string format_position(std::span<const std::uint32_t> choices);

/// position()'s text back to the choices ("0*3.1" is 0, 0, 0, 1); nullopt
/// when it is not one ("" is the root: no choices).
std::optional<std::vector<std::uint32_t>> parse_position(std::string_view text);

/// The strategy that runs one schedule of `tree` (make_strategy("dfs") with
/// strategy_options::dfs set builds it).
std::unique_ptr<strategy> make_dfs_strategy(std::shared_ptr<dfs_tree> tree);

}  // namespace lockstep::sim
