// The state behind threads_std's blocking types other than mutex (timed and
// recursive mutexes, shared mutexes, semaphores, latches, barriers): a small
// lock around the type's state and a wait_point where fibers wait for that
// state to change. Every change wakes every waiter, which looks again: these
// types serve tests, where simple beats fast.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "../mutex.hpp"
#include "../scheduler.hpp"
#include "wait_point.hpp"

namespace lockstep::threads_std::detail {

class monitor {
 public:
  /// Calls `take()` under the lock until it returns true (then true), or
  /// until `deadline` (steady_clock ns) has passed (then false, after a last
  /// try). A fiber parks between tries; a thread outside the runtime yields.
  template <class Take>
  bool acquire(const char* what, Take take, std::optional<std::int64_t> deadline = std::nullopt) {
    std::unique_lock<threads::mutex> hold(m_);
    while (!take()) {
      if (deadline && td::steady_now() >= *deadline) return false;
      if (td::this_fiber() == nullptr) {
        hold.unlock();
        std::this_thread::yield();
      } else {
        changed_.wait(
            what,
            [&hold] {
              hold.unlock();
              return true;
            },
            deadline);
      }
      hold.lock();
    }
    return true;
  }
  /// Calls `change()` under the lock and wakes every waiter to look again;
  /// returns what `change()` returned.
  template <class Change>
  auto update(Change change) {
    std::unique_lock<threads::mutex> hold(m_);
    struct wake_after {
      wait_point& p;
      ~wake_after() { p.notify_all(); }
    } wake{changed_};
    return change();
  }
  /// Calls `f()` under the lock and wakes no one: a look at the state, or a
  /// try that takes without freeing anything (try_lock, try_acquire).
  template <class F>
  auto under_lock(F f) {
    std::lock_guard<threads::mutex> hold(m_);
    return f();
  }

 private:
  threads::mutex m_;
  wait_point changed_;
};

/// Who holds a recursive or timed mutex: the calling fiber, or (off a fiber) the OS thread.
struct holder {
  const void* fiber = nullptr;
  std::thread::id thread;
  static holder caller() { return holder{td::this_fiber(), std::this_thread::get_id()}; }
  friend bool operator==(const holder&, const holder&) = default;
};

}  // namespace lockstep::threads_std::detail
