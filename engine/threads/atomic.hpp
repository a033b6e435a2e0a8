// R::atomic<T> on the threads backend: std::atomic, sequentially consistent,
// as the seam promises (engine code never picks a weaker order).
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

  T load() const { return v_.load(); }
  void store(T v) { v_.store(v); }
  T exchange(T v) { return v_.exchange(v); }
  /// On failure `expected` receives the current value. A value that already
  /// differs fails on a plain load: a failed seq_cst compare-exchange is a
  /// seq_cst load, and the load spares the locked instruction (the single-flight
  /// slot's losing transition takes this path on every cycle).
  bool compare_exchange(T& expected, T desired) {
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T> || std::is_pointer_v<T>) {
      const T now = v_.load();
      if (now != expected) {  // these compare as their bits do, as the exchange would
        expected = now;
        return false;
      }
    }
    return v_.compare_exchange_strong(expected, desired);
  }
  T fetch_add(T d) { return v_.fetch_add(d); }
  T fetch_sub(T d) { return v_.fetch_sub(d); }

 private:
  std::atomic<T> v_;
};

}  // namespace lockstep::threads
