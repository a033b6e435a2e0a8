// Goal: each strategy explores schedules the way it promises. fifo is one
// exact order; random is a pure function of its seed and spreads over many
// orders; pct's priorities find a depth-2 ordering bug that random almost
// never hits; pos keeps a pending step's priority until a racing step runs;
// surw spreads a short fiber's accesses over a long one's;
// replay reproduces any recorded run byte for byte and reports a
// recording that no longer fits, naming where and how.
#define BOOST_TEST_MODULE sim_strategies
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/sizing_run.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

// Shared state lives on the heap, owned by every fiber that uses it, so the
// tests do not depend on the order in which a run cut short (a replay that
// diverges) tears its fibers down.
struct racy_state {
  explicit racy_state(runtime& rt) : counter(rt, 0) {}
  atomic<int> counter;
  std::vector<int> order;
};

// Workers spread over the cores, each bumping a shared atomic and logging who
// went: a small racy program with many possible orders.
std::vector<int> racy_program(runtime& rt, int workers, int ops) {
  auto st = std::make_shared<racy_state>(rt);
  std::vector<task> tasks;
  for (int w = 0; w < workers; ++w) {
    const std::uint32_t core = static_cast<std::uint32_t>(w) % rt.cores();
    tasks.push_back(rt.spawn_on(core, "w" + std::to_string(w), [st, w, ops] {
      for (int i = 0; i < ops; ++i) {
        st->counter.fetch_add(1);
        st->order.push_back(w);
      }
    }));
  }
  for (auto& t : tasks) t.join();
  return st->order;
}

struct mixed_state {
  explicit mixed_state(runtime& rt) : m(rt), n(rt), done(rt, 0) {}
  mutex m;
  notify n;
  atomic<int> done;
  int shared = 0;
};

// A richer program for replay: mutex, channel, notify, sleep, yield and join,
// plus the program's own random draws: a replay must reproduce all of them.
void mixed_program(runtime& rt) {
  auto st = std::make_shared<mixed_state>(rt);
  auto [tx, rx] = channel<int>::bounded(rt, 2);
  std::vector<task> tasks;
  for (std::uint32_t i = 0; i < 3; ++i) {
    tasks.push_back(rt.spawn_on(i % rt.cores(), "producer", [&rt, st, i, tx = tx]() mutable {
      for (int k = 0; k < 4; ++k) {
        {
          std::lock_guard g(st->m);
          st->shared += static_cast<int>(rt.random() % 7);
        }
        if (rt.random() % 3 == 0) rt.sleep_for(static_cast<std::int64_t>(1 + i));
        (void)tx.send(k);
      }
      st->done.fetch_add(1);
      st->n.notify_one();
    }));
  }
  tx.reset();
  auto consumer = rt.spawn_on(rt.cores() - 1, "consumer", [&rt, rx = std::move(rx)]() mutable {
    while (rx.recv()) rt.yield_now();
  });
  while (st->done.load() < 3) st->n.notified();
  for (auto& t : tasks) t.join();
  consumer.join();
}

int switches(const std::vector<std::uint32_t>& decisions) {
  int s = 0;
  for (std::size_t i = 1; i < decisions.size(); ++i) s += decisions[i] != decisions[i - 1];
  return s;
}

run_config replay_of(const run_result& r) {
  run_config c = config(r.seed, "replay", r.cores);
  c.options.decisions = r.decisions;
  return c;
}

// The trace without its first ("run") line, which names the seed.
std::string after_run_line(const std::string& trace) { return trace.substr(trace.find('\n') + 1); }

}  // namespace

