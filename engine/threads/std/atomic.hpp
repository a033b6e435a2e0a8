// std::atomic<T> and std::atomic_flag on the threads backend: the standard's
// own atomics (every member and operator, the same orders), with wait and
// notify_one / notify_all that park the calling fiber rather than its OS
// thread (std's futex wait would stall every fiber of the core). A thread
// outside the runtime waits by yielding its CPU.
#pragma once

#include <atomic>
#include <cstring>
#include <optional>
#include <thread>
#include <type_traits>

#include "../scheduler.hpp"
#include "wait_point.hpp"

namespace lockstep::threads_std {

using std::memory_order;
using std::memory_order_acq_rel;
using std::memory_order_acquire;
using std::memory_order_consume;
using std::memory_order_relaxed;
using std::memory_order_release;
using std::memory_order_seq_cst;
using std::atomic_signal_fence;
using std::atomic_thread_fence;
using std::kill_dependency;

namespace detail {

/// Waits while `unchanged()` holds, parked at `point` between looks.
template <class Unchanged>
void wait_while(wait_point& point, const char* what, Unchanged unchanged) {
  if (td::this_fiber() == nullptr) {
    while (unchanged()) std::this_thread::yield();
    return;
  }
  while (unchanged()) {
    // The look under the point's list: a notify after it finds us listed.
    bool changed = false;
    point.wait(
        what,
        [&] {
          changed = !unchanged();
          return !changed;
        },
        std::nullopt);
    if (changed) return;
  }
}

/// The standard compares value representations, not operator==.
template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(static_cast<const void*>(&a), static_cast<const void*>(&b), sizeof(T)) == 0;
}

}  // namespace detail

template <class T>
class atomic : public std::atomic<T> {
  using base = std::atomic<T>;

 public:
  atomic() noexcept(std::is_nothrow_default_constructible_v<T>) = default;
  constexpr atomic(T desired) noexcept : base(desired) {}  // NOLINT(google-explicit-constructor): as std::atomic
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;
  atomic& operator=(const atomic&) volatile = delete;
  using base::operator=;

  void wait(T old, memory_order order = memory_order_seq_cst) const {
    detail::wait_while(points_, "atomic::wait", [&] { return detail::same_bits(base::load(order), old); });
  }
  void notify_one() noexcept { points_.notify_one(); }
  void notify_all() noexcept { points_.notify_all(); }

 private:
  mutable detail::wait_point points_;
};

class atomic_flag : public std::atomic_flag {
 public:
  atomic_flag() noexcept = default;
  atomic_flag(const atomic_flag&) = delete;
  atomic_flag& operator=(const atomic_flag&) = delete;

  void wait(bool old, memory_order order = memory_order_seq_cst) const {
    detail::wait_while(points_, "atomic_flag::wait", [&] { return test(order) == old; });
  }
  void notify_one() noexcept { points_.notify_one(); }
  void notify_all() noexcept { points_.notify_all(); }

 private:
  mutable detail::wait_point points_;
};

}  // namespace lockstep::threads_std
