// R::mutex on the threads backend. One atomic word holds the lock (0 free,
// 1 held, 2 held and a fiber may be parked on it), so an uncontended
// lock/unlock pair is one compare-exchange and one exchange — before, both
// went through an inner std::mutex, four atomic read-modify-writes for the
// pair on a line the other core also touches. lock() then spins briefly on a
// mutex that looks free (critical sections here are a few hundred ns, and a
// park costs a cross-thread wake: ~10 us through a futex against ~0.4 us
// spinning, issue 8), then parks the calling fiber (not its thread). An
// unlock that finds 2 wakes the oldest parked waiter, which then competes for
// the mutex again: a spinner may take it first (barging, as std::mutex and
// parking_lot allow). An earlier version handed the mutex to the oldest
// waiter instead; under contention from both threads that formed a convoy —
// every acquisition a cross-thread hand-off — and held 64,000 single-flight
// waiters to ~0.1 M answers/s (results/threads.md). No engine code relies on
// FIFO order. lock() is not an await point: cancellation never interrupts
// it, so destructors may take it. Off a fiber (a plain thread, after run()),
// lock() spins with yields.
//
// No lost wake: a parker sets 2 with an exchange under mu_ and stays in the
// list until woken; an unlock that reads 2 takes mu_ before waking, so it
// either finds the parker listed or the parker's exchange already saw 0.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

class mutex {
 public:
  explicit mutex(runtime& /*rt*/) {}
  /// Needs no runtime (threads_std::mutex, which std code creates anywhere).
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    detail::fiber* me = detail::this_fiber();
    if (acquire_free()) {
      owner_.store(me, std::memory_order_relaxed);
      return;
    }
    // Only this fiber ever stores itself here, and clears it before
    // unlocking, so reading itself means it holds the mutex.
    if (me != nullptr && owner_.load(std::memory_order_relaxed) == me) {
      throw std::logic_error("mutex locked twice by the same fiber (self-deadlock)");
    }
    for (int i = 0; i < spin_rounds; ++i) {
      if (state_.load(std::memory_order_relaxed) == free_ && acquire_free()) {
        owner_.store(me, std::memory_order_relaxed);
        return;
      }
      relax();
    }
    if (me == nullptr) {
      while (!try_lock()) std::this_thread::yield();
      return;
    }
    std::unique_lock<detail::lock_t> hold(mu_);
    // Taken with 2, not 1: another fiber may still be parked behind us.
    while (state_.exchange(contended, std::memory_order_acquire) != free_) {
      detail::waiter& w = detail::fresh_waiter("mutex::lock");
      // Woken by an unlock: look again (someone may have taken it meanwhile).
      detail::wait_on(hold, waiters_, w, std::nullopt, detail::uncancellable);
    }
    owner_.store(me, std::memory_order_relaxed);
  }

  bool try_lock() {
    if (!acquire_free()) return false;
    owner_.store(detail::this_fiber(), std::memory_order_relaxed);
    return true;
  }

  /// True when the calling fiber holds it (off a fiber: when it was taken off one).
  [[nodiscard]] bool held_by_caller() const {
    return state_.load(std::memory_order_relaxed) != free_ &&
           owner_.load(std::memory_order_relaxed) == detail::this_fiber();
  }
  /// A snapshot: someone holds it.
  [[nodiscard]] bool is_locked() const { return state_.load(std::memory_order_relaxed) != free_; }

  void unlock() {
    owner_.store(nullptr, std::memory_order_relaxed);
    if (state_.exchange(free_, std::memory_order_release) == contended) {
      std::lock_guard<detail::lock_t> hold(mu_);
      detail::wake_one(waiters_);
    }
  }

 private:
  static constexpr std::uint8_t free_ = 0;
  static constexpr std::uint8_t held = 1;
  static constexpr std::uint8_t contended = 2;
  // About 2-4 us: longer than the critical sections it waits out, shorter
  // than the futex wake a park would cost.
  static constexpr int spin_rounds = 64;
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  bool acquire_free() {
    std::uint8_t expected = free_;
    return state_.compare_exchange_strong(expected, held, std::memory_order_acquire, std::memory_order_relaxed);
  }

  std::atomic<std::uint8_t> state_{free_};
  std::atomic<detail::fiber*> owner_{nullptr};  // the holder, for the self-deadlock check only
  detail::lock_t mu_;  // guards waiters_; held for a few instructions, never across a park
  detail::wait_list waiters_;
};

}  // namespace lockstep::threads
