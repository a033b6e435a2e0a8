// std::condition_variable and std::condition_variable_any on the threads
// backend: a wait parks the calling fiber (not its OS thread), so the other
// fibers of its core go on running. The standard's semantics: a notify with
// nobody waiting is lost (wait_point.hpp). Real spurious wake-ups do not
// happen here; the simulator (lockstep::sim_std) offers them as a choice.
// A wait is an await point: the runtime's teardown cancels it, and the lock
// is taken again before fiber_cancelled leaves the wait.
#pragma once

#include <chrono>
#include <condition_variable>  // std::cv_status
#include <cstdint>
#include <mutex>
#include <optional>

#include "chrono.hpp"
#include "mutex.hpp"
#include "wait_point.hpp"

namespace lockstep::threads_std {

using std::cv_status;

namespace detail {

template <class Lock>
class condition_of {
 public:
  condition_of() = default;
  /// A name, for code that also builds against lockstep::sim_std (which puts it in reports).
  explicit condition_of(const char* /*name*/) {}
  condition_of(const condition_of&) = delete;
  condition_of& operator=(const condition_of&) = delete;

  void notify_one() noexcept { point_.notify_one(); }
  void notify_all() noexcept { point_.notify_all(); }

  template <class L>
  void wait(L& lock) {
    wait_on(lock, std::nullopt);
  }
  template <class L, class Predicate>
  void wait(L& lock, Predicate pred) {
    while (!pred()) wait_on(lock, std::nullopt);
  }
  template <class L, class Duration>
  cv_status wait_until(L& lock, const std::chrono::time_point<std::chrono::steady_clock, Duration>& t) {
    return wait_on(lock, deadline_at(t));
  }
  template <class L, class Duration, class Predicate>
  bool wait_until(L& lock, const std::chrono::time_point<std::chrono::steady_clock, Duration>& t, Predicate pred) {
    return wait_pred(lock, deadline_at(t), pred);
  }
  template <class L, class Rep, class Period>
  cv_status wait_for(L& lock, const std::chrono::duration<Rep, Period>& d) {
    return wait_on(lock, deadline_in(d));
  }
  template <class L, class Rep, class Period, class Predicate>
  bool wait_for(L& lock, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
    return wait_pred(lock, deadline_in(d), pred);
  }

 private:
  template <class L, class Predicate>
  bool wait_pred(L& lock, std::int64_t deadline, Predicate& pred) {
    while (!pred()) {
      if (wait_on(lock, deadline) == cv_status::timeout) return pred();
    }
    return true;
  }

  /// Releases `lock`, waits for a notify or the deadline, and takes `lock`
  /// again on every way out (fiber_cancelled included).
  template <class L>
  cv_status wait_on(L& lock, std::optional<std::int64_t> deadline) {
    struct relock {
      L& lock;
      bool armed = false;
      ~relock() {
        if (armed) lock.lock();
      }
    } again{lock};
    const waited w = point_.wait(
        "condition_variable::wait",
        [&again] {
          again.lock.unlock();
          again.armed = true;
          return true;
        },
        deadline);
    return w == waited::timed_out ? cv_status::timeout : cv_status::no_timeout;
  }

  wait_point point_;
};

}  // namespace detail

/// Waits with a std::unique_lock<threads_std::mutex>, as std's does with std::mutex.
using condition_variable = detail::condition_of<std::unique_lock<mutex>>;
/// Waits with any lock (lock() and unlock()).
using condition_variable_any = detail::condition_of<void>;

}  // namespace lockstep::threads_std
