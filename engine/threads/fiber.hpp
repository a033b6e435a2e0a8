// A fiber's record, and the intrusive list fibers wait in.
//
// A fiber belongs to one scheduler (its home thread) for its whole life: only
// that thread resumes it, so its stack, its contexts and the fields marked
// "home" are touched by one thread only. Other threads reach a fiber through
// three atomics:
//   waiting           the mode of the wait it is parked in (or none). A waker
//                     claims the wait by exchanging it to none; exactly one
//                     claim per wait succeeds, and only the winner enqueues the
//                     fiber on its home, so a fiber is never resumed twice.
//   cancel_requested  set once by task::cancel or the runtime's teardown.
//   finished          set (under `mu`, with the joiners woken) when it ended.
// A fiber parked at a wait is not resumed before it switched out: the wake
// goes to its home's inbox, and the home thread is busy running the fiber
// until it does. So registering, unlocking and switching need no extra care.
#pragma once

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lock.hpp"
#include "unique_function.hpp"

namespace lockstep::threads {
class runtime;
}

namespace lockstep::threads::detail {

class scheduler;
struct fiber;

enum class wake_reason : std::uint8_t { none, notified, timed_out, cancelled };

/// How a fiber waits: a cancellable wait is an await point; a plain one
/// (mutex::lock) is left only by the wake it waits for.
enum wait_mode : std::uint8_t { not_waiting = 0, cancellable = 1, uncancellable = 2 };

/// One wait, in the waiting fiber's record (fiber::wait_node). Wakers touch
/// it only under the lock of the primitive whose list holds it, and the
/// waiter re-takes that lock, and unlinks it, before its next wait.
struct waiter {
  fiber* self = nullptr;
  waiter* prev = nullptr;
  waiter* next = nullptr;
  bool linked = false;
  /// What the waker meant: 0 nothing yet, `one` chosen alone (a notify_one,
  /// a mutex hand-off, room in a channel), `all` part of a broadcast.
  std::uint8_t signal = 0;
  static constexpr std::uint8_t one = 1;
  static constexpr std::uint8_t all = 2;
};

/// FIFO of waiters; guarded by the owning primitive's lock.
class wait_list {
 public:
  wait_list() = default;
  wait_list(const wait_list&) = delete;
  wait_list& operator=(const wait_list&) = delete;

  [[nodiscard]] bool empty() const { return head_ == nullptr; }
  void push_back(waiter& w) {
    w.prev = tail_;
    w.next = nullptr;
    w.linked = true;
    (tail_ != nullptr ? tail_->next : head_) = &w;
    tail_ = &w;
  }
  void unlink(waiter& w) {
    (w.prev != nullptr ? w.prev->next : head_) = w.next;
    (w.next != nullptr ? w.next->prev : tail_) = w.prev;
    w.prev = w.next = nullptr;
    w.linked = false;
  }
  waiter* pop_front() {
    waiter* w = head_;
    if (w != nullptr) unlink(*w);
    return w;
  }

 private:
  waiter* head_ = nullptr;
  waiter* tail_ = nullptr;
};

struct fiber : std::enable_shared_from_this<fiber> {
  fiber(runtime& r, scheduler& h, std::string n, unique_function b)
      : rt(r), name(std::move(n)), body(std::move(b)), home(h) {}

  // Grouped by who writes them: set at the spawn, a waker's, the home
  // thread's, the live list's, set once.
  runtime& rt;
  std::string name;
  unique_function body;  // moved onto the fiber's own stack when it starts

  // What a waker touches: its wait record, the claim, the reason, the home
  // and the inbox link.
  scheduler& home;
  /// The record of its current wait (the fiber is in at most one). Kept
  /// here, not on the fiber's stack: a broadcast to tens of thousands of
  /// parked fibers walks their records, allocated one after another, instead
  /// of one stack page each (a TLB miss and a cache miss per fiber).
  waiter wait_node;
  std::atomic<std::uint8_t> waiting{not_waiting};
  wake_reason reason = wake_reason::none;  // written by the wake's winner before it enqueues
  std::atomic<bool> cancel_requested{false};
  std::atomic<bool> finished{false};
  fiber* inbox_next = nullptr;  // its link in its home's inbox (see scheduler::enqueue)

  // Home thread only.
  bool started = false;
  bool done = false;       // its entry returned (or is returning)
  bool unwinding = false;  // fiber_cancelled was thrown: never throw it twice
  bool no_stack = false;   // the pool had no stack for it: dropped unrun on the spare
  /// The primitive of its latest wait ("notify::notified", "sleep_until"),
  /// for the stall report (runtime_config::stall_limit_ns).
  const char* wait_what = nullptr;
  std::size_t timer_slot = no_timer;  // its place in its home's timer_heap, while a timed wait is pending
  static constexpr std::size_t no_timer = ~std::size_t{0};
  boost::context::fiber cont;    // resumes the fiber (held while it is suspended)
  boost::context::fiber caller;  // resumes the scheduler (held while it runs)
  // The C++ ABI keeps the caught-exception stack and uncaught count per
  // thread; a fiber may suspend inside a catch block, so each keeps its own.
  void* eh_caught = nullptr;
  unsigned int eh_uncaught = 0;
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
  // Near the stack pointer it last switched out at: where its resume will
  // read and write first (see scheduler::warm_ahead).
  const void* parked_sp = nullptr;

  // Its link in its home's list of live fibers (home only), and the
  // runtime's reference to it, dropped when it ends.
  std::shared_ptr<fiber> live_self;
  fiber* live_prev = nullptr;
  fiber* live_next = nullptr;
  detail::lock_t mu;  // guards joiners (and the finish that wakes them)
  wait_list joiners;

  // Set once, then read.
  boost::context::stack_context stack{};  // by its home, when it starts
  std::uint64_t id = 0;  // from 1 in spawn order, run-wide; set before it is first enqueued
};

}  // namespace lockstep::threads::detail
