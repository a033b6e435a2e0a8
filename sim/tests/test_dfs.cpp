// Goal: the bounded depth-first search (sim/dfs.hpp) runs every schedule
// within its bounds and no other, so that "verified" means what it says: the
// interleavings it produces are checked against an independent enumeration;
// a bug that needs k preemptions is missed at bound k-1 (with the tree
// exhausted) and found at bound k; a failing schedule replays; spin loops end
// (no false livelock); a program that does not repeat itself is reported.
#define BOOST_TEST_MODULE sim_dfs
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/dfs_search.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

using program = std::function<void(runtime&)>;

dfs_outcome search(const program& p, std::uint32_t cores, std::optional<std::uint32_t> preemptions,
                   std::optional<std::uint32_t> delays = std::nullopt, std::uint64_t max_schedules = 0,
                   std::uint64_t fair_after = 10'000) {
  run_config c = config(1, "dfs", cores);
  c.trace = trace_mode::hash;
  c.max_steps = 1'000'000;
  return search_dfs(
      c, dfs_bounds{preemptions, delays, fair_after}, max_schedules,
      [&p](const run_config& rc) { return run(rc, p); }, [] { return false; });
}

// Two workers on their own cores, each doing `ops` atomic stores; every
// store appends the worker's letter to `order`, which the run's end adds to
// `seen`. The interleavings of the stores are what the search varies.
program two_writers(int ops, std::set<std::string>* seen) {
  return [ops, seen](runtime& rt) {
    auto x = std::make_shared<atomic<int>>(rt, 0);
    auto order = std::make_shared<std::string>();
    auto body = [x, order, ops](char who) {
      for (int i = 0; i < ops; ++i) {
        x->store(i);  // the scheduling point is before the store
        *order += who;
      }
    };
    auto a = rt.spawn_on(1, "a", [body] { body('a'); });
    auto b = rt.spawn_on(2, "b", [body] { body('b'); });
    a.join();
    b.join();
    seen->insert(*order);
  };
}

// Every interleaving of `ops` a's and `ops` b's with at most `bound` switches
// away from a worker that still had stores to make: written independently
// of the search, by enumerating strings.
std::set<std::string> interleavings(int ops, int bound) {
  std::set<std::string> out;
  std::function<void(std::string, int, int)> grow = [&](std::string s, int na, int nb) {
    if (na == ops && nb == ops) {
      int preemptions = 0, done_a = 0, done_b = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        (s[i] == 'a' ? done_a : done_b)++;
        if (i + 1 < s.size() && s[i + 1] != s[i]) {
          const int left = s[i] == 'a' ? ops - done_a : ops - done_b;
          if (left > 0) ++preemptions;
        }
      }
      if (preemptions <= bound) out.insert(s);
      return;
    }
    if (na < ops) grow(s + 'a', na + 1, nb);
    if (nb < ops) grow(s + 'b', na, nb + 1);
  };
  grow("", 0, 0);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_interleavings_reached_are_exactly_those_within_the_preemption_bound) {
  for (int bound = 0; bound <= 4; ++bound) {
    std::set<std::string> seen;
    const dfs_outcome o = search(two_writers(3, &seen), 3, static_cast<std::uint32_t>(bound));
    BOOST_TEST_CONTEXT("bound " << bound) {
      BOOST_TEST(o.exhausted);
      BOOST_TEST(!o.failure.has_value());
      BOOST_TEST((seen == interleavings(3, bound)));
      BOOST_TEST_MESSAGE("bound " << bound << ": " << o.schedules << " schedules, " << seen.size()
                                  << " interleavings of the stores");
    }
  }
  // Unbounded: all C(6,3) = 20 interleavings.
  std::set<std::string> all;
  const dfs_outcome o = search(two_writers(3, &all), 3, std::nullopt);
  BOOST_TEST(o.exhausted);
  BOOST_TEST(all.size() == 20u);
}

BOOST_AUTO_TEST_CASE(no_schedule_runs_twice) {
  // Every leaf of the tree is a distinct decision list.
  run_config c = config(1, "dfs", 3);
  c.trace = trace_mode::hash;
  std::set<std::vector<std::uint32_t>> lists;
  std::set<std::string> seen;
  const program p = two_writers(3, &seen);
  const dfs_outcome o = search_dfs(
      c, dfs_bounds{2, std::nullopt}, 0,
      [&](const run_config& rc) {
        run_result r = run(rc, p);
        lists.insert(r.decisions);
        return r;
      },
      [] { return false; });
  BOOST_TEST(o.exhausted);
  BOOST_TEST(lists.size() == o.schedules);
}

