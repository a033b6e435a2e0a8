// std's mutexes, locks and call_once on the threads backend. A contended lock
// parks the calling fiber, not its OS thread, so the other fibers of its core
// go on running (a real std::mutex held across a park would stall the core).
// mutex is the backend's own (threads::mutex: barging, spins briefly, then
// parks); the timed and recursive ones are monitors (monitor.hpp). Misuse the
// standard leaves undefined — unlocking a mutex the caller does not hold,
// destroying a locked one — ends the process with a line naming the fiber.
// lock_guard, unique_lock, scoped_lock, std::lock and std::try_lock are the
// standard's own: they only call lock(), try_lock() and unlock().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>

#include "../mutex.hpp"
#include "chrono.hpp"
#include "context.hpp"
#include "monitor.hpp"

namespace lockstep::threads_std {

using std::adopt_lock;
using std::adopt_lock_t;
using std::defer_lock;
using std::defer_lock_t;
using std::lock;
using std::lock_guard;
using std::scoped_lock;
using std::try_lock;
using std::try_to_lock;
using std::try_to_lock_t;
using std::unique_lock;

class mutex {
 public:
  mutex() = default;
  /// A name, for code that also builds against lockstep::sim_std (which puts it in reports).
  explicit mutex(const char* /*name*/) {}
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  ~mutex() {
    if (m_.is_locked()) detail::misuse("a mutex was destroyed while locked");
  }
  void lock() { m_.lock(); }
  bool try_lock() { return m_.try_lock(); }
  void unlock() {
    if (!m_.held_by_caller()) detail::misuse("a mutex was unlocked by a caller that does not hold it");
    m_.unlock();
  }

 private:
  threads::mutex m_;
};

namespace detail {

/// A mutex as a monitor: Recursive lets its holder take it again (and
/// counts), Timed adds try_lock_for and try_lock_until.
template <bool Recursive, bool Timed>
class monitor_mutex {
 public:
  monitor_mutex() = default;
  explicit monitor_mutex(const char* /*name*/) {}
  monitor_mutex(const monitor_mutex&) = delete;
  monitor_mutex& operator=(const monitor_mutex&) = delete;
  ~monitor_mutex() {
    if (depth_ != 0) misuse(std::string("a ") + kind() + " was destroyed while locked");
  }
  void lock() { state_.acquire(kind(), [this] { return take(); }); }
  bool try_lock() {
    return state_.under_lock([this] { return take(); });
  }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d)
    requires Timed
  {
    return state_.acquire(kind(), [this] { return take(); }, deadline_in(d));
  }
  template <class Duration>
  bool try_lock_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t)
    requires Timed
  {
    return state_.acquire(kind(), [this] { return take(); }, deadline_at(t));
  }
  void unlock() {
    const bool held = state_.update([this] {
      if (depth_ == 0 || !(owner_ == holder::caller())) return false;
      if (--depth_ == 0) owner_ = holder{};
      return true;
    });
    if (!held) misuse(std::string("a ") + kind() + " was unlocked by a caller that does not hold it");
  }

 private:
  static constexpr const char* kind() {
    if constexpr (Recursive) return Timed ? "recursive_timed_mutex" : "recursive_mutex";
    return "timed_mutex";
  }
  bool take() {
    const holder me = holder::caller();
    if (depth_ == 0) {
      owner_ = me;
      depth_ = 1;
      return true;
    }
    if constexpr (Recursive) {
      if (owner_ == me) {
        ++depth_;
        return true;
      }
    }
    return false;
  }
  monitor state_;
  holder owner_;
  std::uint64_t depth_ = 0;
};

}  // namespace detail

using recursive_mutex = detail::monitor_mutex<true, false>;
using timed_mutex = detail::monitor_mutex<false, true>;
using recursive_timed_mutex = detail::monitor_mutex<true, true>;

/// std::once_flag: call_once runs one callable to completion (one that throws
/// leaves it unset, and the next caller tries), every other caller waits.
class once_flag {
 public:
  once_flag() = default;
  once_flag(const once_flag&) = delete;
  once_flag& operator=(const once_flag&) = delete;

 private:
  template <class F, class... Args>
  friend void call_once(once_flag& flag, F&& f, Args&&... args);
  std::atomic<bool> done_{false};
  mutex running_;
};

template <class F, class... Args>
void call_once(once_flag& flag, F&& f, Args&&... args) {
  if (flag.done_.load(std::memory_order_acquire)) return;
  std::lock_guard<mutex> hold(flag.running_);
  if (flag.done_.load(std::memory_order_relaxed)) return;
  std::invoke(std::forward<F>(f), std::forward<Args>(args)...);
  flag.done_.store(true, std::memory_order_release);
}

}  // namespace lockstep::threads_std
