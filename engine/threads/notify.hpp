// R::notify on the threads backend (tokio semantics): notify_one() hands one
// notification to the oldest waiter or, with nobody waiting, stores a single
// permit; notify_waiters() wakes the current waiters and stores nothing. A
// waiter that is handed a notification and then cancelled passes it on (to
// the next waiter, else as the permit), so a notify_one is never lost.
// A notify must outlive the fibers waiting on it.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

class notify {
 public:
  explicit notify(runtime& /*rt*/) {}
  notify(const notify&) = delete;
  notify& operator=(const notify&) = delete;

  /// Wakes the oldest waiter, or stores one permit if nobody waits.
  void notify_one() { signal(); }
  /// notify_one, named as the channels use it (on arrival and at the end).
  void signal() {
    std::lock_guard<detail::lock_t> hold(mu_);
    signal_locked();
  }
  /// Wakes every current waiter; stores nothing for later ones.
  void notify_waiters() {
    std::lock_guard<detail::lock_t> hold(mu_);
    detail::wake_all(waiters_);
  }
  /// Await point until notified.
  void notified() { (void)wait(std::nullopt); }
  /// Await point until notified (true) or until `deadline_ns` on steady_clock (false).
  bool notified_until(std::int64_t deadline_ns) { return wait(deadline_ns); }

 private:
  void signal_locked() {
    if (!detail::wake_one(waiters_)) permit_ = true;
  }

  bool wait(std::optional<std::int64_t> deadline) {
    detail::require_fiber("notify::notified");
    std::unique_lock<detail::lock_t> hold(mu_);
    if (permit_) {
      permit_ = false;
      return true;
    }
    detail::waiter& w = detail::fresh_waiter("notify::notified");
    while (w.signal == 0) {
      if (deadline && detail::steady_now() >= *deadline) return false;
      detail::wait_on(hold, waiters_, w, deadline, detail::cancellable);
      if (detail::should_unwind()) {
        if (w.signal == detail::waiter::one) signal_locked();  // not ours to keep
        detail::unwind();
      }
    }
    return true;
  }

  detail::lock_t mu_;
  bool permit_ = false;
  detail::wait_list waiters_;
};

}  // namespace lockstep::threads
