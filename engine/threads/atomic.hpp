// R::atomic<T> on the threads backend: std::atomic, with the order each
// operation names (seq_cst by default, as the seam says). The simulator
// models the same orders (sim/memory_model.hpp), so an order too weak for
// the engine's code is found there before it misbehaves here.
#pragma once

#include <atomic>
#include <type_traits>

namespace lockstep::threads {

class runtime;

template <class T>
class atomic {
 public:
  atomic(runtime& /*rt*/, T initial) : v_(initial) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  using order = std::memory_order;
  static constexpr order sc = std::memory_order_seq_cst;

  T load(order o = sc) const { return v_.load(o); }
  void store(T v, order o = sc) { v_.store(v, o); }
  T exchange(T v, order o = sc) { return v_.exchange(v, o); }
  /// On failure `expected` receives the current value. A value that already
  /// differs fails on a plain load: a failed compare-exchange is a load (of
  /// the failure order `o` implies), and the load spares the locked
  /// instruction (the single-flight slot's losing transition takes this path
  /// on every cycle).
  bool compare_exchange(T& expected, T desired, order o = sc) {
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
      const T now = v_.load(failure_order(o));
      if (now != expected) {  // these compare as their bits do, as the exchange would
        expected = now;
        return false;
      }
    }
    return v_.compare_exchange_strong(expected, desired, o, failure_order(o));
  }
  T fetch_add(T d, order o = sc) { return v_.fetch_add(d, o); }
  T fetch_sub(T d, order o = sc) { return v_.fetch_sub(d, o); }

 private:
  static constexpr order failure_order(order o) {
    return o == std::memory_order_acq_rel ? std::memory_order_acquire
           : o == std::memory_order_release ? std::memory_order_relaxed
                                             : o;
  }

  std::atomic<T> v_;
};

}  // namespace lockstep::threads
