// Goal: the bounded search split across threads (testing/split_search.hpp)
// is the search on one thread, whatever the threads and however the tree is
// cut: every schedule runs once and no other does; the first failure is the
// same schedule at the same number; a budget stops at the same count and
// position; a resumed search starts where the split one says; a stop never
// loses a failure; and a run's exception reaches the caller. Each case runs
// with the tree cut at every run (on one thread and on several) and with
// threads splitting as they fall idle.
#define BOOST_TEST_MODULE split_search
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/atomic.hpp"
#include "sim/dfs_search.hpp"
#include "sim/runtime.hpp"
#include "testing/split_search.hpp"

namespace sim = lockstep::sim;
namespace lt = lockstep::testing;

namespace {

using program = std::function<void(sim::runtime&)>;

// `fibers` workers on their own cores, each storing `ops` times to one
// atomic. With fail_late, a run fails when the last worker's stores all came
// before the first one's: a failure many schedules have, the first of them
// deep in the search's order.
program writers(int fibers, int ops, bool fail_late = false) {
  return [=](sim::runtime& rt) {
    auto x = std::make_shared<sim::atomic<int>>(rt, 0);
    auto order = std::make_shared<std::string>();
    std::vector<sim::task> hs;
    for (int f = 0; f < fibers; ++f) {
      hs.push_back(rt.spawn_on(static_cast<std::uint32_t>(f + 1), "w" + std::to_string(f), [=] {
        for (int i = 0; i < ops; ++i) {
          x->store(f * 100 + i);
          *order += static_cast<char>('a' + f);
        }
      }));
    }
    for (auto& h : hs) h.join();
    // Fails when the last fiber's stores all came before the first fiber's.
    if (fail_late && order->find('a') > order->rfind(static_cast<char>('a' + fibers - 1))) {
      throw std::logic_error("the last writer finished before the first began");
    }
  };
}

sim::run_config base() {
  sim::run_config c;
  c.seed = 1;
  c.cores = 4;
  c.trace = sim::trace_mode::hash;
  c.max_steps = 1'000'000;
  return c;
}

struct searched {
  sim::dfs_outcome out;
  std::map<std::vector<std::uint32_t>, int> runs;  // every run's decisions, with how often each ran
  std::uint64_t parts = 1;
  bool ordered = true;
};

searched on_one_thread(const program& p, const sim::dfs_bounds& b, std::uint64_t max = 0,
                       std::vector<std::uint32_t> start = {}) {
  searched s;
  s.out = sim::search_dfs(
      base(), b, max,
      [&](const sim::run_config& c) {
        sim::run_result r = sim::run(c, p);
        ++s.runs[r.decisions];
        return r;
      },
      [] { return false; }, std::move(start));
  return s;
}

searched split(const program& p, const sim::dfs_bounds& b, lt::split_plan plan, std::uint64_t max = 0,
               std::function<bool()> stop = [] { return false; }) {
  searched s;
  std::mutex m;
  const lt::split_outcome o = lt::search_dfs_split(
      base(), b, max, plan,
      [&](const sim::run_config& c) {
        sim::run_result r = sim::run(c, p);
        std::lock_guard lock(m);
        ++s.runs[r.decisions];
        return r;
      },
      stop);
  s.out = o.outcome;
  s.parts = o.parts;
  s.ordered = o.ordered;
  BOOST_TEST(o.runs >= o.outcome.schedules);
  return s;
}

const lt::split_plan plans[] = {{1, true}, {2, false}, {3, false}, {3, true}, {5, true}};

std::string name(const lt::split_plan& p) {
  return std::to_string(p.threads) + (p.split_every_run ? " threads, split at every run" : " threads");
}

void same_outcome(const sim::dfs_outcome& a, const sim::dfs_outcome& b) {
  BOOST_TEST(a.schedules == b.schedules);
  BOOST_TEST(a.exhausted == b.exhausted);
  BOOST_TEST(a.failure.has_value() == b.failure.has_value());
  if (a.failure && b.failure) BOOST_TEST((a.failure->decisions == b.failure->decisions));
  BOOST_TEST(a.nondeterminism == b.nondeterminism);
  BOOST_TEST(a.position == b.position);
  BOOST_TEST(a.fair_tail_runs == b.fair_tail_runs);
  BOOST_TEST(a.deepest == b.deepest);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_schedule_runs_once_and_the_verdict_is_the_same) {
  const program p = writers(3, 2);
  for (const sim::dfs_bounds b : {sim::dfs_bounds{1, std::nullopt}, sim::dfs_bounds{2, std::nullopt},
                                  sim::dfs_bounds{std::nullopt, 3}}) {
    const searched one = on_one_thread(p, b);
    BOOST_TEST_REQUIRE(one.out.exhausted);
    BOOST_TEST_REQUIRE(one.out.schedules > 50u);
    for (const lt::split_plan& plan : plans) {
      BOOST_TEST_CONTEXT(sim::describe(b) << ", " << name(plan)) {
        const searched s = split(p, b, plan);
        same_outcome(s.out, one.out);
        BOOST_TEST((s.runs == one.runs));  // the same schedules, each once
        if (plan.split_every_run) BOOST_TEST(s.parts > 10u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_first_failure_is_the_same_schedule_at_the_same_number) {
  const program p = writers(3, 2, true);
  for (const sim::dfs_bounds b : {sim::dfs_bounds{2, std::nullopt}, sim::dfs_bounds{std::nullopt, 4}}) {
    const searched one = on_one_thread(p, b);
    BOOST_TEST_REQUIRE(one.out.failure.has_value());
    BOOST_TEST_REQUIRE(one.out.schedules > 20u);  // deep in the order: other parts find later failures first
    for (const lt::split_plan& plan : plans) {
      BOOST_TEST_CONTEXT(sim::describe(b) << ", " << name(plan)) {
        const searched s = split(p, b, plan);
        same_outcome(s.out, one.out);
        // Every schedule before the failure ran.
        for (const auto& [decisions, n] : one.runs) BOOST_TEST(s.runs.count(decisions) == 1u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_budget_stops_at_the_same_count_and_position) {
  const program p = writers(3, 2);
  const sim::dfs_bounds b{2, std::nullopt};
  const std::uint64_t total = on_one_thread(p, b).out.schedules;
  for (std::uint64_t max : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{7}, total / 3, total / 2, total - 1,
                            total, total + 1}) {
    const searched one = on_one_thread(p, b, max);
    for (const lt::split_plan& plan : plans) {
      BOOST_TEST_CONTEXT("max " << max << " of " << total << ", " << name(plan)) {
        same_outcome(split(p, b, plan, max).out, one.out);
      }
    }
  }
  // A failure past the budget is not reported, as on one thread.
  const program failing = writers(3, 2, true);
  const std::uint64_t at = on_one_thread(failing, b).out.schedules;
  const searched one = on_one_thread(failing, b, at - 1);
  BOOST_TEST_REQUIRE(!one.out.failure.has_value());
  for (const lt::split_plan& plan : plans) {
    BOOST_TEST_CONTEXT(name(plan)) { same_outcome(split(failing, b, plan, at - 1).out, one.out); }
  }
}

BOOST_AUTO_TEST_CASE(a_stopped_search_resumes_where_it_says_and_counts_what_it_ran_in_order) {
  const program p = writers(3, 2);
  const sim::dfs_bounds b{2, std::nullopt};
  const searched all = on_one_thread(p, b);
  for (const lt::split_plan& plan : plans) {
    for (const int after : {1, 5, 40}) {
      BOOST_TEST_CONTEXT(name(plan) << ", stopped after " << after << " stop checks") {
        int asked = 0;
        const searched s = split(p, b, plan, 0, [&] { return ++asked > after; });
        BOOST_TEST_REQUIRE(!s.out.exhausted);
        const auto from = sim::parse_position(s.out.position);
        BOOST_TEST_REQUIRE(from.has_value());
        // The schedules counted and those a resumed search runs are the whole tree.
        const searched rest = on_one_thread(p, b, 0, *from);
        BOOST_TEST(rest.out.exhausted);
        BOOST_TEST(s.out.schedules + rest.out.schedules == all.out.schedules);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_stop_keeps_a_failure_found_past_the_schedules_counted) {
  const program p = writers(3, 2, true);
  const sim::dfs_bounds b{2, std::nullopt};
  // Stop as soon as any failure was run: on one thread cut at every run the
  // parts run in order, so make the stop come from the failure's own thread.
  for (const lt::split_plan& plan : plans) {
    BOOST_TEST_CONTEXT(name(plan)) {
      std::atomic<bool> failed{false};
      const lt::split_outcome o = lt::search_dfs_split(
          base(), b, 0, plan,
          [&](const sim::run_config& c) {
            sim::run_result r = sim::run(c, p);
            if (!r.ok()) failed.store(true);
            return r;
          },
          [&] { return failed.load(); });
      // Whether ordered or not, a failure that ran is reported.
      BOOST_TEST(o.outcome.failure.has_value());
      if (!o.ordered) BOOST_TEST(o.outcome.schedules == o.runs);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_exception_from_a_run_reaches_the_caller) {
  const program p = writers(3, 2);
  for (const lt::split_plan& plan : plans) {
    BOOST_TEST_CONTEXT(name(plan)) {
      std::atomic<int> n{0};
      BOOST_CHECK_THROW(lt::search_dfs_split(
                            base(), sim::dfs_bounds{2, std::nullopt}, 0, plan,
                            [&](const sim::run_config& c) {
                              if (++n == 30) throw std::runtime_error("the run's own error");
                              return sim::run(c, p);
                            },
                            [] { return false; }),
                        std::runtime_error);
    }
  }
}

BOOST_AUTO_TEST_CASE(dpor_searches_on_one_thread) {
  const program p = writers(3, 2);
  const sim::dfs_bounds b{std::nullopt, std::nullopt, 10'000, true};
  const searched one = on_one_thread(p, b);
  const searched s = split(p, b, {3, true});
  same_outcome(s.out, one.out);
  BOOST_TEST(s.parts == 1u);
}
