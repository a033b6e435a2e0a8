// R::atomic<T> on the threads backend: std::atomic, sequentially consistent,
// as the seam promises (engine code never picks a weaker order).
#pragma once

#include <atomic>

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
  /// On failure `expected` receives the current value.
  bool compare_exchange(T& expected, T desired) { return v_.compare_exchange_strong(expected, desired); }
  T fetch_add(T d) { return v_.fetch_add(d); }
  T fetch_sub(T d) { return v_.fetch_sub(d); }

 private:
  std::atomic<T> v_;
};

}  // namespace lockstep::threads
