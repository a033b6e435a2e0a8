// Concurrent programs written once against the standard's names, through the
// namespace alias `cc`: test_std.cpp includes this file twice, once with
// LOCKSTEP_STD_NS = lockstep::sim_std (explored under the simulator) and once
// with it = std (run on real threads), so the same source compiles against both.
// Each program returns normally when it holds and throws std::logic_error
// (naming the property) when it does not.
//
// No include guard: meant to be included once per namespace.

#include <unordered_set>

namespace LOCKSTEP_PROGRAMS {

namespace cc = LOCKSTEP_STD_NS;

inline void require(bool holds, const char* what) {
  if (!holds) throw std::logic_error(what);
}

/// Two threads bump a counter with a load and a store: without the mutex an
/// update can be lost when a thread is preempted between them.
template <bool Locked>
void counter() {
  cc::atomic<int> x{0};
  cc::mutex m;
  auto bump = [&] {
    if constexpr (Locked) m.lock();
    const int v = x.load();
    x.store(v + 1);
    if constexpr (Locked) m.unlock();
  };
  cc::thread a(bump), b(bump);
  a.join();
  b.join();
  require(x == 2, "counter: an update was lost");
}

/// A one-slot mailbox: the consumer waits on a condition variable. Buggy: it
/// checks its condition once (`if`) instead of in a loop, so a spurious
/// wake-up lets it read an empty slot.
template <bool Buggy>
void mailbox() {
  cc::mutex m;
  cc::condition_variable cv;
  int slot = 0;  // guarded by m
  cc::thread producer([&] {
    cc::lock_guard<cc::mutex> g(m);
    slot = 42;
    cv.notify_one();
  });
  cc::thread consumer([&] {
    cc::unique_lock<cc::mutex> lk(m);
    if constexpr (Buggy) {
      if (slot == 0) cv.wait(lk);
    } else {
      cv.wait(lk, [&] { return slot != 0; });
    }
    require(slot == 42, "mailbox: the consumer woke to an empty slot");
  });
  producer.join();
  consumer.join();
}

/// A bounded queue (two slots) with two condition variables, three producers
/// and a consumer: every item arrives exactly once, in no particular order.
inline void bounded_queue() {
  cc::mutex m;
  cc::condition_variable not_full, not_empty;
  int items[2] = {0, 0};
  int size = 0, received = 0, sum = 0;
  auto producer = [&](int value) {
    cc::unique_lock<cc::mutex> lk(m);
    not_full.wait(lk, [&] { return size < 2; });
    items[size++] = value;
    not_empty.notify_one();
  };
  cc::thread p1(producer, 1), p2(producer, 2), p3(producer, 4);
  cc::thread consumer([&] {
    for (int i = 0; i < 3; ++i) {
      cc::unique_lock<cc::mutex> lk(m);
      not_empty.wait(lk, [&] { return size > 0; });
      sum += items[--size];
      ++received;
      not_full.notify_one();
    }
  });
  p1.join();
  p2.join();
  p3.join();
  consumer.join();
  require(received == 3 && sum == 7, "bounded_queue: an item was lost or duplicated");
}

/// A lazily built value behind call_once: built once, whoever asks first.
inline void lazy_singleton() {
  cc::once_flag once;
  cc::atomic<int> builds{0};
  int value = 0;
  auto get = [&] {
    cc::call_once(once, [&] {
      ++builds;
      value = 7;
    });
    require(value == 7, "lazy_singleton: read before it was built");
  };
  cc::thread a(get), b(get), c(get);
  a.join();
  b.join();
  c.join();
  require(builds.load() == 1, "lazy_singleton: built more than once");
}

/// The other primitives in correct use: a latch, a barrier, a semaphore, a
/// shared mutex, a recursive and a timed mutex, lock and try_lock over two
/// mutexes, atomic wait/notify, an atomic_flag spin lock, sleeps on the
/// steady clock and thread ids in an unordered set.
inline void toolbox() {
  constexpr int n = 3;
  cc::latch started(n);
  cc::barrier<> phase(n);
  cc::counting_semaphore<2> slots(2);
  cc::atomic<int> inside{0}, most{0}, turns{0};
  cc::shared_mutex rw;
  cc::recursive_mutex rec;
  cc::timed_mutex timed;
  cc::atomic_flag spin;
  cc::mutex left, right;
  int shared_value = 0, spun = 0, both = 0;
  auto worker = [&](int id) {
    started.count_down();
    started.wait();
    slots.acquire();
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    --inside;
    slots.release();
    phase.arrive_and_wait();
    {
      cc::unique_lock<cc::shared_mutex> w(rw);
      shared_value += id;
    }
    {
      cc::shared_lock<cc::shared_mutex> r(rw);
      require(shared_value >= id, "toolbox: a reader saw a write undone");
    }
    {
      cc::lock_guard<cc::recursive_mutex> a(rec);
      cc::lock_guard<cc::recursive_mutex> b(rec);
    }
    while (!timed.try_lock_for(cc::chrono::milliseconds(1))) {
    }
    timed.unlock();
    if (id % 2 == 0) {
      cc::lock(left, right);
    } else {
      while (cc::try_lock(right, left) != -1) cc::this_thread::yield();
    }
    ++both;
    left.unlock();
    right.unlock();
    while (spin.test_and_set()) cc::this_thread::yield();
    ++spun;
    spin.clear();
    const auto before = cc::chrono::steady_clock::now();
    cc::this_thread::sleep_for(cc::chrono::microseconds(10));
    require(cc::chrono::steady_clock::now() - before >= cc::chrono::microseconds(10), "toolbox: slept too short");
    turns.fetch_add(1);
    turns.notify_all();
  };
  cc::thread t0(worker, 1), t1(worker, 2), t2(worker, 3);
  const std::unordered_set<cc::thread::id> ids{t0.get_id(), t1.get_id(), t2.get_id(), cc::this_thread::get_id()};
  require(ids.size() == n + 1 && ids.count(cc::thread::id()) == 0, "toolbox: two threads share an id");
  for (int seen = turns.load(); seen != n; seen = turns.load()) turns.wait(seen);
  t0.join();
  t1.join();
  t2.join();
  require(most.load() <= 2, "toolbox: the semaphore let three in");
  require(shared_value == 6 && spun == n && both == n, "toolbox: a write was lost");
}

}  // namespace LOCKSTEP_PROGRAMS
