// threads_std::var<T>: lockstep::var's surface (sim/std/var.hpp) over a plain
// T, so code that marks its shared memory with var for the simulator builds
// on the threads backend too. Nothing is checked here: on real threads a var
// is plain memory, and a race on it is a real data race.
#pragma once

#include <utility>

namespace lockstep::threads_std {

template <class T>
class var {
 public:
  var() : value_{} {}
  explicit var(T v) : value_(std::move(v)) {}
  /// A name, which the simulator puts in race reports.
  var(T v, const char* /*name*/) : value_(std::move(v)) {}
  var(const var& o) = default;
  var& operator=(const var& o) = default;

  T load() const { return value_; }
  void store(T v) { value_ = std::move(v); }
  operator T() const { return value_; }  // NOLINT(google-explicit-constructor): as sim_std::var
  var& operator=(T v) {
    value_ = std::move(v);
    return *this;
  }
  var& operator+=(const T& d) { return value_ += d, *this; }
  var& operator-=(const T& d) { return value_ -= d, *this; }
  var& operator*=(const T& d) { return value_ *= d, *this; }
  var& operator/=(const T& d) { return value_ /= d, *this; }
  var& operator%=(const T& d) { return value_ %= d, *this; }
  var& operator&=(const T& d) { return value_ &= d, *this; }
  var& operator|=(const T& d) { return value_ |= d, *this; }
  var& operator^=(const T& d) { return value_ ^= d, *this; }
  var& operator++() { return ++value_, *this; }
  var& operator--() { return --value_, *this; }
  T operator++(int) { return value_++; }
  T operator--(int) { return value_--; }

 private:
  T value_;
};

}  // namespace lockstep::threads_std
