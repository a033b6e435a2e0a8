// lockstep::var<T>: plain shared memory that lockstep can see. Every read
// and write is a scheduling point and is checked by the happens-before race
// detector (sim/race_detector.hpp): two accesses of different threads, one
// a write, that no lock, atomic release/acquire, fence, thread start or join
// orders, fail the run as a data race, naming both lines and each thread's
// last operations. A plain `int` (or a real std::atomic) is invisible to
// lockstep: only what goes through a var (or the other sim_std types) is.
//
//   lockstep::var<int> hits{0, "hits"};
//   hits += 1;                  // a read and a write, both at this line
//   int n = hits.load();        // a read at this line
//
// Lines: load() and store() and the assignment operators record the
// caller's line; a read by conversion (`int n = hits;`) and ++/-- cannot
// (an operator takes no default argument), so reports name them by the
// thread's neighbouring operations.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "../race_detector.hpp"
#include "context.hpp"

namespace lockstep::sim_std {

namespace detail {
/// A value with the line that supplied it: the assignment operators take
/// one, its converting constructor's default argument is the caller's line.
template <class T>
struct located {
  located(T v, site w = site()) : value(std::move(v)), where(w) {}  // NOLINT(google-explicit-constructor)
  T value;
  site where;
};
inline site unknown_line() { return site(nullptr, 0); }
}  // namespace detail

template <class T>
class var {
 public:
  /// Value-initialised (0 for arithmetic types), created at the caller's line.
  var(detail::site created = detail::site()) : var(T{}, nullptr, created) {}  // NOLINT
  /// Explicit, so that `v = 3` means the assignment below (with its line).
  explicit var(T v, detail::site created = detail::site()) : var(std::move(v), nullptr, created) {}
  /// Named in reports ("var 'hits' created at ...").
  var(T v, const char* name, detail::site created = detail::site())
      : cell_(detail::running("var", created), created, name != nullptr ? std::string(name) : std::string()),
        value_(std::move(v)) {}
  /// A copy reads `o`, and is a new location.
  var(const var& o, detail::site created = detail::site()) : var(o.load(created), nullptr, created) {}
  var& operator=(const var& o) {
    if (this != &o) store(o.load(detail::unknown_line()), detail::unknown_line());
    return *this;
  }

  T load(detail::site where = detail::site()) const {
    cell_.read(where);
    return value_;
  }
  void store(T v, detail::site where = detail::site()) {
    cell_.write(where);
    value_ = std::move(v);
  }
  operator T() const { return load(detail::unknown_line()); }  // NOLINT(google-explicit-constructor)
  var& operator=(detail::located<T> v) {
    store(std::move(v.value), v.where);
    return *this;
  }
  var& operator+=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x += y; }); }
  var& operator-=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x -= y; }); }
  var& operator*=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x *= y; }); }
  var& operator/=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x /= y; }); }
  var& operator%=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x %= y; }); }
  var& operator&=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x &= y; }); }
  var& operator|=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x |= y; }); }
  var& operator^=(detail::located<T> d) { return modify(d, [](T& x, const T& y) { x ^= y; }); }
  var& operator++() { return modify(detail::located<T>(T(1), detail::unknown_line()), [](T& x, const T&) { ++x; }); }
  var& operator--() { return modify(detail::located<T>(T(1), detail::unknown_line()), [](T& x, const T&) { --x; }); }
  T operator++(int) {
    const T old = load(detail::unknown_line());
    store(T(old + 1), detail::unknown_line());
    return old;
  }
  T operator--(int) {
    const T old = load(detail::unknown_line());
    store(T(old - 1), detail::unknown_line());
    return old;
  }

 private:
  // A compound assignment is a read and then a write, each a scheduling
  // point, as the machine code of `x += d` on a plain int is.
  template <class F>
  var& modify(const detail::located<T>& d, F f) {
    T x = load(d.where);
    f(x, d.value);
    store(std::move(x), d.where);
    return *this;
  }

  mutable sim::shadow_cell cell_;
  T value_;
};

}  // namespace lockstep::sim_std

namespace lockstep {
/// Plain shared memory under the race detector: see sim/std/var.hpp.
using sim_std::var;
}  // namespace lockstep
