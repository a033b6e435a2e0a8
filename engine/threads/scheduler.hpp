// One core's fiber scheduler: an OS thread (pinned when the kernel allows)
// running its fibers on Boost.Context, with
//   * a run queue (FIFO, home thread only),
//   * a timer heap on steady_clock ordered by (deadline, sequence), from
//     which a wait's entry leaves when the wait ends (timer_heap.hpp), fired
//     on ticks of runtime_config::timer_resolution_ns (1 ms, as tokio's),
//   * an inbox for wakes and spawns from other threads: a lock-free stack
//     of fibers (one compare-exchange a push, a batch one compare-exchange
//     too) that the home thread takes whole with one exchange and reverses,
//     so they run in the order they were pushed,
//   * parking when idle: a bounded spin on the inbox (a hand-off is
//     ~0.4 us spinning against ~10 us through a futex) that yields the CPU
//     every few rounds, then a condition variable until the next timer is
//     due. No work, no spinning.
//   * a gather window: while wakes from a thread outside the runtime wait
//     in its inbox, a core takes the inbox once a round, and waits 30 us
//     more before it does, so such a producer hands over a batch per wake
//     (scheduler.cpp, gather()).
//
// The free functions below are what the primitives use: they act on the
// calling thread's scheduler and its current fiber.
#pragma once

#include <boost/context/fiber.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fiber.hpp"
#include "lock.hpp"
#include "stack_pool.hpp"
#include "timer_heap.hpp"

namespace lockstep::threads::detail {

/// The allocator handed to boost::context::fiber: it hands over a stack
/// already taken from the pool (so a refusal never throws from inside
/// Boost's constructor, mid sanitizer switch) and gives it back to the pool.
struct pool_allocator {
  stack_pool* pool;
  boost::context::stack_context taken;
  boost::context::stack_context allocate() const { return taken; }
  void deallocate(boost::context::stack_context& s) noexcept { pool->deallocate(s); }
};

class scheduler {
 public:
  scheduler(runtime& rt, std::uint32_t core, std::size_t stack_bytes, std::size_t max_stacks,
            std::int64_t foreign_wake_gather_ns, std::int64_t timer_resolution_ns);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  /// Starts the thread; `pin_to` is the CPU to pin it to, if any, and
  /// `cpu_shared` says whether a sibling is pinned to the same one.
  void start(std::optional<int> pin_to, bool cpu_shared);
  /// Ends the loop once its queues are empty (the runtime calls this when no
  /// fiber is left anywhere) and joins the thread.
  void stop_and_join();

  /// Makes `f` (homed here) runnable; from any thread.
  void enqueue(fiber& f);
  /// Makes each of `fs[0..n)` (all homed here) runnable, in order, with one
  /// push onto the inbox; from another thread.
  void enqueue_remote(fiber* const* fs, std::size_t n);

  /// Asks the thread to cancel every fiber it lists (run()'s teardown); from
  /// any thread.
  void cancel_all();

  /// Parks the current fiber (see detail::suspend).
  wake_reason suspend(std::unique_lock<lock_t>* lock, std::optional<std::int64_t> deadline, wait_mode mode);
  /// Puts the current fiber at the back of the run queue.
  void yield();

  [[nodiscard]] std::uint32_t core() const { return core_; }
  [[nodiscard]] runtime& owner() const { return rt_; }
  [[nodiscard]] fiber* current() const { return current_; }
  /// How often an idle spin of this thread has yielded its CPU (see idle()).
  [[nodiscard]] std::uint64_t idle_yields() const { return idle_yields_.load(std::memory_order_relaxed); }
  /// How often this thread has waited out a gather window (gather()).
  [[nodiscard]] std::uint64_t foreign_gathers() const { return foreign_gathers_.load(std::memory_order_relaxed); }

