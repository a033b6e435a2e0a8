// R::mutex on the threads backend. Contended, lock() parks the calling fiber
// (not its thread) in FIFO order, and unlock() hands the mutex to the oldest
// waiter: the waiter owns it before it runs, so no newcomer barges past it.
// (Hand-off trades throughput under heavy contention — a convoy — for no
// starvation and the same order the simulator gives.) lock() is not an await
// point: cancellation never interrupts it, so destructors may take it.
// Off a fiber (a plain thread, after run()), lock() spins with yields.
#pragma once

#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/threads/fiber.hpp"
#include "engine/threads/scheduler.hpp"

namespace lockstep::threads {

class runtime;

class mutex {
 public:
  explicit mutex(runtime& /*rt*/) {}
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    detail::fiber* me = detail::this_fiber();
    std::unique_lock<std::mutex> hold(mu_);
    if (!locked_) {
      locked_ = true;
      owner_ = me;
      return;
    }
    if (me == nullptr) {
      hold.unlock();
      while (!try_lock()) std::this_thread::yield();
      return;
    }
    if (owner_ == me) throw std::logic_error("mutex locked twice by the same fiber (self-deadlock)");
    detail::waiter w;
    // Only unlock() claims this wait, and it hands us the mutex as it does.
    while (w.signal == 0) detail::wait_on(hold, waiters_, w, std::nullopt, detail::uncancellable);
  }

  bool try_lock() {
    std::lock_guard<std::mutex> hold(mu_);
    if (locked_) return false;
    locked_ = true;
    owner_ = detail::this_fiber();
    return true;
  }

  void unlock() {
    std::lock_guard<std::mutex> hold(mu_);
    detail::waiter* next = waiters_.pop_front();
    if (next == nullptr) {
      locked_ = false;
      owner_ = nullptr;
      return;
    }
    owner_ = next->self;
    next->signal = detail::waiter::one;
    detail::wake(*next->self, detail::wake_reason::notified);
  }

 private:
  std::mutex mu_;  // held for a few instructions, never across a park
  bool locked_ = false;
  detail::fiber* owner_ = nullptr;
  detail::wait_list waiters_;
};

}  // namespace lockstep::threads
