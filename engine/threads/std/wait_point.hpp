// A place where fibers wait until told, with the standard's semantics rather
// than tokio's Notify: a notify with nobody waiting is lost (no permit), as
// for std::condition_variable and std::atomic::wait. The condition variables
// and the atomics' wait/notify of threads_std are built on it.
//
// No lost wake-up: a waiter lists itself under the point's lock before it
// lets go of what it waits on (the caller's mutex, or its last look at an
// atomic's value), and parks only if it is still listed when it takes the
// lock again. A notifier takes the waiter off the list under that lock, so
// it either finds the waiter listed (and wakes it, or finds it has not
// parked yet and will not) or comes after the waiter saw the change.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "../fiber.hpp"
#include "../lock.hpp"
#include "../scheduler.hpp"

namespace lockstep::threads_std::detail {

namespace td = threads::detail;

/// How a wait at a wait_point ended.
enum class waited : std::uint8_t { notified, timed_out };

class wait_point {
 public:
  wait_point() = default;
  wait_point(const wait_point&) = delete;
  wait_point& operator=(const wait_point&) = delete;

  void notify_one() noexcept {
    std::lock_guard<td::lock_t> hold(mu_);
    td::wake_one(waiters_);
  }
  void notify_all() noexcept {
    std::lock_guard<td::lock_t> hold(mu_);
    td::wake_all(waiters_);
  }

  /// Lists the calling fiber, calls `release()` (which lets go of what the
  /// caller waits on, and returns false when it saw that there is nothing
  /// to wait for after all), then parks until a notify or `deadline`
  /// (steady_clock ns). An await point: under the runtime's teardown it throws
  /// fiber_cancelled, after passing on a notify_one it was handed. `what`
  /// names the wait in the stall watchdog's report. Off a fiber it throws
  /// std::logic_error (before calling release).
  template <class Release>
  waited wait(const char* what, Release&& release, std::optional<std::int64_t> deadline) {
    td::fiber* const self = &td::require_fiber(what);  // refuses off a fiber
    // Its own record, not the fiber's: release() may park the fiber on
    // another primitive (condition_variable_any's lock may be a shared_mutex,
    // whose unlock can wait for its inner lock), which reuses the fiber's
    // record while this one is listed here. A notify that lands meanwhile
    // only cuts that other wait short (each primitive looks again when woken).
    td::waiter w;
    w.self = self;
    {
      std::lock_guard<td::lock_t> hold(mu_);
      waiters_.push_back(w);
    }
    const bool still = release();
    self->wait_what = what;  // for the stall report, whatever release() waited in
    std::unique_lock<td::lock_t> hold(mu_);
    td::wake_reason why = td::wake_reason::notified;
    if (w.linked && still) why = td::suspend(&hold, deadline, td::cancellable);
    if (w.linked) waiters_.unlink(w);
    // Handed a notify_one: it counts, whatever else ended the wait.
    const bool chosen = w.signal != 0;
    if (why == td::wake_reason::cancelled || td::should_unwind()) {
      if (w.signal == td::waiter::one) td::wake_one(waiters_);  // not ours to keep
      hold.unlock();
      td::unwind();
    }
    return chosen || why == td::wake_reason::notified ? waited::notified : waited::timed_out;
  }

 private:
  td::lock_t mu_;
  td::wait_list waiters_;
};

}  // namespace lockstep::threads_std::detail