  // The stall watchdog's side (runtime_config::stall_limit_ns); any thread.
  /// Fibers resumed on this core so far.
  [[nodiscard]] std::uint64_t resumes() const { return resumes_.load(std::memory_order_relaxed); }
  /// Whether a timed wait was pending when the core last went idle.
  [[nodiscard]] bool timers_pending() const { return timers_pending_.load(std::memory_order_relaxed); }
  /// Asks the core to describe its live fibers (a line each, with what it
  /// waits in); wait_report returns the text, or nullopt if the core did not
  /// write it by `until` (it is running a fiber that does not switch out).
  void request_report();
  [[nodiscard]] std::optional<std::string> wait_report(std::chrono::steady_clock::time_point until);
  /// The id of the fiber running on this core now (0: none).
  [[nodiscard]] std::uint64_t running_fiber() const { return running_id_.load(std::memory_order_relaxed); }

 private:
  void thread_main(std::optional<int> pin_to, bool cpu_shared);
  void loop();
  bool create(fiber& f);
  void make_context(fiber& f);  // on f.stack, taken from the pool
  void resume(fiber& f);
  void adopt(fiber& f);
  void sweep();
  const char* stack_top_of(const fiber& f, std::size_t new_ones_before) const;
  void warm_ahead(bool after_a_new_one);
  void finish(fiber& f);
  void switch_to_scheduler(fiber& f);
  void run_fiber(fiber& f);
  void drain_inbox();
  void fire_timers();
  void idle();
  void gather();
  void write_report();

  runtime& rt_;
  const std::uint32_t core_;
  stack_pool stacks_;
  std::thread thread_;
  std::deque<fiber*> run_;
  // Fibers that got no stack and wait for the pool's spare, to be dropped
  // unrun on it (see create); oldest first.
  std::deque<fiber*> starved_;
  timer_heap timers_;
  fiber* current_ = nullptr;
  std::size_t touched_ = 0;  // run_[0, touched_) had their stack pages read (warm_ahead)
  fiber* live_head_ = nullptr;  // this core's live fibers, from their first resume to their end
  bool own_cpu_ = false;  // pinned to a CPU no sibling is pinned to (set as it starts)
  std::atomic<std::uint64_t> idle_yields_{0};  // written by this thread only; read by tests
  const std::int64_t gather_ns_;  // runtime_config::foreign_wake_gather_ns
  const std::int64_t tick_ns_;    // runtime_config::timer_resolution_ns
  // The moment a timer due at `deadline` fires: the first tick at or after it.
  [[nodiscard]] std::int64_t fires_at(std::int64_t deadline) const;
  std::atomic<std::uint64_t> foreign_gathers_{0};  // written by this thread only; read by tests

  void push_inbox(fiber* first, fiber* last);
  // The inbox: pushed by any thread, taken by the home thread. Newest first.
  alignas(64) std::atomic<fiber*> inbox_{nullptr};
  // Set by a push from a thread that is not one of this runtime's schedulers
  // (on the inbox's line, which the push writes anyway), taken by idle().
  std::atomic<bool> foreign_push_{false};
  // Set with foreign_push_, taken by the loop when it gathers (gather()).
  std::atomic<bool> foreign_wake_{false};
  // Sleeping: a pusher that sees sleeping_ takes sleep_mu_ to notify, and the
  // sleeper holds sleep_mu_ from before it sets sleeping_ (and looks at the
  // inbox a last time) until the wait releases it, so no wake is lost.
  alignas(64) std::atomic<bool> sleeping_{false};
  std::mutex sleep_mu_;
  std::condition_variable wakeup_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sweep_{false};  // cancel_all asked; woken like a push
  std::atomic<bool> report_{false};  // request_report asked; woken like a push

  // The watchdog's reading: written by this thread (relaxed stores, no
  // read-modify-write), on a line of their own.
  alignas(64) std::atomic<std::uint64_t> resumes_{0};
  std::atomic<std::uint64_t> running_id_{0};
  std::atomic<bool> timers_pending_{false};
  std::mutex report_mu_;
  std::condition_variable report_written_;
  std::optional<std::string> report_text_;  // under report_mu_

