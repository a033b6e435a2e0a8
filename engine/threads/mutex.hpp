// R::mutex on the threads backend. lock() first spins briefly on a mutex
// that looks free (critical sections here are a few hundred ns, and a park
// costs a cross-thread wake: ~10 us through a futex against ~0.4 us spinning,
// issue 8), then parks the calling fiber (not its thread). unlock() frees the
// mutex and wakes the oldest parked waiter, which then competes for it again:
// a spinner may take it first (barging, as std::mutex and parking_lot allow).
// An earlier version handed the mutex to the oldest waiter instead; under
// contention from both threads that formed a convoy — every acquisition a
// cross-thread hand-off — and held 64,000 single-flight waiters to ~0.1 M
// answers/s (results/threads.md). No engine code relies on FIFO order.
// lock() is not an await point: cancellation never interrupts it, so
// destructors may take it. Off a fiber (a plain thread, after run()), lock()
// spins with yields.
#pragma once

#include <atomic>
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
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    detail::fiber* me = detail::this_fiber();
    for (int i = 0; i < spin_rounds; ++i) {
      if (!busy_.load(std::memory_order_relaxed) && try_lock()) return;
      relax();
    }
    std::unique_lock<std::mutex> hold(mu_);
    while (locked_) {
      if (me == nullptr) {
        hold.unlock();
        while (!try_lock()) std::this_thread::yield();
        return;
      }
      if (owner_ == me) throw std::logic_error("mutex locked twice by the same fiber (self-deadlock)");
      detail::waiter w;
      // Woken by an unlock: look again (someone may have taken it meanwhile).
      detail::wait_on(hold, waiters_, w, std::nullopt, detail::uncancellable);
    }
    set_locked(true);
    owner_ = me;
  }

  bool try_lock() {
    std::lock_guard<std::mutex> hold(mu_);
    if (locked_) return false;
    set_locked(true);
    owner_ = detail::this_fiber();
    return true;
  }

  void unlock() {
    std::lock_guard<std::mutex> hold(mu_);
    set_locked(false);
    owner_ = nullptr;
    detail::wake_one(waiters_);
  }

 private:
  // About 2-4 us: longer than the critical sections it waits out, shorter
  // than the futex wake a park would cost.
  static constexpr int spin_rounds = 64;
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  void set_locked(bool v) {  // under mu_
    locked_ = v;
    busy_.store(v, std::memory_order_relaxed);
  }

  std::mutex mu_;  // held for a few instructions, never across a park
  bool locked_ = false;
  std::atomic<bool> busy_{false};  // locked_, readable without mu_: only a hint for spinners
  detail::fiber* owner_ = nullptr;
  detail::wait_list waiters_;
};

}  // namespace lockstep::threads