// --- fifo --------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(fifo_runs_the_longest_runnable_fiber_first) {
  // main spawns a (core 0) and b (core 1), then joins a. b became runnable
  // before main was preempted at join, main blocks, then a and b alternate:
  // each preemption at fetch_add puts the preempted fiber behind the other.
  std::vector<std::string> order;
  auto r = run(config(0, "fifo", 2), [&](runtime& rt) {
    atomic<int> counter(rt, 0);
    auto body = [&](const char* who) {
      for (int i = 0; i < 3; ++i) {
        counter.fetch_add(1);
        order.push_back(std::string(who) + std::to_string(i));
      }
    };
    auto a = rt.spawn_on(0, "a", [&] { body("a"); });
    auto b = rt.spawn_on(1, "b", [&] { body("b"); });
    a.join();
    b.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(order == (std::vector<std::string>{"b0", "a0", "b1", "a1", "b2", "a2"}));
}

BOOST_AUTO_TEST_CASE(fifo_ignores_the_seed) {
  auto once = [](std::uint64_t seed) {
    return run(config(seed, "fifo", 3), [](runtime& rt) { racy_program(rt, 3, 5); });
  };
  const run_result first = once(1);
  BOOST_TEST(first.ok());
  for (std::uint64_t seed = 2; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      const run_result other = once(seed);
      BOOST_TEST(other.decisions == first.decisions);
      // The run line carries the seed, so compare what follows it.
      BOOST_TEST(after_run_line(other.trace_text) == after_run_line(first.trace_text));
    }
  }
}

// --- random ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(random_with_one_seed_makes_the_same_decisions) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      std::vector<int> o1, o2;
      auto a = run(config(seed, "random", 3), [&](runtime& rt) { o1 = racy_program(rt, 3, 5); });
      auto b = run(config(seed, "random", 3), [&](runtime& rt) { o2 = racy_program(rt, 3, 5); });
      BOOST_TEST(a.ok());
      BOOST_TEST(a.decisions == b.decisions);
      BOOST_TEST(a.trace_hash == b.trace_hash);
      BOOST_TEST(a.trace_text == b.trace_text);
      BOOST_TEST(o1 == o2);
      BOOST_TEST(!a.decisions.empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(random_explores_different_orders_over_seeds) {
  std::set<std::uint64_t> hashes;
  std::set<std::vector<int>> orders;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    std::vector<int> order;
    auto r = run(config(seed, "random", 3), [&](runtime& rt) { order = racy_program(rt, 3, 4); });
    BOOST_TEST_CONTEXT("seed " << seed) { BOOST_TEST(r.ok()); }
    hashes.insert(r.trace_hash);
    orders.insert(order);
  }
  // 12 operations in 3 streams have 34,650 interleavings; a uniform choice at
  // each step should almost never repeat within 100 seeds.
  BOOST_TEST(hashes.size() > 80u);
  BOOST_TEST(orders.size() > 60u);
}

// --- pct ---------------------------------------------------------------------

namespace {

// The bug needs one preemption at one spot: b's single load must land between
// a's two stores at its 10th iteration. Without that preemption either b runs
// early (random's usual case) or after a has finished.
void depth2_program(runtime& rt) {
  atomic<int> work(rt, 0);
  atomic<int> phase(rt, 0);
  auto a = rt.spawn_on(0, "a", [&] {
    for (int i = 0; i < 20; ++i) {
      if (i == 10) {
        phase.store(1);
        phase.store(0);
      } else {
        work.fetch_add(1);
      }
    }
  });
  auto b = rt.spawn_on(1, "b", [&] {
    if (phase.load() == 1) rt.abort("b saw the transient phase");
  });
  a.join();
  b.join();
}

bool depth2_bug_found(const run_config& c) {
  auto r = run(c, depth2_program);
  return !r.ok() && r.failed->kind == failure_kind::abort;
}

run_config pct_config(std::uint64_t seed, std::uint32_t depth, std::uint64_t steps, std::uint32_t cores) {
  run_config c = config(seed, "pct", cores);
  c.options.pct_depth = depth;
  c.options.pct_steps = steps;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(pct_finds_a_depth_two_bug_that_random_almost_never_hits) {
  // While a outranks b the run takes about 23 steps, so the change point is
  // drawn from [1, 20]: PCT's bound for 3 fibers is then 1/(3*20) per seed
  // (measured: 19 in 1,000 seeds). Random needs b to lose about 12 draws in
  // a row (measured: none in 2,000).
  int pct_hits = 0;
  int random_hits = 0;
  std::uint64_t first_pct_hit = 0;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    if (depth2_bug_found(pct_config(seed, 2, 20, 2))) {
      if (pct_hits++ == 0) first_pct_hit = seed;
    }
    random_hits += depth2_bug_found(config(seed, "random", 2));
  }
  BOOST_TEST_MESSAGE("depth-2 bug: pct " << pct_hits << "/600 (first at seed " << first_pct_hit
                                        << "), random " << random_hits << "/600");
  BOOST_TEST(pct_hits >= 5);  // the bound promises 600/60 = 10 on average
  BOOST_TEST(first_pct_hit < 150u);
  BOOST_TEST(pct_hits > 3 * random_hits);
}

BOOST_AUTO_TEST_CASE(pct_without_change_points_never_finds_it) {
  // Depth 1 has no change point: the highest-priority fiber runs until it
  // blocks, so b's load is never squeezed into a's window.
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) { BOOST_TEST(!depth2_bug_found(pct_config(seed, 1, 20, 2))); }
  }
}

