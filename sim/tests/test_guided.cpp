// Goal: the guided strategy (shrink's) follows a decision list where it fits
// and never diverges where it does not: a full recording is replayed byte for
// byte, a bad or missing decision falls back to "the fiber that ran before,
// else the lowest id", and the preemptions it reports are the decisions where
// the fiber that ran before could go on and another was chosen.
#define BOOST_TEST_MODULE sim_guided
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

struct shared_state {
  explicit shared_state(runtime& rt) : m(rt), counter(rt, 0) {}
  mutex m;
  atomic<int> counter;
};

// Workers on every core that lock, bump an atomic, draw and sometimes sleep:
// many scheduling points, and on several cores many preemptions.
void busy_program(runtime& rt) {
  auto st = std::make_shared<shared_state>(rt);
  std::vector<task> tasks;
  for (std::uint32_t w = 0; w < 4; ++w) {
    tasks.push_back(rt.spawn_on(w % rt.cores(), "w" + std::to_string(w), [&rt, st, w] {
      for (int i = 0; i < 5; ++i) {
        {
          std::lock_guard g(st->m);
          st->counter.fetch_add(1);
        }
        if (rt.random() % 4 == 0) rt.sleep_for(static_cast<std::int64_t>(1 + w));
      }
    }));
  }
  for (auto& t : tasks) t.join();
}

run_config guided(const run_result& r, std::vector<std::uint32_t> guide, std::shared_ptr<guided_stats> stats) {
  run_config c = config(r.seed, "guided", r.cores);
  c.options.decisions = std::move(guide);
  c.options.guided = std::move(stats);
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_full_recording_is_followed_byte_for_byte) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    for (std::uint32_t cores = 1; cores <= 3; ++cores) {
      BOOST_TEST_CONTEXT("seed " << seed << " cores " << cores) {
        const auto original = run(config(seed, "random", cores), busy_program);
        auto stats = std::make_shared<guided_stats>();
        const auto again = run(guided(original, original.decisions, stats), busy_program);
        BOOST_TEST(again.ok());
        BOOST_TEST(again.decisions == original.decisions);
        BOOST_TEST(again.trace_text == original.trace_text);
        BOOST_TEST(stats->fallbacks == 0u);
        for (const auto& p : stats->preemptions) {
          BOOST_REQUIRE(p.at < original.decisions.size());
          BOOST_TEST(original.decisions[p.at] != p.previous);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(more_cores_preempt_more) {
  // On one core a fiber keeps its core until it blocks or yields (a spawn or
  // a yield still leaves it runnable beside another: that counts), on three
  // every scheduling point can move another core's fiber in.
  std::size_t on[4] = {0, 0, 0, 0};
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    for (std::uint32_t cores : {1u, 3u}) {
      const auto original = run(config(seed, "random", cores), busy_program);
      auto stats = std::make_shared<guided_stats>();
      (void)run(guided(original, original.decisions, stats), busy_program);
      on[cores] += stats->preemptions.size();
    }
  }
  BOOST_TEST(on[3] > 20u);
  BOOST_TEST(on[3] > 2 * on[1]);
}

BOOST_AUTO_TEST_CASE(without_a_guide_no_fiber_is_preempted) {
  const auto original = run(config(3, "random", 3), busy_program);
  auto stats = std::make_shared<guided_stats>();
  const auto a = run(guided(original, {}, stats), busy_program);
  BOOST_TEST(a.ok());
  BOOST_TEST(stats->preemptions.empty());
  BOOST_TEST(stats->fallbacks == a.decisions.size());
  const auto b = run(guided(original, {}, nullptr), busy_program);
  BOOST_TEST(b.trace_text == a.trace_text);  // a function of the list alone
}

BOOST_AUTO_TEST_CASE(a_decision_that_does_not_fit_falls_back_instead_of_diverging) {
  const auto original = run(config(5, "random", 3), busy_program);
  BOOST_REQUIRE(original.decisions.size() > 10u);
  std::vector<std::uint32_t> guide = original.decisions;
  guide[4] = 999;  // no such fiber
  auto stats = std::make_shared<guided_stats>();
  const auto r = run(guided(original, guide, stats), busy_program);
  BOOST_TEST(r.ok());
  BOOST_TEST(stats->fallbacks >= 1u);
  for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(r.decisions[i] == original.decisions[i]);
  BOOST_TEST(r.decisions[4] != 999u);
}

BOOST_AUTO_TEST_CASE(continuing_the_preempted_fiber_removes_that_preemption) {
  int tried = 0;
  for (std::uint64_t seed = 0; seed < 20 && tried < 5; ++seed) {
    const auto original = run(config(seed, "random", 2), busy_program);
    auto before = std::make_shared<guided_stats>();
    (void)run(guided(original, original.decisions, before), busy_program);
    if (before->preemptions.empty()) continue;
    ++tried;
    const auto p = before->preemptions.front();
    std::vector<std::uint32_t> guide = original.decisions;
    guide[p.at] = p.previous;
    auto after = std::make_shared<guided_stats>();
    const auto r = run(guided(original, guide, after), busy_program);
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_REQUIRE(r.decisions.size() > p.at);
      BOOST_TEST(r.decisions[p.at] == p.previous);
      for (std::size_t i = 0; i < p.at; ++i) BOOST_TEST(r.decisions[i] == original.decisions[i]);
      // The run up to that decision is the same, so its first preemption is later.
      BOOST_TEST((after->preemptions.empty() || after->preemptions.front().at > p.at));
    }
  }
  BOOST_TEST(tried > 0);
}
