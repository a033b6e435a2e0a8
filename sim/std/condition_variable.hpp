// std::condition_variable and std::condition_variable_any, simulated with the
// standard's semantics, not tokio's Notify: a notify with nobody waiting is
// lost (no permit is kept), and a wait may return without any notify (a
// spurious wake-up). Whether a wait wakes spuriously is a decision the
// strategy draws (executor::choose) and the record keeps, so a wait that is
// not in a loop re-checking its condition is found and replays exactly.
// A spurious wake-up returns at once: the waiter releases the lock, lets
// others run, takes the lock again and returns. Drawn at the wait's start,
// it stands for one at any later moment: until the waiter runs again the
// schedule may run everyone else for as long as it likes, and the only
// thing a still-queued waiter could change (taking a notify_one) is the
// history where that notify woke it. notify_one wakes whichever waiter the
// strategy draws, as the standard leaves open which one: code that counts on
// the oldest waiter waking first is found.
#pragma once

#include <chrono>
#include <condition_variable>  // std::cv_status
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "../executor.hpp"
#include "chrono.hpp"
#include "context.hpp"
#include "mutex.hpp"

namespace lockstep::sim_std {

using std::cv_status;

namespace detail {

/// The waiting part, over any lock with lock() and unlock().
class condition_core {
 public:
  condition_core(const condition_core&) = delete;
  condition_core& operator=(const condition_core&) = delete;

  void notify_one(site where) {
    at(*ex_, "condition_variable.notify_one", where);
    ex_->schedule_point(id_);
    ex_->touch(id_);
    ex_->wake_chosen(waiters_, "notify_one_wakes", false);  // any waiter, not the oldest
  }
  void notify_all(site where) {
    at(*ex_, "condition_variable.notify_all", where);
    ex_->schedule_point(id_);
    ex_->touch(id_);
    ex_->wake_all(waiters_, false);
  }

 protected:
  condition_core(const site& created, const char* name)
      : ex_(&running("condition_variable", created)), id_(ex_->next_object_id()) {
    label(*ex_, id_, "condition_variable", name, created);
  }

  /// Releases `lock`, waits for a notify (or the deadline, or a spurious
  /// wake-up), takes `lock` again on every way out (an unwind included).
  template <class Lock>
  cv_status wait_on(Lock& lock, std::optional<std::int64_t> deadline, const site& where) {
    sim::executor& ex = *ex_;
    at(ex, "condition_variable.wait", where);
    ex.schedule_point(id_);
    ex.touch(id_);
    struct relock {
      Lock& lock;
      ~relock() { lock.lock(); }
    };
    const bool spurious = ex.choose(2, "spurious_wakeup") == 1;
    lock.unlock();
    relock again{lock};
    if (spurious) {
      ex.yield_now();
      return cv_status::no_timeout;
    }
    if (deadline && ex.now() >= *deadline) {
      ex.yield_now();
      return cv_status::timeout;
    }
    const sim::wake_reason r = ex.block("condition_variable.wait", id_, &waiters_, deadline, true);
    return r == sim::wake_reason::timed_out ? cv_status::timeout : cv_status::no_timeout;
  }

  sim::executor* ex_;
  std::uint64_t id_;
  sim::wait_queue waiters_;
};

template <class Lock>
class condition_of : public condition_core {
 public:
  explicit condition_of(site created = site()) : condition_core(created, nullptr) {}
  /// Named in reports: "condition_variable 'not_empty' created at queue.hpp:20".
  explicit condition_of(const char* name, site created = site()) : condition_core(created, name) {}
  void notify_one(site where = site()) { condition_core::notify_one(where); }
  void notify_all(site where = site()) { condition_core::notify_all(where); }

  template <class L>
  void wait(L& lock, site where = site()) {
    wait_on(lock, std::nullopt, where);
  }
  template <class L, class Predicate>
  void wait(L& lock, Predicate pred, site where = site()) {
    while (!pred()) wait_on(lock, std::nullopt, where);
  }
  template <class L, class Duration>
  cv_status wait_until(L& lock, const std::chrono::time_point<chrono::steady_clock, Duration>& t,
                       site where = site()) {
    return wait_on(lock, deadline_at(t), where);
  }
  template <class L, class Duration, class Predicate>
  bool wait_until(L& lock, const std::chrono::time_point<chrono::steady_clock, Duration>& t, Predicate pred,
                  site where = site()) {
    const std::int64_t deadline = deadline_at(t);
    while (!pred()) {
      if (wait_on(lock, deadline, where) == cv_status::timeout) return pred();
    }
    return true;
  }
  template <class L, class Rep, class Period>
  cv_status wait_for(L& lock, const std::chrono::duration<Rep, Period>& d, site where = site()) {
    return wait_on(lock, deadline_in(*ex_, d), where);
  }
  template <class L, class Rep, class Period, class Predicate>
  bool wait_for(L& lock, const std::chrono::duration<Rep, Period>& d, Predicate pred, site where = site()) {
    const std::int64_t deadline = deadline_in(*ex_, d);
    while (!pred()) {
      if (wait_on(lock, deadline, where) == cv_status::timeout) return pred();
    }
    return true;
  }
};

}  // namespace detail

/// Waits with a std::unique_lock<sim_std::mutex>, as std's does with std::mutex.
using condition_variable = detail::condition_of<unique_lock<mutex>>;
/// Waits with any lock (lock() and unlock()).
using condition_variable_any = detail::condition_of<void>;

}  // namespace lockstep::sim_std