BOOST_AUTO_TEST_CASE(pct_priorities_give_schedules_unlike_random) {
  // With priorities a fiber keeps running until a change point or a block;
  // random switches at about two steps in three among three runnable fibers.
  long pct_switches = 0;
  long random_switches = 0;
  long pct_decisions = 0;
  long random_decisions = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    auto p = run(pct_config(seed, 3, 100, 3), [](runtime& rt) { racy_program(rt, 3, 10); });
    auto q = run(config(seed, "random", 3), [](runtime& rt) { racy_program(rt, 3, 10); });
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_TEST(p.ok());
      BOOST_TEST(q.ok());
      // depth 3: two change points, so at most a handful of switches.
      BOOST_TEST(switches(p.decisions) <= 6);
    }
    pct_switches += switches(p.decisions);
    random_switches += switches(q.decisions);
    pct_decisions += static_cast<long>(p.decisions.size());
    random_decisions += static_cast<long>(q.decisions.size());
  }
  BOOST_TEST_MESSAGE("switches per decision: pct " << pct_switches << "/" << pct_decisions << ", random "
                                                   << random_switches << "/" << random_decisions);
  BOOST_TEST(pct_switches * 4 < random_switches);
}

BOOST_AUTO_TEST_CASE(pct_with_one_seed_is_deterministic_and_seeds_differ) {
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      auto a = run(pct_config(seed, 3, 60, 3), [](runtime& rt) { racy_program(rt, 3, 5); });
      auto b = run(pct_config(seed, 3, 60, 3), [](runtime& rt) { racy_program(rt, 3, 5); });
      BOOST_TEST(a.decisions == b.decisions);
      BOOST_TEST(a.trace_hash == b.trace_hash);
      hashes.insert(a.trace_hash);
    }
  }
  BOOST_TEST(hashes.size() > 10u);
}

// --- pos ---------------------------------------------------------------------

namespace {

struct pos_state {
  explicit pos_state(runtime& rt) : shared(rt, 0), ready(rt, 0) {
    for (int i = 0; i < 8; ++i) own.push_back(std::make_unique<atomic<int>>(rt, 0));
  }
  atomic<int> shared;
  atomic<int> ready;
  std::vector<std::unique_ptr<atomic<int>>> own;
  int long_steps_before_short = -1;
};

// A long fiber of eight steps and a short one of one, on two cores. The long
// one touches its own atomics (independent of the short fiber's step) or,
// with `touch_shared`, the atomic the short fiber waits to touch. Returns how
// many of the long fiber's steps ran before the short one's. The long fiber
// starts once the short one stands at its step (a fiber's first step touches
// what it will, unknown until it runs: no race redraws it).
int long_steps_before_short(runtime& rt, bool touch_shared) {
  auto st = std::make_shared<pos_state>(rt);
  auto counter = std::make_shared<int>(0);
  auto long_one = rt.spawn_on(0, "long", [&rt, st, counter, touch_shared] {
    while (st->ready.load() == 0) rt.yield_now();
    for (int i = 0; i < 8; ++i) {
      if (touch_shared) {
        st->shared.fetch_add(1);
      } else {
        st->own[static_cast<std::size_t>(i)]->fetch_add(1);
      }
      ++*counter;
    }
  });
  auto short_one = rt.spawn_on(1, "short", [st, counter] {
    st->ready.store(1);
    st->shared.load();
    st->long_steps_before_short = *counter;
  });
  long_one.join();
  short_one.join();
  return st->long_steps_before_short;
}

// How many of `seeds` runs put the short fiber's step after every step of the long one.
int short_last(const std::string& strategy, bool touch_shared, std::uint64_t seeds) {
  int last = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    int before = -1;
    const auto r = run(config(seed, strategy, 2), [&](runtime& rt) { before = long_steps_before_short(rt, touch_shared); });
    BOOST_REQUIRE(r.ok());
    last += before == 8;
  }
  return last;
}

}  // namespace

