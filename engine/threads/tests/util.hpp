// Helpers shared by the threads-backend tests.
#pragma once

#include <atomic>

#include "engine/threads/runtime.hpp"

namespace lockstep::threads::testing {

/// Yields until `t`'s fiber is parked at a wait. This is how a test knows a
/// fiber really blocked before another wakes it: synchronization on the
/// fiber's observable state, never a sleep.
inline void until_parked(runtime& rt, const runtime::task& t) {
  while (!t.is_waiting()) rt.yield_now();
}

/// Counts its destructions, to check that an unwind ran each destructor once.
struct dtor_counter {
  std::atomic<int>* count;
  explicit dtor_counter(std::atomic<int>& c) : count(&c) {}
  dtor_counter(const dtor_counter&) = delete;
  dtor_counter& operator=(const dtor_counter&) = delete;
  ~dtor_counter() { count->fetch_add(1); }
};

}  // namespace lockstep::threads::testing
