// Classic concurrency bugs, each written from its public description and
// each with its correct variant, on the standard's names (lockstep::sim_std)
// and lockstep::var for plain shared memory. run(true) is the buggy program,
// run(false) the fixed one; each checks its own property (LOCKSTEP_ASSERT_MSG,
// or the simulator's own reports: a deadlock, a data race).
//
// Used by test_classic_bugs (every bug found with the library's default
// options, every fix holding) and by classic_bugs_report (results/classic_bugs.md).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "../../sim/std.hpp"
#include "../explore.hpp"

namespace lockstep::classic {

namespace cc = lockstep::sim_std;

/// How each program's bug shows.
struct classic_program {
  const char* name;
  const char* kind;    ///< the bug's class
  const char* source;  ///< where it is described
  void (*run)(bool buggy);
};

// --- 1. Lost update: two threads do `hits += 1` on shared plain memory.
inline void lost_update(bool buggy) {
  var<int> hits{0, "hits"};
  cc::mutex m;
  auto bump = [&] {
    if (!buggy) m.lock();
    hits += 1;
    if (!buggy) m.unlock();
  };
  cc::thread a(bump), b(bump);
  a.join();
  b.join();
  LOCKSTEP_ASSERT_MSG(hits.load() == 2, "an update was lost");
}

// --- 2. Check-then-act on an atomic (an atomicity violation): two withdrawals
// of 80 from 100 both see enough money. Fixed: the check and the update are
// one compare-exchange.
inline void check_then_act(bool buggy) {
  cc::atomic<int> balance{100};
  auto withdraw = [&] {
    if (buggy) {
      if (balance.load() >= 80) balance.fetch_sub(80);
      return;
    }
    int seen = balance.load();
    while (seen >= 80 && !balance.compare_exchange_weak(seen, seen - 80)) {
    }
  };
  cc::thread a(withdraw), b(withdraw);
  a.join();
  b.join();
  LOCKSTEP_ASSERT_MSG(balance.load() >= 0, "the account was overdrawn");
}

// --- 3. Order violation (Lu et al., ASPLOS 2008: Mozilla's thread reads a
// field its creator sets only after starting it): the worker reads `config`
// that main writes after the start. Fixed: written before.
inline void init_after_start(bool buggy) {
  var<int> config{0, "config"};
  var<int> seen{0, "seen"};
  if (!buggy) config = 7;
  cc::thread worker([&] { seen = config.load(); });
  if (buggy) config = 7;
  worker.join();
  LOCKSTEP_ASSERT_MSG(seen.load() == 7, "the worker read the configuration before it was set");
}

// --- 4. Reading a result before the join (an order violation).
inline void read_before_join(bool buggy) {
  var<int> result{0, "result"};
  cc::thread worker([&] { result = 42; });
  int got = 0;
  if (buggy) got = result.load();
  worker.join();
  if (!buggy) got = result.load();
  LOCKSTEP_ASSERT_MSG(got == 42, "the result was read before the worker finished");
}

// --- 5. Lost wake-up: the consumer tests the flag without the lock, then
// waits; the producer's notify can fall between the two and is lost
// (a condition variable keeps no permit). Fixed: test and wait under the lock.
inline void lost_wakeup(bool buggy) {
  cc::mutex m;
  cc::condition_variable cv;
  cc::atomic<bool> ready{false};
  cc::thread producer([&] {
    cc::lock_guard<cc::mutex> lk(m);
    ready = true;
    cv.notify_one();
  });
  if (buggy) {
    if (!ready.load()) {
      cc::unique_lock<cc::mutex> lk(m);
      cv.wait(lk);  // no re-check: the notify may already have happened
      while (!ready.load()) cv.wait(lk);  // (a spurious wake-up is not the bug shown here)
    }
  } else {
    cc::unique_lock<cc::mutex> lk(m);
    cv.wait(lk, [&] { return ready.load(); });
  }
  producer.join();
}

// --- 6. notify_one where two kinds of waiters share one condition variable:
// a producer's notify wakes the other producer, and everyone ends up waiting.
inline void notify_one_wrong_waiter(bool buggy) {
  cc::mutex m;
  cc::condition_variable cv;
  int count = 0;  // guarded by m
  const int capacity = 1;
  auto notify = [&] { buggy ? cv.notify_one() : cv.notify_all(); };
  auto produce = [&] {
    for (int i = 0; i < 2; ++i) {
      cc::unique_lock<cc::mutex> lk(m);
      cv.wait(lk, [&] { return count < capacity; });
      ++count;
      notify();
    }
  };
  auto consume = [&] {
    for (int i = 0; i < 2; ++i) {
      cc::unique_lock<cc::mutex> lk(m);
      cv.wait(lk, [&] { return count > 0; });
      --count;
      notify();
    }
  };
  cc::thread p1(produce), p2(produce), c1(consume), c2(consume);
  p1.join();
  p2.join();
  c1.join();
  c2.join();
}

// --- 7. Lock-order inversion: two threads take two mutexes in opposite
// orders. Fixed: both take them in one order.
inline void lock_order_inversion(bool buggy) {
  cc::mutex a, b;
  var<int> moved{0, "moved"};
  cc::thread one([&] {
    cc::lock_guard<cc::mutex> first(a);
    cc::lock_guard<cc::mutex> second(b);
    moved += 1;
  });
  cc::thread two([&] {
    cc::lock_guard<cc::mutex> first(buggy ? b : a);
    cc::lock_guard<cc::mutex> second(buggy ? a : b);
    moved += 1;
  });
  one.join();
  two.join();
}

// --- 8. Dining philosophers (Dijkstra): three philosophers each take the
// left fork, then the right. Fixed: the last one takes the right one first.
inline void dining_philosophers(bool buggy) {
  std::array<cc::mutex, 3> forks;
  var<int> meals{0, "meals"};
  auto philosopher = [&](int i) {
    const int left = i, right = (i + 1) % 3;
    const bool swap = !buggy && i == 2;
    cc::lock_guard<cc::mutex> first(forks[static_cast<std::size_t>(swap ? right : left)]);
    cc::lock_guard<cc::mutex> second(forks[static_cast<std::size_t>(swap ? left : right)]);
    meals += 1;
  };
  cc::thread p0(philosopher, 0), p1(philosopher, 1), p2(philosopher, 2);
  p0.join();
  p1.join();
  p2.join();
  LOCKSTEP_ASSERT_MSG(meals.load() == 3, "a philosopher went hungry");
}

// --- 9. ABA on a Treiber stack (Treiber 1986; the ABA problem, IBM
// System/370 manual): a pop reads head A and its next B, is preempted while
// another thread pops A and B and pushes A back, then its compare-exchange
// still sees A and installs B, a node that is no longer in the stack. Nodes
// are indices; the fix tags the head with a counter bumped by every change.
inline void aba_stack(bool buggy) {
  constexpr std::int64_t none = -1;
  std::array<cc::atomic<std::int64_t>, 3> next;  // node -> next node
  cc::atomic<std::int64_t> head{0};              // low 32 bits: node (or none); high: the tag
  auto node_of = [](std::int64_t h) { return static_cast<std::int32_t>(h & 0xffffffff); };
  auto tagged = [&](std::int64_t node, std::int64_t old) {
    const std::int64_t tag = buggy ? 0 : (old >> 32) + 1;
    return (tag << 32) | (node & 0xffffffff);
  };
  next[0] = 1;  // 0 -> 1 -> 2
  next[1] = 2;
  next[2] = none;
  auto pop = [&]() -> std::int64_t {
    std::int64_t h = head.load();
    while (node_of(h) != none) {
      const std::int64_t n = next[static_cast<std::size_t>(node_of(h))].load();
      if (head.compare_exchange_strong(h, tagged(n, h))) return node_of(h);
    }
    return none;
  };
  auto push = [&](std::int64_t node) {
    std::int64_t h = head.load();
    do {
      next[static_cast<std::size_t>(node)].store(node_of(h));
    } while (!head.compare_exchange_strong(h, tagged(node, h)));
  };
  std::int64_t held_by_one = none, held_by_two = none;
  cc::thread one([&] { held_by_one = pop(); });
  cc::thread two([&] {
    const std::int64_t a = pop();
    held_by_two = pop();  // kept: this thread still uses it
    if (a != none) push(a);
  });
  one.join();
  two.join();
  // Every node is in the stack, or held by exactly one thread: walk the stack.
  std::array<int, 3> seen{};
  for (std::int64_t n = node_of(head.load()), steps = 0; n != none && steps < 4; ++steps) {
    ++seen[static_cast<std::size_t>(n)];
    n = next[static_cast<std::size_t>(n)].load();
  }
  if (held_by_one != none) ++seen[static_cast<std::size_t>(held_by_one)];
  if (held_by_two != none) ++seen[static_cast<std::size_t>(held_by_two)];
  for (int s : seen) LOCKSTEP_ASSERT_MSG(s <= 1, "a node is both in the stack and held by a thread (ABA)");
}

// --- 10. The broken double-checked lock (Meyers & Alexandrescu, 2004): the
// first check reads the instance without synchronisation. Fixed: an atomic
// published with release and read with acquire.
inline void double_checked_lock(bool buggy) {
  cc::mutex m;
  var<int> value{0, "value"};
  var<bool> plain_ready{false, "instance"};
  cc::atomic<bool> ready{false};
  auto get = [&]() -> int {
    const bool built = buggy ? plain_ready.load() : ready.load(cc::memory_order_acquire);
    if (!built) {
      cc::lock_guard<cc::mutex> lk(m);
      const bool again = buggy ? plain_ready.load() : ready.load(cc::memory_order_relaxed);
      if (!again) {
        value = 8080;
        if (buggy) {
          plain_ready = true;
        } else {
          ready.store(true, cc::memory_order_release);
        }
      }
    }
    return value.load();
  };
  cc::thread a([&] { LOCKSTEP_ASSERT(get() == 8080); }), b([&] { LOCKSTEP_ASSERT(get() == 8080); });
  a.join();
  b.join();
}

// --- 11. Message passing with a relaxed flag (the MP litmus shape, loom's and
// Relacy's first example): the data is not published. Fixed: release/acquire.
inline void relaxed_message_passing(bool buggy) {
  var<int> data{0, "data"};
  cc::atomic<bool> flag{false};
  cc::thread producer([&] {
    data = 1;
    flag.store(true, buggy ? cc::memory_order_relaxed : cc::memory_order_release);
  });
  while (!flag.load(cc::memory_order_acquire)) cc::this_thread::yield();
  LOCKSTEP_ASSERT(data.load() == 1);
  producer.join();
}

// --- 12. A spin lock that tests and then sets (two operations), so two
// threads both see it free. Fixed: one exchange.
inline void test_then_set_spinlock(bool buggy) {
  cc::atomic<bool> locked{false};
  cc::atomic<int> inside{0};
  auto critical = [&] {
    if (buggy) {
      while (locked.load()) cc::this_thread::yield();
      locked.store(true);
    } else {
      while (locked.exchange(true)) cc::this_thread::yield();
    }
    LOCKSTEP_ASSERT_MSG(inside.fetch_add(1) == 0, "two threads in the critical section");
    inside.fetch_sub(1);
    locked.store(false);
  };
  cc::thread a(critical), b(critical);
  a.join();
  b.join();
}

// --- 13. Peterson's lock (Peterson, 1981) with the turn given to oneself
// instead of the other: both may enter. Sequentially consistent atomics, on
// which the correct lock is correct.
inline void peterson(bool buggy) {
  std::array<cc::atomic<bool>, 2> want;
  cc::atomic<int> turn{0};
  cc::atomic<int> inside{0};
  auto critical = [&](int me) {
    const int other = 1 - me;
    want[static_cast<std::size_t>(me)].store(true);
    turn.store(buggy ? me : other);
    while (want[static_cast<std::size_t>(other)].load() && turn.load() == other) cc::this_thread::yield();
    LOCKSTEP_ASSERT_MSG(inside.fetch_add(1) == 0, "two threads in the critical section");
    inside.fetch_sub(1);
    want[static_cast<std::size_t>(me)].store(false);
  };
  cc::thread a(critical, 0), b(critical, 1);
  a.join();
  b.join();
}

// --- 14. A transfer between two accounts that an auditor sees half done:
// each account is atomic, the pair is not. Fixed: transfer and audit under one mutex.
inline void torn_transfer(bool buggy) {
  cc::atomic<int> from{50}, to{50};
  cc::mutex m;
  cc::thread transfer([&] {
    if (!buggy) m.lock();
    from.fetch_sub(10);
    to.fetch_add(10);
    if (!buggy) m.unlock();
  });
  cc::thread audit([&] {
    if (!buggy) m.lock();
    const int total = from.load() + to.load();
    if (!buggy) m.unlock();
    LOCKSTEP_ASSERT_MSG(total == 100, "the auditor saw money missing");
  });
  transfer.join();
  audit.join();
}

// --- 15. A write under a reader's lock of a shared_mutex: readers are not
// ordered with each other. Fixed: the writer takes the lock exclusively.
inline void write_under_shared_lock(bool buggy) {
  cc::shared_mutex m;
  var<int> table{0, "table"};
  cc::thread writer([&] {
    if (buggy) {
      cc::shared_lock<cc::shared_mutex> lk(m);
      table = 1;
    } else {
      cc::unique_lock<cc::shared_mutex> lk(m);
      table = 1;
    }
  });
  cc::thread reader([&] {
    cc::shared_lock<cc::shared_mutex> lk(m);
    (void)table.load();
  });
  writer.join();
  reader.join();
}

// --- 16. A work-stealing deque's last item (Chase & Lev, SPAA 2005; the
// THE protocol of Cilk-5, Frigo et al., PLDI 1998; CHESS's work-stealing
// queue test): the owner's pop and a thief's steal race for the last item,
// and without the owner's compare-exchange on head both take it.
inline void work_stealing_last_item(bool buggy) {
  std::array<int, 4> items{};
  cc::atomic<int> head{0}, tail{0};
  cc::atomic<int> taken_1{0}, taken_2{0};  // how often each item was taken
  auto take = [&](int item) { (item == 1 ? taken_1 : taken_2).fetch_add(1); };
  auto push = [&](int v) {
    const int t = tail.load();
    items[static_cast<std::size_t>(t)] = v;
    tail.store(t + 1);
  };
  auto pop = [&]() -> int {
    const int t = tail.load() - 1;
    tail.store(t);
    int h = head.load();
    if (h < t) return items[static_cast<std::size_t>(t)];
    if (h > t) {
      tail.store(t + 1);
      return 0;
    }
    // The last item: the thief may be taking it too.
    int item = items[static_cast<std::size_t>(t)];
    if (!buggy && !head.compare_exchange_strong(h, h + 1)) item = 0;  // the thief won
    if (buggy) head.store(h + 1);
    tail.store(t + 1);
    return item;
  };
  auto steal = [&]() -> int {
    int h = head.load();
    const int t = tail.load();
    if (h >= t) return 0;
    const int item = items[static_cast<std::size_t>(h)];
    return head.compare_exchange_strong(h, h + 1) ? item : 0;
  };
  push(1);
  push(2);
  cc::thread thief([&] {
    if (const int v = steal()) take(v);
  });
  for (int i = 0; i < 2; ++i) {
    if (const int v = pop()) take(v);
  }
  thief.join();
  LOCKSTEP_ASSERT_MSG(taken_1.load() <= 1 && taken_2.load() <= 1, "an item was taken twice");
}

// --- 17. Initialisation guarded by a flag tested and then set: two threads
// both initialise. Fixed: std::call_once.
inline void init_twice(bool buggy) {
  cc::atomic<bool> initialised{false};
  cc::atomic<int> inits{0};
  cc::once_flag once;
  auto use = [&] {
    if (buggy) {
      if (!initialised.load()) {
        inits.fetch_add(1);
        initialised.store(true);
      }
    } else {
      cc::call_once(once, [&] { inits.fetch_add(1); });
    }
  };
  cc::thread a(use), b(use);
  a.join();
  b.join();
  LOCKSTEP_ASSERT_MSG(inits.load() == 1, "initialised twice");
}

// --- 18. Publication through relaxed atomics only: the payload is an atomic
// too, so nothing races, but the reader that saw the flag may read the
// payload's old value (the memory model's stale read; sequentially
// consistent atomics never show it). Fixed: release the flag, acquire it.
inline void stale_publication(bool buggy) {
  cc::atomic<int> payload{0};
  cc::atomic<bool> ready{false};
  cc::thread writer([&] {
    payload.store(42, cc::memory_order_relaxed);
    ready.store(true, buggy ? cc::memory_order_relaxed : cc::memory_order_release);
  });
  cc::thread reader([&] {
    if (ready.load(buggy ? cc::memory_order_relaxed : cc::memory_order_acquire)) {
      LOCKSTEP_ASSERT_MSG(payload.load(cc::memory_order_relaxed) == 42, "the flag was seen before the payload");
    }
  });
  writer.join();
  reader.join();
}

// --- 19. Dekker's entry with release/acquire flags: each thread raises its
// flag and enters if the other's is down. Both may read the other's old
// flag (store buffering), so both enter. Fixed: seq_cst stores and loads,
// which forbid that outcome.
inline void dekker_release_acquire(bool buggy) {
  cc::atomic<bool> flag0{false};
  cc::atomic<bool> flag1{false};
  cc::atomic<int> inside{0};
  const cc::memory_order store_order = buggy ? cc::memory_order_release : cc::memory_order_seq_cst;
  const cc::memory_order load_order = buggy ? cc::memory_order_acquire : cc::memory_order_seq_cst;
  auto enter = [&](cc::atomic<bool>& mine, cc::atomic<bool>& theirs) {
    mine.store(true, store_order);
    if (!theirs.load(load_order)) {
      LOCKSTEP_ASSERT_MSG(inside.fetch_add(1) == 0, "both threads entered the critical section");
      inside.fetch_sub(1);
    }
  };
  cc::thread a([&] { enter(flag0, flag1); });
  cc::thread b([&] { enter(flag1, flag0); });
  a.join();
  b.join();
}

// --- Many threads (SCTBench's reorder_X_bad, after CHESS): `setters`
// threads each store a = 1, then b = -1 (two seq_cst atomics); one checker,
// started last, reads a, then b, and sees a half-done setter (a == 1, b == 0,
// or a == 0, b == -1). The bug needs the checker between one setter's two
// stores, and every other setter either not begun or not yet at its second:
// with 100 setters, 101 threads besides main. Fixed: each setter's two stores
// and the checker's two loads under one mutex. Not among classic_programs():
// measured by classic_bugs_report --many-threads (results/strategies.md),
// as no strategy finds it within the library's default runs.
inline void reorder(int setters, bool buggy) {
  cc::atomic<int> a{0}, b{0};
  cc::mutex m;
  std::vector<cc::thread> ts;
  ts.reserve(static_cast<std::size_t>(setters) + 1);
  for (int i = 0; i < setters; ++i) {
    ts.emplace_back([&] {
      if (!buggy) m.lock();
      a.store(1);
      b.store(-1);
      if (!buggy) m.unlock();
    });
  }
  ts.emplace_back([&] {
    if (!buggy) m.lock();
    const int seen_a = a.load(), seen_b = b.load();
    if (!buggy) m.unlock();
    LOCKSTEP_ASSERT_MSG((seen_a == 0 && seen_b == 0) || (seen_a == 1 && seen_b == -1),
                        "the checker saw a setter between its two stores");
  });
  for (auto& t : ts) t.join();
}

inline const std::vector<classic_program>& classic_programs() {
  static const std::vector<classic_program> all = {
      {"lost_update", "lost update (data race)", "Relacy and loom's first examples", lost_update},
      {"check_then_act", "atomicity violation", "Lu et al., ASPLOS 2008", check_then_act},
      {"init_after_start", "order violation (data race)", "Lu et al., ASPLOS 2008 (Mozilla)", init_after_start},
      {"read_before_join", "order violation (data race)", "a missing join", read_before_join},
      {"lost_wakeup", "lost wake-up (deadlock)", "condition variable without its predicate under the lock",
       lost_wakeup},
      {"notify_one_wrong_waiter", "lost wake-up (deadlock)", "producers and consumers on one condition variable",
       notify_one_wrong_waiter},
      {"lock_order_inversion", "deadlock", "two locks in opposite orders", lock_order_inversion},
      {"dining_philosophers", "deadlock", "Dijkstra", dining_philosophers},
      {"aba_stack", "ABA", "Treiber stack, IBM System/370", aba_stack},
      {"double_checked_lock", "data race", "Meyers & Alexandrescu, 2004", double_checked_lock},
      {"relaxed_message_passing", "missing release (data race)", "loom, Relacy (MP)", relaxed_message_passing},
      {"test_then_set_spinlock", "atomicity violation (mutual exclusion)", "spin lock from a load and a store",
       test_then_set_spinlock},
      {"peterson", "mutual exclusion", "Peterson, 1981 (turn given to oneself)", peterson},
      {"torn_transfer", "atomicity violation (multi-variable)", "Lu et al., ASPLOS 2008", torn_transfer},
      {"write_under_shared_lock", "data race", "reader-writer lock misuse", write_under_shared_lock},
      {"work_stealing_last_item", "work-stealing queue", "Chase & Lev, SPAA 2005; CHESS", work_stealing_last_item},
      {"init_twice", "atomicity violation", "flag-guarded initialisation", init_twice},
      {"stale_publication", "stale read (memory model)", "loom, Relacy, C11Tester (MP with atomics)",
       stale_publication},
      {"dekker_release_acquire", "store buffering (memory model)", "Dekker; the SB litmus test",
       dekker_release_acquire},
  };
  return all;
}

}  // namespace lockstep::classic
