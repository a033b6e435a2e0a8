// A bounded connection pool, written once against lockstep's Runtime concept:
// the example consumer's own concurrent structure. Clients acquire() one of a
// fixed set of connections, waiting while none is idle, and release() it.
//
// Invariant: every connection is either idle (in idle_) or held by exactly one
// client; acquire() never returns a connection that is held.
//
// The planted bug (EXAMPLE_PLANTED_BUG=1): release() wakes only the clients
// already waiting (notify_waiters) instead of leaving a permit (notify_one).
// A client that found the pool empty and let go of the lock, but has not yet
// started waiting, then misses the wake-up and waits forever: a lost wake-up,
// which the simulator reports as a deadlock naming the blocked fibers.
#pragma once

#include <lockstep/engine/runtime.hpp>

#include <cstddef>
#include <mutex>
#include <vector>

#ifndef EXAMPLE_PLANTED_BUG
#define EXAMPLE_PLANTED_BUG 0
#endif

namespace example {

template <lockstep::Runtime R>
class connection_pool {
 public:
  /// A pool of `size` connections, numbered 0 .. size-1.
  connection_pool(R& rt, std::size_t size) : mutex_(rt), freed_(rt) {
    for (std::size_t i = 0; i < size; ++i) idle_.push_back(static_cast<int>(i));
  }

  /// Suspends until a connection is idle, and takes it.
  int acquire() {
    for (;;) {
      {
        std::lock_guard<typename R::mutex> hold(mutex_);
        if (!idle_.empty()) {
          const int c = idle_.back();
          idle_.pop_back();
          return c;
        }
      }
      // Between the unlock above and this wait a release may come: the
      // permit notify_one leaves is what makes that safe.
      freed_.notified();
    }
  }

  /// Returns a connection taken by acquire().
  void release(int connection) {
    {
      std::lock_guard<typename R::mutex> hold(mutex_);
      idle_.push_back(connection);
    }
    if constexpr (EXAMPLE_PLANTED_BUG != 0) {
      freed_.notify_waiters();  // the bug: nobody waiting yet means nobody is told
    } else {
      freed_.notify_one();
    }
  }

  /// Idle connections now (for tests).
  std::size_t idle() {
    std::lock_guard<typename R::mutex> hold(mutex_);
    return idle_.size();
  }

 private:
  typename R::mutex mutex_;
  typename R::notify freed_;
  std::vector<int> idle_;  // guarded by mutex_
};

}  // namespace example
