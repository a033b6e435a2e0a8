// The bounded search (sim/dfs.hpp) on several threads, splitting the tree,
// not the seeds: its outcome is search_dfs's for any number of threads — the
// same failure at the same schedule number, the same count when verified,
// the same position when --max-schedules ends it.
//
// The tree's schedules are ordered (depth first: their choices compared
// lexicographically), and the search is cut into parts that are intervals of
// that order. One part starts as the whole search; a thread with nothing to
// do asks, and a running part gives away the latest part of what it has left
// (dfs_tree::split_off: the untried siblings of its shallowest decision), so
// a part is never shared and every schedule runs once. Parts run on their
// own threads in any order; the outcome is read from them in the tree's
// order:
//
// * the first failure in that order is the one search_dfs meets: every part
//   before it is run to its end (a part that finds a failure stops there,
//   and parts wholly after the earliest failure found are dropped), so its
//   schedule number is theirs plus its place in its part;
// * with max_schedules N, a part stops once the parts before it cannot hold
//   N schedules less what it has run; the N-th schedule's position is then
//   that part's, or, when the part ran past it (the parts before it turned
//   out smaller than they were when it stopped), found by running the part
//   again from its start to it — deterministic work, on one thread;
// * a stop (a signal, a time budget) is not deterministic in any case: the
//   outcome counts the schedules of the parts in order up to the first one
//   not finished, and its position is where that part stood, so that a
//   resumed search runs every schedule not yet counted (some that other
//   threads ran past it, again). A failure found past that point is still
//   reported (never lost), with ordered=false: earlier schedules did not run.
//
// Not with dpor: the reduction's backtrack points come from runs in other
// parts of the tree, so its search runs on one thread (search_dfs).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../sim/dfs_search.hpp"