// The short fiber's priority is kept while the long one's independent steps
// run (each drawing afresh), so its step lands late far more often than under
// a random walk, which tosses a coin at every step: with priorities uniform,
// P(after all 8) is about 1/9 (less here, where the long fiber's last load of
// the flag competes too: 134 of 2000 measured), against 2^-8 for random.
BOOST_AUTO_TEST_CASE(pos_keeps_a_priority_across_independent_steps) {
  const int pos = short_last("pos", false, 2000);
  const int random = short_last("random", false, 2000);
  BOOST_TEST_MESSAGE("short step last: pos " << pos << ", random " << random << " of 2000");
  BOOST_TEST(pos > 60);
  BOOST_TEST(random < 30);  // expected about 2000/512 = 4
}

// When every step of the long fiber touches the atomic the short one waits to
// touch, each races with it and the short fiber redraws every time: the walk
// is a coin toss again, and the short step rarely comes last.
BOOST_AUTO_TEST_CASE(pos_redraws_a_priority_when_a_step_races_with_it) {
  const int pos = short_last("pos", true, 2000);
  BOOST_TEST_MESSAGE("short step last, racing: pos " << pos << " of 2000");
  BOOST_TEST(pos < 30);  // expected about 2000/512 = 4
}

BOOST_AUTO_TEST_CASE(pos_with_one_seed_is_deterministic_replays_and_seeds_differ) {
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    for (std::uint32_t cores = 1; cores <= 3; ++cores) {
      BOOST_TEST_CONTEXT("seed " << seed << " cores " << cores) {
        auto a = run(config(seed, "pos", cores), mixed_program);
        auto b = run(config(seed, "pos", cores), mixed_program);
        BOOST_TEST(a.decisions == b.decisions);
        BOOST_TEST(a.trace_hash == b.trace_hash);
        auto again = run(replay_of(a), mixed_program);
        BOOST_TEST(again.ok());
        BOOST_TEST(again.trace_hash == a.trace_hash);
        if (cores == 3) hashes.insert(a.trace_hash);
      }
    }
  }
  BOOST_TEST(hashes.size() > 30u);
}

// --- profile and surw ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_profile_run_is_the_random_run_of_its_seed_counted) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      run_config c = config(seed, "profile", 3);
      c.options.profile = std::make_shared<run_profile>();
      const auto p = run(c, mixed_program);
      const auto r = run(config(seed, "random", 3), mixed_program);
      BOOST_TEST(p.decisions == r.decisions);
      BOOST_TEST(p.trace_hash == r.trace_hash);
      std::uint64_t steps = 0;
      for (const std::uint64_t n : c.options.profile->steps) steps += n;
      BOOST_TEST(steps == r.steps);
      // The mutex, the notify, the channel and the atomic: each touched by
      // more than one fiber.
      std::size_t shared = 0;
      for (const auto& [key, by_fiber] : c.options.profile->touches) {
        shared += std::count_if(by_fiber.begin(), by_fiber.end(), [](std::uint64_t n) { return n != 0; }) >= 2;
      }
      BOOST_TEST(shared >= 4u);
    }
  }
}

