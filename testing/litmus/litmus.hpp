// Litmus tests of the C++ memory model, as lockstep::sim_std programs: the
// classic shapes (message passing, store buffering, load buffering, IRIW,
// WRC, 2+2W and the coherence tests) in their relaxed, release/acquire,
// seq_cst and fence variants, each with the outcomes C++20 allows and those
// it forbids (as RC11 reads it: Lahav et al., "Repairing Sequential
// Consistency in C/C++11", PLDI 2017, whose tables these follow).
//
// A program runs its threads to the end and returns its outcome, the values
// its loads read ("r1=1 r2=0"), or the final values for the write-only
// shapes. test_litmus runs every schedule and every choice of every load
// (dfs without bounds) and checks that the outcomes seen are exactly the
// allowed ones; litmus_report writes results/memory_model.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../../sim/dfs_search.hpp"
#include "../../sim/runtime.hpp"
#include "../../sim/std.hpp"
#include "../explore.hpp"

namespace lockstep::litmus {

namespace cc = lockstep::sim_std;
namespace sim = lockstep::sim;
using mo = cc::memory_order;
inline constexpr mo rlx = cc::memory_order_relaxed;
inline constexpr mo acq = cc::memory_order_acquire;
inline constexpr mo rel = cc::memory_order_release;
inline constexpr mo sc = cc::memory_order_seq_cst;

struct test {
  std::string name;                 ///< "MP+rel+acq"
  std::string shape;                ///< what the threads do
  std::function<std::string()> program;
  std::set<std::string> allowed;    ///< every outcome C++20 allows: each must be seen
  std::set<std::string> forbidden;  ///< outcomes that must never be seen
  std::string note{};               ///< where lockstep departs from the standard, said
  /// The search's preemption bound (none: every schedule). The shapes of
  /// three and four threads have too many schedules for ctest under ASan;
  /// their weak outcomes need few preemptions, since a load may read an
  /// older store without one (litmus_report searches them at 3).
  std::optional<std::uint32_t> preemption_bound{};
};

/// What running every schedule of a program found.
struct search {
  std::set<std::string> outcomes;
  std::uint64_t schedules = 0;
  bool exhausted = false;                  ///< every schedule within the bounds ran
  std::optional<sim::run_result> failure;  ///< the first failing run, if one failed
};

/// Every schedule of `program(outcomes)`, every load's and store's choice
/// included (dfs within the bounds; none: all), at most `max_schedules`;
/// with `dpor` (no bounds) reorderings of independent steps run once.
template <class Program>
search every_schedule(Program program, bool seq_cst_only, std::optional<std::uint32_t> preemption_bound = std::nullopt,
                      std::optional<std::uint32_t> delay_bound = std::nullopt,
                      std::uint64_t max_schedules = 5'000'000, bool dpor = false) {
  search s;
  sim::run_config c;
  c.seed = 1;
  c.trace = sim::trace_mode::off;
  c.seq_cst_only = seq_cst_only;
  const sim::dfs_bounds bounds{preemption_bound, delay_bound, 10'000, dpor};
  const sim::dfs_outcome o = sim::search_dfs(
      c, bounds, max_schedules,
      [&](const sim::run_config& rc) { return sim::run(rc, [&](sim::runtime&) { program(s.outcomes); }); },
      [] { return false; });
  s.schedules = o.schedules;
  s.exhausted = o.exhausted;
  s.failure = o.failure;
  return s;
}

inline std::string out(int r1, int r2) { return "r1=" + std::to_string(r1) + " r2=" + std::to_string(r2); }
inline std::string out(int r1, int r2, int r3) { return out(r1, r2) + " r3=" + std::to_string(r3); }
inline std::string out(int r1, int r2, int r3, int r4) { return out(r1, r2, r3) + " r4=" + std::to_string(r4); }

/// Every combination of `values` for n registers, as out() spells them.
inline std::set<std::string> every(int n, std::vector<int> values = {0, 1}) {
  std::set<std::string> all;
  std::vector<int> r(static_cast<std::size_t>(n), 0);
  const std::function<void(std::size_t)> fill = [&](std::size_t i) {
    if (i == r.size()) {
      all.insert(n == 2 ? out(r[0], r[1]) : n == 3 ? out(r[0], r[1], r[2]) : out(r[0], r[1], r[2], r[3]));
      return;
    }
    for (int v : values) {
      r[i] = v;
      fill(i + 1);
    }
  };
  fill(0);
  return all;
}
inline std::set<std::string> without(std::set<std::string> all, const std::set<std::string>& gone) {
  for (const std::string& g : gone) all.erase(g);
  return all;
}

// Message passing: does the reader that saw the flag see the data?
inline std::string mp(mo store_flag, mo load_flag, bool fences) {
  cc::atomic<int> data{0};
  cc::atomic<int> flag{0};
  int r1 = 0;
  int r2 = 0;
  cc::thread writer([&] {
    data.store(1, rlx);
    if (fences) cc::atomic_thread_fence(rel);
    flag.store(1, store_flag);
  });
  cc::thread reader([&] {
    r1 = flag.load(load_flag);
    if (fences) cc::atomic_thread_fence(acq);
    r2 = data.load(rlx);
  });
  writer.join();
  reader.join();
  return out(r1, r2);
}

// Store buffering: can both threads miss the other's store?
inline std::string sb(mo order, bool sc_fences) {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  int r1 = 0;
  int r2 = 0;
  cc::thread a([&] {
    x.store(1, order == acq ? rel : order);
    if (sc_fences) cc::atomic_thread_fence(sc);
    r1 = y.load(order == rel ? acq : order);
  });
  cc::thread b([&] {
    y.store(1, order == acq ? rel : order);
    if (sc_fences) cc::atomic_thread_fence(sc);
    r2 = x.load(order == rel ? acq : order);
  });
  a.join();
  b.join();
  return out(r1, r2);
}

// Store buffering with one side seq_cst accesses, the other a relaxed store
// and load around a seq_cst fence: whichever comes first in S, one load sees
// the other thread's store ([atomics.fences]: a fence after a store, or a
// seq_cst store before a fence).
inline std::string sb_sc_and_fence() {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  int r1 = 0;
  int r2 = 0;
  cc::thread a([&] {
    x.store(1, sc);
    r1 = y.load(sc);
  });
  cc::thread b([&] {
    y.store(1, rlx);
    cc::atomic_thread_fence(sc);
    r2 = x.load(rlx);
  });
  a.join();
  b.join();
  return out(r1, r2);
}

// Load buffering: can each load read the other thread's later store?
inline std::string lb(mo load_order, mo store_order) {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  int r1 = 0;
  int r2 = 0;
  cc::thread a([&] {
    r1 = x.load(load_order);
    y.store(1, store_order);
  });
  cc::thread b([&] {
    r2 = y.load(load_order);
    x.store(1, store_order);
  });
  a.join();
  b.join();
  return out(r1, r2);
}

// Independent reads of independent writes: can two readers disagree on the
// order of two writes they did not make?
inline std::string iriw(mo store_order, mo load_order, bool sc_fences) {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  int r1 = 0;
  int r2 = 0;
  int r3 = 0;
  int r4 = 0;
  cc::thread wx([&] { x.store(1, store_order); });
  cc::thread wy([&] { y.store(1, store_order); });
  cc::thread a([&] {
    r1 = x.load(load_order);
    if (sc_fences) cc::atomic_thread_fence(sc);
    r2 = y.load(load_order);
  });
  cc::thread b([&] {
    r3 = y.load(load_order);
    if (sc_fences) cc::atomic_thread_fence(sc);
    r4 = x.load(load_order);
  });
  wx.join();
  wy.join();
  a.join();
  b.join();
  return out(r1, r2, r3, r4);
}

// Write-to-read causality: is a store seen by a thread whose store another
// thread then sees, seen by that third thread too?
inline std::string wrc(mo store_order, mo load_order) {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  int r1 = 0;
  int r2 = 0;
  int r3 = 0;
  cc::thread a([&] { x.store(1, store_order); });
  cc::thread b([&] {
    r1 = x.load(load_order);
    y.store(1, store_order);
  });
  cc::thread c([&] {
    r2 = y.load(load_order);
    r3 = x.load(load_order);
  });
  a.join();
  b.join();
  c.join();
  return out(r1, r2, r3);
}

// 2+2W: can each location's final value be the first thread's store to it?
// The outcome is the final values of x and y (read after the joins).
inline std::string two_plus_two_w(mo order) {
  cc::atomic<int> x{0};
  cc::atomic<int> y{0};
  cc::thread a([&] {
    x.store(1, order);
    y.store(2, order);
  });
  cc::thread b([&] {
    y.store(1, order);
    x.store(2, order);
  });
  a.join();
  b.join();
  return "x=" + std::to_string(x.load()) + " y=" + std::to_string(y.load());
}

// CoRR: two readers read x twice each while two writers store 1 and 2: may
// they see the writes in opposite orders? (Never: one modification order.)
inline std::string corr(mo order) {
  cc::atomic<int> x{0};
  int r1 = 0;
  int r2 = 0;
  int r3 = 0;
  int r4 = 0;
  cc::thread w1([&] { x.store(1, order); });
  cc::thread w2([&] { x.store(2, order); });
  cc::thread a([&] {
    r1 = x.load(order);
    r2 = x.load(order);
  });
  cc::thread b([&] {
    r3 = x.load(order);
    r4 = x.load(order);
  });
  w1.join();
  w2.join();
  a.join();
  b.join();
  return out(r1, r2, r3, r4);
}

// CoWR: a thread reads x after storing to it, beside another writer: it
// reads its own store or a later one, never the initial value.
inline std::string cowr(mo order) {
  cc::atomic<int> x{0};
  int r1 = 0;
  cc::thread a([&] {
    x.store(1, order);
    r1 = x.load(order);
  });
  cc::thread b([&] { x.store(2, order); });
  a.join();
  b.join();
  return "r1=" + std::to_string(r1) + " x=" + std::to_string(x.load());
}

// CoRW: a thread reads x, then stores to it, beside another writer: if it
// read the other store, its own comes later and is the final value.
inline std::string corw(mo order) {
  cc::atomic<int> x{0};
  int r1 = 0;
  cc::thread a([&] {
    r1 = x.load(order);
    x.store(1, order);
  });
  cc::thread b([&] { x.store(2, order); });
  a.join();
  b.join();
  return "r1=" + std::to_string(r1) + " x=" + std::to_string(x.load());
}

// Read-modify-writes are atomic: two increments and a store beside them
// leave 10, 11 or 12, never lose an increment (nothing is placed between an
// RMW and the store it read).
inline std::string rmw_atomicity() {
  cc::atomic<int> x{0};
  cc::thread a([&] { x.fetch_add(1, rlx); });
  cc::thread b([&] { x.fetch_add(1, rlx); });
  cc::thread c([&] { x.store(10, rlx); });
  a.join();
  b.join();
  c.join();
  return "x=" + std::to_string(x.load());
}

// Release sequences: a relaxed RMW after a release store continues its
// sequence, so an acquire that reads the RMW's value synchronises with the
// release store (r1=2 means it read the RMW that followed it).
inline std::string mp_release_sequence() {
  cc::atomic<int> data{0};
  cc::atomic<int> flag{0};
  int r1 = 0;
  int r2 = 0;
  cc::thread writer([&] {
    data.store(1, rlx);
    flag.store(1, rel);
  });
  cc::thread bump([&] { flag.fetch_add(1, rlx); });
  cc::thread reader([&] {
    r1 = flag.load(acq);
    r2 = data.load(rlx);
  });
  writer.join();
  bump.join();
  reader.join();
  return out(r1, r2);
}

// A test-and-test-and-set spin lock with the orders it needs: its relaxed
// test may read a stale "held" many times over (a choice each time), yet it
// ends, since a load never reads older than what it read before and the
// strategies draw the newest store as often as any. `yielding` spins with
// this_thread::yield, otherwise busy on the atomic.
inline void ttas_spin_lock(bool yielding) {
  cc::atomic<bool> held{false};
  int counter = 0;  // guarded by the lock: a lost increment is the bug
  const auto work = [&] {
    for (int i = 0; i < 2; ++i) {
      for (;;) {
        while (held.load(rlx)) {
          if (yielding) cc::this_thread::yield();
        }
        if (!held.exchange(true, acq)) break;
      }
      counter = counter + 1;
      held.store(false, rel);
    }
  };
  cc::thread a(work);
  cc::thread b(work);
  a.join();
  b.join();
  sim::check(counter == 4, "mutual_exclusion", "an increment was lost");
}

/// One run of ttas_spin_lock under `strategy` (pct's k sized for it; surw's
/// profile made first, as the library does).
inline sim::run_result run_spin_lock(std::uint64_t seed, const char* strategy, bool yielding,
                                     bool seq_cst_only = false) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = strategy;
  c.options.pct_steps = 200;  // it runs 20 to 30 steps
  c.trace = sim::trace_mode::off;
  c.max_steps = 100'000;
  c.seq_cst_only = seq_cst_only;
  const auto body = [yielding](sim::runtime&) { ttas_spin_lock(yielding); };
  return sim::run(lockstep::testing::with_sizing_run(c, body), body);
}

inline std::vector<test> all_tests() {
  const std::set<std::string> any2 = every(2);
  std::vector<test> t;
  t.push_back({"MP", "T1: data=1; flag=1 (relaxed) ∥ T2: r1=flag; r2=data (relaxed)",
               [] { return mp(rlx, rlx, false); }, any2, {}});
  t.push_back({"MP+rel+acq", "flag stored release, loaded acquire", [] { return mp(rel, acq, false); },
               without(any2, {out(1, 0)}), {out(1, 0)}});
  t.push_back({"MP+rel+rlx", "flag stored release, loaded relaxed (no acquire)",
               [] { return mp(rel, rlx, false); }, any2, {}});
  t.push_back({"MP+fences", "relaxed accesses, release fence before the flag, acquire fence after it",
               [] { return mp(rlx, rlx, true); }, without(any2, {out(1, 0)}), {out(1, 0)}});
  t.push_back({"MP+sc", "every access seq_cst", [] { return mp(sc, sc, false); }, without(any2, {out(1, 0)}),
               {out(1, 0)}});
  t.push_back({"SB", "T1: x=1; r1=y ∥ T2: y=1; r2=x (relaxed)", [] { return sb(rlx, false); }, any2, {}});
  t.push_back({"SB+rel+acq", "stores release, loads acquire", [] { return sb(rel, false); }, any2, {}});
  t.push_back({"SB+sc", "every access seq_cst", [] { return sb(sc, false); }, without(any2, {out(0, 0)}),
               {out(0, 0)}});
  t.push_back({"SB+sc-fences", "relaxed accesses, a seq_cst fence between each thread's store and load",
               [] { return sb(rlx, true); }, without(any2, {out(0, 0)}), {out(0, 0)}});
  t.push_back({"SB+sc+sc-fence", "T1: x=1; r1=y (seq_cst) ∥ T2: y=1; seq_cst fence; r2=x (relaxed)",
               sb_sc_and_fence, without(any2, {out(0, 0)}), {out(0, 0)}});
  t.push_back({"LB", "T1: r1=x; y=1 ∥ T2: r2=y; x=1 (relaxed)", [] { return lb(rlx, rlx); },
               without(any2, {out(1, 1)}), {out(1, 1)},
               "C++ allows r1=1 r2=1; RC11 (and lockstep, C11Tester, loom) forbids it: a load never reads "
               "a store not yet made"});
  t.push_back({"LB+acq+rel", "loads acquire, stores release", [] { return lb(acq, rel); },
               without(any2, {out(1, 1)}), {out(1, 1)}});
  const std::set<std::string> any4 = every(4);
  const std::string disagree = out(1, 0, 1, 0);
  t.push_back({"IRIW", "T1: x=1 ∥ T2: y=1 ∥ T3: r1=x; r2=y ∥ T4: r3=y; r4=x (relaxed)",
               [] { return iriw(rlx, rlx, false); }, any4, {}});
  t.push_back({"IRIW+rel+acq", "stores release, loads acquire", [] { return iriw(rel, acq, false); }, any4, {}});
  t.push_back({"IRIW+sc", "every access seq_cst", [] { return iriw(sc, sc, false); }, without(any4, {disagree}),
               {disagree}});
  t.push_back({"IRIW+sc-fences", "relaxed accesses, a seq_cst fence between each reader's loads",
               [] { return iriw(rlx, rlx, true); }, without(any4, {disagree}), {disagree}});
  const std::set<std::string> any3 = every(3);
  t.push_back({"WRC", "T1: x=1 ∥ T2: r1=x; y=1 ∥ T3: r2=y; r3=x (relaxed)", [] { return wrc(rlx, rlx); }, any3, {}});
  t.push_back({"WRC+rel+acq", "stores release, loads acquire", [] { return wrc(rel, acq); },
               without(any3, {out(1, 1, 0)}), {out(1, 1, 0)}});
  const std::set<std::string> finals = {"x=1 y=1", "x=1 y=2", "x=2 y=1", "x=2 y=2"};
  t.push_back({"2+2W", "T1: x=1; y=2 ∥ T2: y=1; x=2 (relaxed); final x and y", [] { return two_plus_two_w(rlx); },
               finals, {}});
  t.push_back({"2+2W+rel", "every store release", [] { return two_plus_two_w(rel); }, finals, {}});
  t.push_back({"2+2W+sc", "every store seq_cst", [] { return two_plus_two_w(sc); }, without(finals, {"x=1 y=1"}),
               {"x=1 y=1"}});
  // CoRR: a reader that saw 1 then 2 and one that saw 2 then 1 cannot both
  // exist; neither can a reader going back to 0.
  std::set<std::string> corr_forbidden;
  std::set<std::string> corr_allowed;
  for (const std::string& o : every(4, {0, 1, 2})) {
    const auto back = [](int a, int b) { return a != 0 && b == 0; };
    const int r1 = o[3] - '0';
    const int r2 = o[8] - '0';
    const int r3 = o[13] - '0';
    const int r4 = o[18] - '0';
    const bool opposite = (r1 == 1 && r2 == 2 && r3 == 2 && r4 == 1) || (r1 == 2 && r2 == 1 && r3 == 1 && r4 == 2);
    if (opposite || back(r1, r2) || back(r3, r4)) {
      corr_forbidden.insert(o);
    } else {
      corr_allowed.insert(o);
    }
  }
  t.push_back({"CoRR", "T1: x=1 ∥ T2: x=2 ∥ T3: r1=x; r2=x ∥ T4: r3=x; r4=x (relaxed)", [] { return corr(rlx); },
               corr_allowed, corr_forbidden});
  t.push_back({"CoWR", "T1: x=1; r1=x ∥ T2: x=2 (relaxed); r1 and the final x", [] { return cowr(rlx); },
               {"r1=1 x=1", "r1=1 x=2", "r1=2 x=2"}, {"r1=0 x=1", "r1=0 x=2", "r1=2 x=1"}});
  t.push_back({"CoRW", "T1: r1=x; x=1 ∥ T2: x=2 (relaxed); r1 and the final x", [] { return corw(rlx); },
               {"r1=0 x=1", "r1=0 x=2", "r1=2 x=1"}, {"r1=1 x=1", "r1=1 x=2", "r1=2 x=2"}});
  t.push_back({"RMW", "T1: x.fetch_add(1) ∥ T2: x.fetch_add(1) ∥ T3: x=10 (relaxed); final x", rmw_atomicity,
               {"x=10", "x=11", "x=12"}, {"x=1", "x=2"}});
  t.push_back({"MP+rel+RMW+acq", "T1: data=1; flag=1 (release) ∥ T2: flag.fetch_add(1) (relaxed) ∥ T3: r1=flag "
               "(acquire); r2=data", mp_release_sequence,
               {out(0, 0), out(0, 1), out(1, 0), out(1, 1), out(2, 1)}, {out(2, 0)}});
  for (test& x : t) {
    if (x.name.rfind("IRIW", 0) == 0 || x.name.rfind("WRC", 0) == 0 || x.name == "CoRR" ||
        x.name == "MP+rel+RMW+acq") {
      x.preemption_bound = 1;
    }
  }
  return t;
}

}  // namespace lockstep::litmus