BOOST_AUTO_TEST_CASE(a_delay_bound_of_zero_is_the_one_round_robin_schedule) {
  std::set<std::string> seen;
  const dfs_outcome o = search(two_writers(3, &seen), 3, std::nullopt, 0);
  BOOST_TEST(o.exhausted);
  BOOST_TEST(o.schedules == 1u);
  // Each delay adds schedules; bound 1 reaches more interleavings than bound 0.
  std::set<std::string> more;
  const dfs_outcome one = search(two_writers(3, &more), 3, std::nullopt, 1);
  BOOST_TEST(one.exhausted);
  BOOST_TEST(one.schedules > 1u);
  BOOST_TEST(more.size() > seen.size());
}

namespace {

// A lost update that needs exactly `k` = 1 preemption: both read, then both
// write (the read and the write are separate atomic operations).
void lost_update(runtime& rt) {
  auto x = std::make_shared<atomic<int>>(rt, 0);
  auto body = [x] {
    const int v = x->load();
    x->store(v + 1);
  };
  auto a = rt.spawn_on(1, "a", body);
  auto b = rt.spawn_on(2, "b", body);
  a.join();
  b.join();
  check(x->load() == 2, "no_lost_update", "an increment was lost");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_one_preemption_bug_is_missed_at_bound_zero_and_found_at_bound_one) {
  const dfs_outcome zero = search(lost_update, 3, 0);
  BOOST_TEST(zero.exhausted);
  BOOST_TEST(!zero.failure.has_value());

  const dfs_outcome one = search(lost_update, 3, 1);
  BOOST_TEST(!one.exhausted);
  BOOST_REQUIRE(one.failure.has_value());
  BOOST_TEST(one.failure->failed->kind == failure_kind::oracle);

  // The failing schedule's decisions replay it, byte for byte.
  run_config c = config(1, "replay", 3);
  c.trace = trace_mode::hash;
  c.max_steps = 1'000'000;
  c.options.decisions = one.failure->decisions;
  const run_result again = run(c, lost_update);
  BOOST_REQUIRE(!again.ok());
  BOOST_TEST(again.failed->kind == failure_kind::oracle);
  BOOST_TEST(again.trace_hash == one.failure->trace_hash);
}

namespace {

void spin_lock(runtime& rt, bool yield_in_spin, bool broken) {
  auto locked = std::make_shared<atomic<bool>>(rt, false);
  auto counter = std::make_shared<int>(0);
  auto body = [&rt, locked, counter, yield_in_spin, broken] {
    for (int i = 0; i < 2; ++i) {
      if (broken) {
        // Test, then set: two steps, so both may see it free.
        while (locked->load()) {
          if (yield_in_spin) rt.yield_now();
        }
        locked->store(true);
      } else {
        while (locked->exchange(true)) {
          if (yield_in_spin) rt.yield_now();
        }
      }
      const int seen = *counter;
      rt.yield_now();
      *counter = seen + 1;
      locked->store(false);
    }
  };
  auto a = rt.spawn_on(1, "a", body);
  auto b = rt.spawn_on(2, "b", body);
  a.join();
  b.join();
  check(*counter == 4, "mutual_exclusion", "lost an increment: the lock let two in");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_correct_spin_lock_is_verified_without_a_false_livelock) {
  for (const bool yielding : {true, false}) {
    BOOST_TEST_CONTEXT((yielding ? "yielding" : "busy")) {
      const dfs_outcome o = search([yielding](runtime& rt) { spin_lock(rt, yielding, false); }, 3, 2,
                                   std::nullopt, 0, 200);
      BOOST_TEST(o.exhausted);
      BOOST_TEST(!o.failure.has_value(), (o.failure ? o.failure->failed->message : ""));
      BOOST_TEST_MESSAGE((yielding ? "yielding" : "busy") << ": " << o.schedules << " schedules, "
                                                          << o.fair_tail_runs << " reached the fair tail");
      // A busy spinner that is never preempted spins into the fair tail, which ends it.
      if (!yielding) BOOST_TEST(o.fair_tail_runs > 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_broken_spin_lock_fails_its_assertion) {
  for (const bool yielding : {true, false}) {
    BOOST_TEST_CONTEXT((yielding ? "yielding" : "busy")) {
      const dfs_outcome o =
          search([yielding](runtime& rt) { spin_lock(rt, yielding, true); }, 3, 2, std::nullopt, 0, 200);
      BOOST_REQUIRE(o.failure.has_value());
      BOOST_TEST(o.failure->failed->kind == failure_kind::oracle, o.failure->failed->message);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_budget_stops_the_search_and_says_where) {
  std::set<std::string> seen;
  const dfs_outcome o = search(two_writers(3, &seen), 3, std::nullopt, std::nullopt, 5);
  BOOST_TEST(o.schedules == 5u);
  BOOST_TEST(!o.exhausted);
  BOOST_TEST(!o.position.empty());
}

BOOST_AUTO_TEST_CASE(a_program_that_does_not_repeat_itself_is_reported) {
  // A counter kept between runs changes which fibers there are.
  auto runs = std::make_shared<int>(0);
  const program p = [runs](runtime& rt) {
    const bool extra = (*runs)++ % 2 == 1;
    auto x = std::make_shared<atomic<int>>(rt, 0);
    auto a = rt.spawn_on(1, "a", [x] { x->store(1); x->store(2); });
    auto b = rt.spawn_on(2, "b", [x] { x->store(3); });
    if (extra) {
      auto c = rt.spawn_on(2, "c", [x] { x->store(4); });
      c.join();
    }
    a.join();
    b.join();
  };
  const dfs_outcome o = search(p, 3, std::nullopt);
  BOOST_TEST(!o.exhausted);
  const bool reported = (o.failure && o.failure->failed->kind == failure_kind::replay_divergence &&
                         o.failure->failed->message.find("not deterministic") != std::string::npos) ||
                        o.nondeterminism.find("not deterministic") != std::string::npos;
  BOOST_TEST(reported);
}

BOOST_AUTO_TEST_CASE(the_position_writes_runs_of_one_choice_short) {
  // Two decisions deep at most: the root's position is "", and after the
  // first advance the path ends in a non-default choice.
  dfs_tree tree(dfs_bounds{std::nullopt, std::nullopt});
  BOOST_TEST(tree.position() == "");
  std::set<std::string> seen;
  const program p = two_writers(4, &seen);
  run_config c = config(1, "dfs", 3);
  c.trace = trace_mode::off;
  auto shared = std::make_shared<dfs_tree>(dfs_bounds{std::nullopt, std::nullopt});
  c.options.dfs = shared;
  (void)run(c, p);
  BOOST_REQUIRE(shared->advance());
  const std::string pos = shared->position();
  BOOST_TEST_MESSAGE("position " << pos);
  // Every default choice before the last decision is written as one run.
  BOOST_TEST(pos.find("0*") == 0u);
  BOOST_TEST(pos.back() == '1');
}

BOOST_AUTO_TEST_CASE(a_search_stopped_and_resumed_at_its_position_runs_the_rest_exactly) {
  // The whole search's schedules, then the same search cut after k and
  // resumed at the position it printed: the two parts are the whole, once each.
  std::set<std::string> seen;
  const program p = two_writers(3, &seen);
  run_config c = config(1, "dfs", 3);
  c.trace = trace_mode::hash;
  const auto collect = [&](std::vector<std::vector<std::uint32_t>>& into) {
    return [&p, &into](const run_config& rc) {
      run_result r = run(rc, p);
      into.push_back(r.decisions);
      return r;
    };
  };
  std::vector<std::vector<std::uint32_t>> whole, first, rest;
  const dfs_outcome all = search_dfs(c, dfs_bounds{2, std::nullopt}, 0, collect(whole), [] { return false; });
  BOOST_REQUIRE(all.exhausted);
  for (const std::uint64_t k : {std::uint64_t{1}, std::uint64_t{7}, all.schedules - 1}) {
    first.clear();
    rest.clear();
    const dfs_outcome cut = search_dfs(c, dfs_bounds{2, std::nullopt}, k, collect(first), [] { return false; });
    BOOST_REQUIRE(!cut.exhausted);
    const auto start = parse_position(cut.position);
    BOOST_REQUIRE(start.has_value());
    const dfs_outcome resumed =
        search_dfs(c, dfs_bounds{2, std::nullopt}, 0, collect(rest), [] { return false; }, *start);
    BOOST_TEST_CONTEXT("cut after " << k << " at " << cut.position) {
      BOOST_TEST(resumed.exhausted);
      BOOST_TEST(cut.schedules + resumed.schedules == all.schedules);
      std::vector<std::vector<std::uint32_t>> joined = first;
      joined.insert(joined.end(), rest.begin(), rest.end());
      BOOST_TEST((joined == whole));
    }
  }
  BOOST_TEST((parse_position("0*3.1") == std::optional<std::vector<std::uint32_t>>({0, 0, 0, 1})));
  BOOST_TEST((parse_position("") == std::optional<std::vector<std::uint32_t>>(std::vector<std::uint32_t>{})));
  for (const char* bad : {"x", "1..2", "0*0", "0*", "*3", "1.", "99999999999", "0*99999999"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!parse_position(bad).has_value()); }
  }
}

BOOST_AUTO_TEST_CASE(a_position_that_does_not_fit_is_a_divergence) {
  std::set<std::string> seen;
  const program p = two_writers(2, &seen);
  run_config c = config(1, "dfs", 3);
  const dfs_outcome o = search_dfs(
      c, dfs_bounds{2, std::nullopt}, 0, [&p](const run_config& rc) { return run(rc, p); }, [] { return false; },
      std::vector<std::uint32_t>{7});
  BOOST_REQUIRE(o.failure.has_value());
  BOOST_TEST(o.failure->failed->kind == failure_kind::replay_divergence);
  BOOST_TEST(o.failure->failed->message.find("starting position does not fit") != std::string::npos);
}

// --- partial-order reduction ------------------------------------------------

namespace {

// The drawn programs' own generator (xorshift64): a program is the same
// everywhere; next(n) draws below n.
class xorshift {
 public:
  explicit xorshift(std::uint64_t state) : state_(state) {}
  std::uint64_t operator()(std::uint64_t n) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ % n;
  }

 private:
  std::uint64_t state_;
};

// A small program drawn from `seed`: two or three fibers on their own cores,
// each a few operations on two atomics and a mutex-guarded plain counter; what each
// fiber read, and the final values, make the run's outcome. Partial-order
// reduction must reach every outcome the full search reaches.
program drawn(std::uint64_t seed, std::set<std::string>* outcomes) {
  return [seed, outcomes](runtime& rt) {
    auto x = std::make_shared<atomic<int>>(rt, 0);
    auto y = std::make_shared<atomic<int>>(rt, 0);
    auto m = std::make_shared<mutex>(rt);
    auto guarded = std::make_shared<int>(0);
    auto seen = std::make_shared<std::vector<std::string>>(3);
    xorshift next(seed * 0x9E3779B97F4A7C15ULL + 1);
    std::vector<task> tasks;
    // Two fibers of two or three operations, or (one program in eight) three
    // of one: the full search of three fibers of three grows past a test's time.
    const std::uint32_t fibers = seed % 8 == 0 ? 3 : 2;
    for (std::uint32_t t = 0; t < fibers; ++t) {
      std::vector<int> ops;
      const std::uint64_t count = fibers == 3 ? 1 : 2 + next(2);
      for (std::uint64_t i = 0; i < count; ++i) ops.push_back(static_cast<int>(next(6)));
      tasks.push_back(rt.spawn_on(t + 1, "f" + std::to_string(t), [=] {
        std::string& mine = (*seen)[t];
        for (const int op : ops) {
          atomic<int>& a = op % 2 == 0 ? *x : *y;
          switch (op / 2) {
            case 0: mine += std::to_string(a.load()) + ","; break;
            case 1: a.store(static_cast<int>(t) + 1); break;
            default:
              m->lock();
              *guarded = *guarded * 3 + static_cast<int>(t) + 1;
              m->unlock();
              break;
          }
        }
      }));
    }
    for (task& k : tasks) k.join();
    outcomes->insert((*seen)[0] + "|" + (*seen)[1] + "|" + (*seen)[2] + "|" + std::to_string(x->load()) + "," +
                     std::to_string(y->load()) + "," + std::to_string(*guarded));
  };
}

dfs_outcome search_with(const program& p, bool dpor) {
  run_config c = config(1, "dfs", 4);
  c.trace = trace_mode::off;
  return search_dfs(
      c, dfs_bounds{std::nullopt, std::nullopt, 10'000, dpor}, 0, [&p](const run_config& rc) { return run(rc, p); },
      [] { return false; });
}

}  // namespace

BOOST_AUTO_TEST_CASE(partial_order_reduction_reaches_every_outcome_the_full_search_does) {
  std::uint64_t full_total = 0, reduced_total = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::set<std::string> full, reduced;
    const dfs_outcome a = search_with(drawn(seed, &full), false);
    const dfs_outcome b = search_with(drawn(seed, &reduced), true);
    BOOST_TEST_CONTEXT("program " << seed) {
      BOOST_TEST(a.exhausted);
      BOOST_TEST(b.exhausted);
      BOOST_TEST((full == reduced), full.size() << " outcomes in the full search, " << reduced.size()
                                                << " with the reduction");
      BOOST_TEST(b.schedules <= a.schedules);
    }
    full_total += a.schedules;
    reduced_total += b.schedules;
  }
  BOOST_TEST_MESSAGE("40 programs: " << full_total << " schedules in full, " << reduced_total << " reduced");
  BOOST_TEST(reduced_total * 4 < full_total);  // it prunes: at least four times fewer here
}

BOOST_AUTO_TEST_CASE(partial_order_reduction_runs_independent_fibers_once) {
  // Each fiber has its own atomic: every interleaving is equivalent.
  const program p = [](runtime& rt) {
    std::vector<std::shared_ptr<atomic<int>>> own;
    std::vector<task> tasks;
    for (std::uint32_t t = 0; t < 3; ++t) {
      own.push_back(std::make_shared<atomic<int>>(rt, 0));
      tasks.push_back(rt.spawn_on(t + 1, "f", [a = own.back()] {
        for (int i = 0; i < 2; ++i) a->fetch_add(1);
      }));
    }
    for (task& k : tasks) k.join();
  };
  const dfs_outcome full = search_with(p, false);
  const dfs_outcome reduced = search_with(p, true);
  BOOST_TEST(full.exhausted);
  BOOST_TEST(reduced.exhausted);
  BOOST_TEST_MESSAGE("independent fibers: " << full.schedules << " schedules in full, " << reduced.schedules
                                            << " reduced");
  BOOST_TEST(reduced.schedules * 100 < full.schedules);
}

BOOST_AUTO_TEST_CASE(partial_order_reduction_finds_the_lost_update_and_refuses_bounds) {
  run_config c = config(1, "dfs", 3);
  const dfs_outcome o = search_dfs(
      c, dfs_bounds{std::nullopt, std::nullopt, 10'000, true}, 0,
      [](const run_config& rc) { return run(rc, lost_update); }, [] { return false; });
  BOOST_REQUIRE(o.failure.has_value());
  BOOST_TEST(o.failure->failed->kind == failure_kind::oracle);
  BOOST_CHECK_THROW(dfs_tree(dfs_bounds{2, std::nullopt, 10'000, true}), std::invalid_argument);
  dfs_tree tree(dfs_bounds{std::nullopt, std::nullopt, 10'000, true});
  BOOST_CHECK_THROW(tree.start_at({0, 1}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(partial_order_reduction_keeps_an_order_a_later_step_makes_matter) {
  // p's store and q's store are independent; r's store makes p's order
  // against r's load matter: r reads 1 only when p's store lands between
  // r's two steps. A reduction that forgot to try p again after r's store
  // (a sleep set never woken, say) would never see it.
  std::set<std::string> full, reduced;
  const auto make = [](std::set<std::string>* out) -> program {
    return [out](runtime& rt) {
      auto x = std::make_shared<atomic<int>>(rt, 0);
      auto y = std::make_shared<atomic<int>>(rt, 0);
      auto read = std::make_shared<int>(-1);
      auto p = rt.spawn_on(1, "p", [x] { x->store(1); });
      auto q = rt.spawn_on(2, "q", [y] { y->store(1); });
      auto r = rt.spawn_on(3, "r", [x, read] {
        x->store(2);
        *read = x->load();
      });
      p.join();
      q.join();
      r.join();
      out->insert(std::to_string(*read));
    };
  };
  BOOST_TEST(search_with(make(&full), false).exhausted);
  BOOST_TEST(search_with(make(&reduced), true).exhausted);
  BOOST_TEST((full == std::set<std::string>{"1", "2"}));
  BOOST_TEST((reduced == full));
}

namespace {

// A small program drawn from `seed` whose fibers also sleep: `fibers`
// fibers of `count` operations each, among a sleep of 1 or 2 ns (so that
// timers fall due at one instant), a load (its value and the time kept) and
// a store.
program drawn_with_timers(std::uint64_t seed, std::set<std::string>* outcomes, std::uint32_t fibers,
                          std::uint64_t count) {
  return [seed, outcomes, fibers, count](runtime& rt) {
    auto x = std::make_shared<atomic<int>>(rt, 0);
    auto y = std::make_shared<atomic<int>>(rt, 0);
    auto seen = std::make_shared<std::vector<std::string>>(3);
    xorshift next(seed * 0x9E3779B97F4A7C15ULL + 7);
    std::vector<task> tasks;
    for (std::uint32_t t = 0; t < fibers; ++t) {
      std::vector<int> ops;
      for (std::uint64_t i = 0; i < count; ++i) ops.push_back(static_cast<int>(next(6)));
      tasks.push_back(rt.spawn_on(t + 1, "f" + std::to_string(t), [=, &rt] {
        std::string& mine = (*seen)[t];
        for (const int op : ops) {
          atomic<int>& a = op % 2 == 0 ? *x : *y;
          switch (op / 2) {
            case 0: mine += std::to_string(a.load()) + "@" + std::to_string(rt.now()) + ","; break;
            case 1: a.store(static_cast<int>(t) + 1); break;
            default: rt.sleep_for(1 + op % 2); break;
          }
        }
      }));
    }
    for (task& k : tasks) k.join();
    outcomes->insert((*seen)[0] + "|" + (*seen)[1] + "|" + (*seen)[2] + "|" + std::to_string(x->load()) + "," +
                     std::to_string(y->load()) + "@" + std::to_string(rt.now()));
  };
}

dfs_outcome search_timed(const program& p, bool dpor, bool ties, std::int64_t jitter) {
  run_config c = config(1, "dfs", 4);
  c.trace = trace_mode::off;
  c.timer_ties = ties;
  c.timer_jitter_ns = jitter;
  return search_dfs(
      c, dfs_bounds{std::nullopt, std::nullopt, 10'000, dpor}, 0, [&p](const run_config& rc) { return run(rc, p); },
      [] { return false; });
}

}  // namespace

// Timer choices under the reduction: a tie's order and a timed wait's
// lateness are choices like a load's, every value tried. Two fibers of three
// operations: with three fibers of two (and jitter 2) the full search takes
// minutes; it agreed there too (results/dfs.md).
BOOST_AUTO_TEST_CASE(partial_order_reduction_reaches_every_outcome_with_timer_choices) {
  struct timers {
    bool ties;
    std::int64_t jitter;
  };
  for (const timers t : {timers{true, 0}, timers{false, 1}, timers{true, 1}}) {
    std::uint64_t full_total = 0, reduced_total = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      std::set<std::string> full, reduced;
      const dfs_outcome a = search_timed(drawn_with_timers(seed, &full, 2, 3), false, t.ties, t.jitter);
      const dfs_outcome b = search_timed(drawn_with_timers(seed, &reduced, 2, 3), true, t.ties, t.jitter);
      BOOST_TEST_CONTEXT("program " << seed << ", timer ties " << t.ties << ", jitter " << t.jitter) {
        BOOST_TEST(a.exhausted);
        BOOST_TEST(b.exhausted);
        BOOST_TEST((full == reduced), full.size() << " outcomes in the full search, " << reduced.size()
                                                  << " with the reduction");
      }
      full_total += a.schedules;
      reduced_total += b.schedules;
    }
    BOOST_TEST_MESSAGE("timer ties " << t.ties << ", jitter " << t.jitter << ", 40 programs: " << full_total
                                     << " schedules in full, " << reduced_total << " reduced");
    BOOST_TEST(reduced_total * 10 < full_total);
  }
}