namespace {

struct one_object_state {
  explicit one_object_state(runtime& rt) : x(rt, 0) {}
  atomic<int> x;
  int short_position = -1;
};

// A long fiber of eight accesses to one atomic and a short one of one: where
// the short fiber's access falls among the long one's (0 to 8).
int short_position(runtime& rt) {
  auto st = std::make_shared<one_object_state>(rt);
  auto long_one = rt.spawn_on(0, "long", [st] {
    for (int i = 0; i < 8; ++i) st->x.fetch_add(1);
  });
  auto short_one = rt.spawn_on(1, "short", [st] { st->short_position = st->x.load(); });
  long_one.join();
  short_one.join();
  return st->short_position;
}

std::vector<int> positions(const std::string& strategy, std::uint64_t seeds) {
  std::vector<int> at(9, 0);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    run_config c = config(seed, strategy, 2);
    if (strategy == "surw") {  // what the CLI and the library do first
      BOOST_REQUIRE(run(sizing_run_of(c), [](runtime& rt) { short_position(rt); }).ok());
    }
    int where = -1;
    BOOST_REQUIRE(run(c, [&](runtime& rt) { where = short_position(rt); }).ok());
    ++at[static_cast<std::size_t>(where)];
  }
  return at;
}

}  // namespace

// A random walk tosses a coin at each step, so the short fiber's one access
// comes after all eight in about 1 run of 256. surw weighs the long fiber by
// the accesses it has left (1 + 8, 1 + 7, ...) against the short one's 1 + 1:
// once both stand at their accesses, the short one lands after all eight with
// probability (2*3)/(10*11), about 1 in 18, and no position is rare.
// Position 0 also holds the runs where the short fiber's access came before
// the long fiber started (it shares the main fiber's core until main blocks):
// about half of surw's runs, 70% of random's, measured.
BOOST_AUTO_TEST_CASE(surw_spreads_a_short_fibers_access_over_a_long_ones) {
  const std::vector<int> surw = positions("surw", 2000);
  const std::vector<int> random = positions("random", 2000);
  for (std::size_t i = 0; i < surw.size(); ++i) {
    BOOST_TEST_MESSAGE("position " << i << ": surw " << surw[i] << ", random " << random[i]);
  }
  BOOST_TEST(surw[8] > 60);    // measured 134 of 2000
  BOOST_TEST(random[8] < 30);  // expected about 8
  BOOST_TEST(surw[0] + 200 < random[0]);
  BOOST_TEST(*std::min_element(surw.begin(), surw.end()) > 40);
}

BOOST_AUTO_TEST_CASE(surw_without_a_profile_is_a_random_walk_and_surw_replays) {
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      auto plain = run(config(seed, "surw", 3), mixed_program);
      BOOST_TEST(plain.ok());
      run_config c = config(seed, "surw", 3);
      BOOST_REQUIRE(run(sizing_run_of(c), mixed_program).ok());
      auto a = run(c, mixed_program);
      auto b = run(c, mixed_program);
      BOOST_TEST(a.decisions == b.decisions);
      BOOST_TEST(a.trace_hash == b.trace_hash);
      auto again = run(replay_of(a), mixed_program);
      BOOST_TEST(again.ok());
      BOOST_TEST(again.trace_hash == a.trace_hash);
      hashes.insert(a.trace_hash);
    }
  }
  BOOST_TEST(hashes.size() > 30u);
}

// --- replay ------------------------------------------------------------------

namespace {

void check_replay(const run_result& original) {
  BOOST_TEST(original.ok());
  auto again = run(replay_of(original), mixed_program);
  BOOST_TEST(again.ok());
  BOOST_TEST(again.decisions == original.decisions);
  BOOST_TEST(again.steps == original.steps);
  BOOST_TEST(again.end_time_ns == original.end_time_ns);
  // The trace names no strategy, so a replay reproduces it byte for byte.
  BOOST_TEST(again.trace_hash == original.trace_hash);
  BOOST_TEST(again.trace_text == original.trace_text);
}

}  // namespace