namespace lockstep::testing {

/// What search_dfs_split adds to search_dfs's outcome.
struct split_outcome {
  sim::dfs_outcome outcome;
  std::uint64_t runs = 0;   ///< runs made on every thread, counted or not (parts dropped, run past a stop)
  std::uint64_t parts = 0;  ///< how many parts the tree was cut into
  /// false only when a stop ended the search and the failure reported was
  /// found past schedules that did not run: a search on one thread may have
  /// failed sooner. outcome.schedules is then every run made.
  bool ordered = true;
};

/// How search_dfs_split runs.
struct split_plan {
  unsigned threads = 1;
  /// Tests: split at every run, whether a thread waits or not, so that the
  /// reading of many parts in order is exercised on one thread too.
  bool split_every_run = false;
};

namespace split_detail {

enum class ending { none, exhausted, failed, nondeterministic, capped, stopped, dropped };

struct part {
  part(std::vector<std::uint32_t> from, std::optional<std::vector<std::uint32_t>> to)
      : start(std::move(from)), end(std::move(to)) {}
  std::vector<std::uint32_t> start;
  std::optional<std::vector<std::uint32_t>> end;  ///< exclusive; nullopt: the search's end
  bool taken = false;
  bool finished = false;
  ending how = ending::none;
  std::uint64_t schedules = 0;
  std::optional<sim::run_result> failure;
  std::string nondeterminism;
  std::string position;  ///< capped, stopped: where its next run would start
  std::uint64_t fair_tail_runs = 0;
  std::size_t deepest = 0;
};

}  // namespace split_detail

/// search_dfs(config, bounds, max_schedules, run_one, stop, start) on
/// plan.threads threads. `run_one` and `stop` are called from several threads
/// at once (stop under a lock: it need not be thread-safe itself).
template <class RunOne, class Stop>
split_outcome search_dfs_split(sim::run_config config, const sim::dfs_bounds& bounds, std::uint64_t max_schedules,
                               split_plan plan, RunOne&& run_one, Stop&& stop,
                               std::vector<std::uint32_t> start = {}) {
  using split_detail::ending;
  using split_detail::part;
  split_outcome result;
  if ((plan.threads <= 1 && !plan.split_every_run) || bounds.dpor) {
    result.outcome = sim::search_dfs(config, bounds, max_schedules, run_one, stop, std::move(start));
    result.runs = result.outcome.schedules;
    result.parts = 1;
    return result;
  }
  config.strategy = "dfs";
  std::mutex m;
  std::condition_variable changed;
  std::list<part> parts;  // in the tree's order
  parts.push_back(part{start, std::nullopt});
  std::optional<std::vector<std::uint32_t>> earliest_end;  // the earliest failure's (or nondeterminism's) choices
  std::uint64_t counted = 0;   // schedules run by every part (under m)
  unsigned idle = 0;           // threads waiting for a part
  std::size_t not_taken = 1;   // parts not yet taken: the whole search's, at first
  std::exception_ptr thrown;   // the first exception a run threw: rethrown here
  std::atomic<bool> stopping{false};
  std::mutex stop_m;
  std::atomic<std::uint64_t> runs{0};

  // Under m: may part `it` run another schedule? Sets its ending when not.
  const auto may_run = [&](std::list<part>::iterator it, const sim::dfs_tree& tree) {
    if (earliest_end && sim::at_or_after(tree.next_choices(), *earliest_end)) {
      it->how = ending::dropped;
      return false;
    }
    // With the whole search's count below the budget no part is near it
    // (the sum below would otherwise cost a walk of the parts every run).
    if (max_schedules != 0 && counted >= max_schedules) {
      std::uint64_t before = 0;
      for (auto j = parts.begin(); j != it; ++j) before += j->schedules;
      if (before >= max_schedules || it->schedules >= max_schedules - before) {
        it->how = ending::capped;
        it->position = sim::format_position(tree.next_choices());
        return false;
      }
    }
    return true;
  };

  const auto run_part = [&](std::list<part>::iterator it) {
    auto tree = std::make_shared<sim::dfs_tree>(bounds);
    sim::run_config c = config;
    c.options.dfs = tree;
    {
      std::lock_guard lock(m);
      tree->start_at(it->start);
      if (it->end) tree->end_at(*it->end);
    }
    for (;;) {
      {
        std::lock_guard lock(m);
        if (!may_run(it, *tree)) break;
      }
      bool stop_now = stopping.load();
      if (!stop_now) {
        std::lock_guard lock(stop_m);
        stop_now = stop();
        if (stop_now) stopping.store(true);
      }
      if (stop_now) {
        std::lock_guard lock(m);
        it->how = ending::stopped;
        it->position = sim::format_position(tree->next_choices());
        changed.notify_all();  // idle threads: nothing more will be split off
        break;
      }
      sim::run_result r = run_one(static_cast<const sim::run_config&>(c));
      runs.fetch_add(1);
      std::unique_lock lock(m);
      ++it->schedules;
      ++counted;
      if (!r.ok()) {
        std::vector<std::uint32_t> at = tree->choices();
        if (!earliest_end || !sim::at_or_after(at, *earliest_end)) earliest_end = at;
        it->how = ending::failed;
        it->failure = std::move(r);
        break;
      }
      lock.unlock();
      if (!tree->advance()) {
        lock.lock();
        if (tree->nondeterminism().empty()) {
          it->how = ending::exhausted;
        } else {
          // Where the search would stop: nothing after it counts. (advance()
          // left the path as the run took it.)
          std::vector<std::uint32_t> ran = tree->choices();
          if (!earliest_end || !sim::at_or_after(ran, *earliest_end)) earliest_end = std::move(ran);
          it->how = ending::nondeterministic;
          it->nondeterminism = tree->nondeterminism();
        }
        break;
      }
      lock.lock();
      if (idle > not_taken || plan.split_every_run) {
        if (std::optional<std::vector<std::uint32_t>> from = tree->split_off()) {
          part given{std::move(*from), it->end};
          it->end = given.start;
          parts.insert(std::next(it), std::move(given));
          ++not_taken;
          changed.notify_one();
        }
      }
    }
    std::lock_guard lock(m);
    it->fair_tail_runs = tree->fair_tail_runs();
    it->deepest = tree->deepest();
  };

  const auto work = [&] {
    std::unique_lock lock(m);
    for (;;) {
      auto it = std::find_if(parts.begin(), parts.end(), [](const part& p) { return !p.taken; });
      if (it != parts.end() && !stopping.load()) {
        it->taken = true;
        --not_taken;
        lock.unlock();
        try {
          run_part(it);
        } catch (...) {
          stopping.store(true);
          lock.lock();
          if (!thrown) thrown = std::current_exception();
          it->how = ending::stopped;
          it->finished = true;
          changed.notify_all();
          return;
        }
        lock.lock();
        it->finished = true;
        changed.notify_all();
        continue;
      }
      const bool running =
          std::any_of(parts.begin(), parts.end(), [](const part& p) { return p.taken && !p.finished; });
      if (!running || stopping.load()) return;  // stopping: parts not taken stay as they are
      ++idle;
      changed.wait(lock);
      --idle;
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < plan.threads; ++t) pool.emplace_back(work);
    work();
  }
  if (thrown) std::rethrow_exception(thrown);

  // Read in the tree's order.
  sim::dfs_outcome& out = result.outcome;
  result.runs = runs.load();
  result.parts = parts.size();
  // The part holding the budget's last schedule ran past it: its first
  // `need` schedules again, on this thread, give the position and counts.
  const auto walk_again = [&](const part& p, std::uint64_t need) {
    auto tree = std::make_shared<sim::dfs_tree>(bounds);
    tree->start_at(p.start);
    if (p.end) tree->end_at(*p.end);
    sim::run_config c = config;
    c.options.dfs = tree;
    for (std::uint64_t i = 0; i < need; ++i) {
      (void)run_one(static_cast<const sim::run_config&>(c));  // each held before
      (void)tree->advance();
    }
    out.position = sim::format_position(tree->next_choices());
    out.fair_tail_runs += tree->fair_tail_runs();
    out.deepest = std::max(out.deepest, tree->deepest());
  };
  std::uint64_t before = 0;
  bool ended = false;
  for (auto it = parts.begin(); it != parts.end() && !ended; ++it) {
    part& p = *it;
    const bool over = max_schedules != 0 && before + p.schedules > max_schedules;
    if (over || (p.how == ending::capped && max_schedules != 0)) {
      const std::uint64_t need = max_schedules - before;
      out.schedules = max_schedules;
      if (p.how == ending::capped && p.schedules == need) {
        out.position = p.position;
        out.fair_tail_runs += p.fair_tail_runs;
        out.deepest = std::max(out.deepest, p.deepest);
      } else {
        walk_again(p, need);
      }
      return result;
    }
    out.fair_tail_runs += p.fair_tail_runs;
    out.deepest = std::max(out.deepest, p.deepest);
    switch (p.how) {
      case ending::exhausted:
        before += p.schedules;
        continue;
      case ending::failed:
        out.schedules = before + p.schedules;
        out.failure = std::move(p.failure);
        return result;
      case ending::nondeterministic:
        out.schedules = before + p.schedules;
        out.nondeterminism = p.nondeterminism;
        return result;
      case ending::stopped:
      case ending::none:  // not taken: the stop came first
        out.schedules = before + p.schedules;
        out.position = p.how == ending::stopped ? p.position : sim::format_position(p.start);
        ended = true;
        break;
      case ending::capped:
      case ending::dropped:
        // Dropped parts lie after a failure, which ends the reading before
        // them; capped ones are read above.
        out.nondeterminism = "dfs: a part of the split search ended without a reason (a harness bug)";
        return result;
    }
  }
  if (!ended) {
    out.schedules = before;
    out.exhausted = true;
    return result;
  }
  // Stopped: a failure found past the point reached in order is kept.
  for (part& p : parts) {
    if (p.failure) {
      out.failure = std::move(p.failure);
      out.schedules = result.runs;
      result.ordered = false;
      break;
    }
  }
  return result;
}

}  // namespace lockstep::testing