  // The scheduler stack's sanitizer context and this thread's EH globals.
  const void* sched_bottom_ = nullptr;
  std::size_t sched_size_ = 0;
  void* sched_fake_ = nullptr;
  void* sched_tsan_ = nullptr;
  void* eh_ = nullptr;
};

/// The calling thread's scheduler; null off the runtime's threads. Declared
/// constinit so a read is one thread-local load, inline, with no TLS wrapper
/// call (every mutex lock reads it for its owner check).
extern constinit thread_local scheduler* tls_scheduler;

/// The calling thread's scheduler, or null off the runtime's threads.
inline scheduler* this_scheduler() { return tls_scheduler; }
/// The calling fiber, or null when not on a fiber.
inline fiber* this_fiber() { return tls_scheduler != nullptr ? tls_scheduler->current() : nullptr; }
/// steady_clock in integer ns.
std::int64_t steady_now();

/// Claims `f`'s current wait (any mode) and enqueues it on its home; false
/// when the wait was already claimed. Call it under the lock of the list the
/// fiber's waiter was taken from.
bool wake(fiber& f, wake_reason why);
/// Requests cancellation of `f` (once) and wakes it if it is parked at an
/// await point. From any thread.
void cancel(fiber& f);

/// Parks the current fiber until a waker claims its wait, the deadline
/// passes (the timer claims it), or — for a cancellable wait — cancellation.
/// `lock`, if given, is held on entry, released while parked and held again
/// on return. A cancellable wait of a fiber that must unwind returns
/// `cancelled` at once without parking. Throws std::logic_error off a fiber.
wake_reason suspend(std::unique_lock<lock_t>* lock, std::optional<std::int64_t> deadline, wait_mode mode);

/// True when the current fiber should leave its await point by unwinding:
/// cancellation was asked for, it has not been delivered yet, and no other
/// exception is in flight in this fiber (a second throw would terminate).
bool should_unwind();
/// Throws fiber_cancelled, marking it delivered.
[[noreturn]] void unwind();
inline void check_cancel() {
  if (should_unwind()) unwind();
}

/// The current fiber, or std::logic_error naming `what` (a wait off a fiber).
fiber& require_fiber(const char* what);

/// The calling fiber's wait record, cleared for a new wait; off a fiber,
/// std::logic_error naming `what` (so a wait needs no require_fiber of its own).
inline waiter& fresh_waiter(const char* what) {
  fiber* f = this_fiber();
  if (f == nullptr) [[unlikely]] f = &require_fiber(what);
  f->wait_node = waiter{};
  f->wait_what = what;
  return f->wait_node;
}

/// Registers `w` in `list`, parks (see suspend) and unregisters it again if
/// no waker did; `lock` guards `list` and is held on entry and on return.
inline wake_reason wait_on(std::unique_lock<lock_t>& lock, wait_list& list, waiter& w,
                           std::optional<std::int64_t> deadline, wait_mode mode) {
  w.self = this_fiber();
  list.push_back(w);
  const wake_reason why = suspend(&lock, deadline, mode);
  if (w.linked) list.unlink(w);
  return why;
}

/// Wakes the oldest waiter of `list` as the one chosen; false if none waits.
inline bool wake_one(wait_list& list) {
  waiter* w = list.pop_front();
  if (w == nullptr) return false;
  w->signal = waiter::one;
  wake(*w->self, wake_reason::notified);
  return true;
}
/// Wakes every waiter of `list`, as part of a broadcast. Fibers homed on
/// another thread are handed over in batches, one inbox push (and at most one
/// futex wake) per home and batch instead of one per fiber: a watch answering
/// 64 waiters spread over both cores paid 32 inbox round trips (issue 8).
void wake_all_listed(wait_list& list);
inline void wake_all(wait_list& list) {
  if (!list.empty()) wake_all_listed(list);  // most broadcasts find nobody: no call
}

}  // namespace lockstep::threads::detail