BOOST_AUTO_TEST_CASE(replay_reproduces_random_runs) {
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    for (std::uint32_t cores = 1; cores <= 3; ++cores) {
      BOOST_TEST_CONTEXT("seed " << seed << " cores " << cores) {
        check_replay(run(config(seed, "random", cores), mixed_program));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(replay_reproduces_pct_runs) {
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    for (std::uint32_t cores = 1; cores <= 3; ++cores) {
      BOOST_TEST_CONTEXT("seed " << seed << " cores " << cores) {
        check_replay(run(pct_config(seed, 3, 200, cores), mixed_program));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(replay_reproduces_a_failing_run) {
  // Find a seed where the depth-2 bug fires, then replay it: same failure.
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    const run_config c = pct_config(seed, 2, 20, 2);
    if (!depth2_bug_found(c)) continue;
    const run_result original = run(c, depth2_program);
    const run_result again = run(replay_of(original), depth2_program);
    BOOST_TEST_CONTEXT("seed " << seed) {
      BOOST_REQUIRE(!again.ok());
      BOOST_TEST(again.failed->kind == failure_kind::abort);
      BOOST_TEST(again.failed->message.find("b saw the transient phase") != std::string::npos);
      BOOST_TEST(again.trace_hash == original.trace_hash);
      BOOST_TEST(again.trace_text == original.trace_text);
    }
    return;
  }
  BOOST_FAIL("pct never found the depth-2 bug in 600 seeds");
}

BOOST_AUTO_TEST_CASE(replaying_another_programs_decisions_diverges_and_says_where) {
  // Record the mixed program, replay it on the racy one: fiber ids and the
  // choices differ, so some decision names a fiber that is not runnable.
  int diverged = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      auto original = run(config(seed, "random", 2), mixed_program);
      auto r = run(replay_of(original), [](runtime& rt) { racy_program(rt, 3, 6); });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::replay_divergence);
      const std::string& msg = r.failed->message;
      const bool wrong_fiber = msg.find("expected fiber") != std::string::npos;
      const bool too_short = msg.find("needs more") != std::string::npos;
      const bool unused = msg.find("unused") != std::string::npos;
      BOOST_TEST((wrong_fiber || too_short || unused), msg);
      if (wrong_fiber) {
        ++diverged;
        BOOST_TEST(msg.find("decision ") != std::string::npos, msg);
        BOOST_TEST(msg.find("runnable were [") != std::string::npos, msg);
      }
      BOOST_TEST(msg.find("seed " + std::to_string(seed)) != std::string::npos, msg);
    }
  }
  BOOST_TEST(diverged > 0);
}

BOOST_AUTO_TEST_CASE(a_corrupted_decision_is_reported_at_its_index) {
  auto original = run(config(5, "random", 3), mixed_program);
  BOOST_REQUIRE(original.decisions.size() > 10u);
  for (std::size_t at : {std::size_t{0}, std::size_t{3}, original.decisions.size() - 1}) {
    BOOST_TEST_CONTEXT("corrupted index " << at) {
      run_config c = replay_of(original);
      c.options.decisions[at] = 999;  // no such fiber
      auto r = run(c, mixed_program);
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::replay_divergence);
      const std::string want = "decision " + std::to_string(at) + " expected fiber 999 to run, but runnable were [";
      BOOST_TEST(r.failed->message.find(want) != std::string::npos, r.failed->message);
      // Every decision before the corrupted one was followed.
      BOOST_TEST(r.decisions.size() == at);
      for (std::size_t i = 0; i < at && i < r.decisions.size(); ++i) {
        BOOST_TEST(r.decisions[i] == original.decisions[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_truncated_recording_runs_out_and_says_so) {
  auto original = run(config(6, "random", 2), mixed_program);
  BOOST_REQUIRE(original.decisions.size() > 4u);
  run_config c = replay_of(original);
  c.options.decisions.resize(original.decisions.size() / 2);
  auto r = run(c, mixed_program);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::replay_divergence);
  const std::string want = "the recording has " + std::to_string(c.options.decisions.size()) +
                           " decisions but the run needs more; runnable were [";
  BOOST_TEST(r.failed->message.find(want) != std::string::npos, r.failed->message);
}

BOOST_AUTO_TEST_CASE(unconsumed_decisions_are_reported) {
  auto original = run(config(7, "random", 2), mixed_program);
  run_config c = replay_of(original);
  c.options.decisions.push_back(0);
  c.options.decisions.push_back(1);
  auto r = run(c, mixed_program);
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::replay_divergence);
  BOOST_TEST(r.failed->message.find("2 recorded decisions unused") != std::string::npos, r.failed->message);
}

BOOST_AUTO_TEST_CASE(an_unknown_strategy_is_rejected) {
  BOOST_CHECK_THROW(run(config(0, "bogus"), [](runtime&) {}), std::invalid_argument);
}
