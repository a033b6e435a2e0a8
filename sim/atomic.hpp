// A simulated sequentially consistent atomic: every operation is a scheduling
// point, so fibers on other cores interleave between any two of them.
#pragma once

#include "executor.hpp"

namespace lockstep::sim {

template <class T>
class atomic {
 public:
  atomic(executor& ex, T initial) : ex_(ex), key_(ex.next_atomic_key()), value_(initial) {}
  template <class R>
  atomic(R& rt, T initial) : atomic(rt.exec(), initial) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  T load() {
    ex_.schedule_point();
    ex_.access(key_);
    return value_;
  }
  void store(T v) {
    ex_.schedule_point();
    ex_.access(key_);
    value_ = v;
  }
  T exchange(T v) {
    ex_.schedule_point();
    ex_.access(key_);
    T old = value_;
    value_ = v;
    return old;
  }
  /// On failure `expected` receives the current value, as std::atomic does.
  bool compare_exchange(T& expected, T desired) {
    ex_.schedule_point();
    ex_.access(key_);
    if (value_ == expected) {
      value_ = desired;
      return true;
    }
    expected = value_;
    return false;
  }
  T fetch_add(T d) {
    ex_.schedule_point();
    ex_.access(key_);
    T old = value_;
    value_ = static_cast<T>(value_ + d);
    return old;
  }
  T fetch_sub(T d) {
    ex_.schedule_point();
    ex_.access(key_);
    T old = value_;
    value_ = static_cast<T>(value_ - d);
    return old;
  }

 private:
  executor& ex_;
  std::uint64_t key_;  // its identity for a search that reorders by what steps touch
  T value_;
};

}  // namespace lockstep::sim
