// std::atomic<T> and std::atomic_flag, simulated: every operation is a
// scheduling point. Values are sequentially consistent: every load reads the
// latest store, so bugs that need a load to read an older value are not found
// (issue: the C++ memory model in the simulator). What the memory_order
// orders is honoured by the race detector, though: a relaxed flag does not
// order the lockstep::var writes before it, so the message-passing bug with
// a missing release or acquire is reported as a data race on the var (as
// are the fences: atomic_thread_fence below).
// compare_exchange_weak may fail spuriously, as the standard allows: a
// decision the strategy draws and the record keeps.
#pragma once

#include <atomic>  // determinism-rules: allow (std::memory_order, which sim_std::atomic takes and does not model)
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../executor.hpp"
#include "context.hpp"

namespace lockstep::sim_std {

using std::memory_order;
using std::memory_order_acq_rel;
using std::memory_order_acquire;
using std::memory_order_consume;
using std::memory_order_relaxed;
using std::memory_order_release;
using std::memory_order_seq_cst;

namespace detail {

constexpr bool acquires(memory_order o) {
  return o == memory_order_acquire || o == memory_order_consume || o == memory_order_acq_rel ||
         o == memory_order_seq_cst;
}
constexpr bool releases(memory_order o) {
  return o == memory_order_release || o == memory_order_acq_rel || o == memory_order_seq_cst;
}

/// Operations every atomic has, whatever T is.
template <class T>
class atomic_base {
 public:
  using value_type = T;
  static constexpr bool is_always_lock_free = true;

  atomic_base(const atomic_base&) = delete;
  atomic_base& operator=(const atomic_base&) = delete;

  [[nodiscard]] bool is_lock_free() const noexcept { return true; }
  T load(memory_order o = memory_order_seq_cst, site where = site()) const {
    touch("atomic.load", where);
    ordered_load(o);
    return value_;
  }
  operator T() const { return load(); }  // NOLINT(google-explicit-constructor): as std::atomic
  void store(T v, memory_order o = memory_order_seq_cst, site where = site()) {
    touch("atomic.store", where);
    ordered_store(o);
    value_ = v;
    ex_->wake_all(waiters_, false);
  }
  T operator=(T v) {  // NOLINT: returns T, as std::atomic's does
    store(v);
    return v;
  }
  T exchange(T v, memory_order o = memory_order_seq_cst, site where = site()) {
    touch("atomic.exchange", where);
    ordered_modify(o);
    T old = value_;
    value_ = v;
    ex_->wake_all(waiters_, false);
    return old;
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order success, memory_order failure,
                             site where = site()) {
    touch("atomic.compare_exchange_strong", where);
    return swap_if(expected, desired, success, failure);
  }
  /// The one-order form: a failure orders as `order` does, without its release.
  bool compare_exchange_strong(T& expected, T desired, memory_order order = memory_order_seq_cst,
                             site where = site()) {
    return compare_exchange_strong(expected, desired, order, failure_order(order), where);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success, memory_order failure,
                             site where = site()) {
    touch("atomic.compare_exchange_weak", where);
    if (ex_->choose(2, "weak_cas_fails") == 1) {  // a spurious failure: nothing stored
      ordered_load(failure);
      expected = value_;
      return false;
    }
    return swap_if(expected, desired, success, failure);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order order = memory_order_seq_cst,
                             site where = site()) {
    return compare_exchange_weak(expected, desired, order, failure_order(order), where);
  }
  /// Blocks while the value equals `old` (C++20 atomic waiting): returns
  /// only once a store changed it, as std's does.
  void wait(T old, memory_order o = memory_order_seq_cst, site where = site()) const {
    touch("atomic.wait", where);
    while (value_ == old) {
      ex_->block("atomic.wait", key_, &waiters_, std::nullopt, true);
      ex_->touch(key_);
    }
    ordered_load(o);  // the load that saw the value change
  }
  // Stores wake every waiter themselves (a waiter re-checks the value), so a
  // notify is only a scheduling point; it never loses a wake-up a store made.
  void notify_one(site where = site()) { touch("atomic.notify_one", where); }
  void notify_all(site where = site()) { touch("atomic.notify_all", where); }

 protected:
  explicit atomic_base(T v) : ex_(&running("atomic", site())), key_(ex_->next_atomic_key()), value_(v) {}
  void touch(const char* op, const site& where) const {
    at(*ex_, op, where);
    ex_->schedule_point();
    ex_->touch(key_);
  }
  bool swap_if(T& expected, T desired, memory_order success, memory_order failure) {
    if (value_ == expected) {
      ordered_modify(success);
      value_ = desired;
      ex_->wake_all(waiters_, false);
      return true;
    }
    ordered_load(failure);
    expected = value_;
    return false;
  }
  static constexpr memory_order failure_order(memory_order o) {
    return o == memory_order_acq_rel ? memory_order_acquire : o == memory_order_release ? memory_order_relaxed : o;
  }
  template <class F>
  T read_modify_write(const char* op, const site& where, memory_order o, F f) {
    touch(op, where);
    ordered_modify(o);
    T old = value_;
    value_ = f(old);
    ex_->wake_all(waiters_, false);
    return old;
  }

  // The race detector's view of each operation (nothing when it is off).
  void ordered_load(memory_order o) const {
    sim::happens_before* hb = ex_->clocks();
    if (hb == nullptr) return;
    const sim::fiber_id me = ex_->current().id;
    if (acquires(o)) {
      hb->acquire(me, key_);
    } else {
      hb->relaxed_load(me, key_);
    }
  }
  void ordered_store(memory_order o) {
    sim::happens_before* hb = ex_->clocks();
    if (hb == nullptr) return;
    const sim::fiber_id me = ex_->current().id;
    if (releases(o)) {
      hb->release(me, key_);  // heads a new release sequence
    } else {
      hb->relaxed_store(me, key_);
    }
  }
  void ordered_modify(memory_order o) {  // a read-modify-write continues the release sequence
    ordered_load(o);
    sim::happens_before* hb = ex_->clocks();
    if (hb == nullptr) return;
    const sim::fiber_id me = ex_->current().id;
    if (releases(o)) {
      hb->release_merge(me, key_);
    } else {
      hb->relaxed_modify(me, key_);
    }
  }

  sim::executor* ex_;
  std::uint64_t key_;
  T value_;
  mutable sim::wait_queue waiters_;
};

}  // namespace detail

/// std::atomic<T>: any trivially copyable T; the arithmetic members for
/// integers, floating point and pointers, the bitwise ones for integers.
template <class T>
class atomic : public detail::atomic_base<T> {
  using base = detail::atomic_base<T>;

 public:
  static_assert(std::is_trivially_copyable_v<T>, "atomic<T> requires a trivially copyable T, as the standard does");
  atomic() : base(T{}) {}
  atomic(T v) : base(v) {}  // NOLINT(google-explicit-constructor): as std::atomic
  using base::operator=;

  template <class U = T, class = std::enable_if_t<std::is_integral_v<U> || std::is_floating_point_v<U>>>
  T fetch_add(U d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_add", where, o, [d](T v) { return static_cast<T>(v + d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U> || std::is_floating_point_v<U>>>
  T fetch_sub(U d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_sub", where, o, [d](T v) { return static_cast<T>(v - d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_and(U d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_and", where, o, [d](T v) { return static_cast<T>(v & d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_or(U d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_or", where, o, [d](T v) { return static_cast<T>(v | d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_xor(U d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_xor", where, o, [d](T v) { return static_cast<T>(v ^ d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator++() { return static_cast<T>(fetch_add(1) + 1); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator++(int) { return fetch_add(1); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator--() { return static_cast<T>(fetch_sub(1) - 1); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator--(int) { return fetch_sub(1); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U> || std::is_floating_point_v<U>>>
  T operator+=(U d) { return static_cast<T>(fetch_add(d) + d); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U> || std::is_floating_point_v<U>>>
  T operator-=(U d) { return static_cast<T>(fetch_sub(d) - d); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator&=(U d) { return static_cast<T>(fetch_and(d) & d); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator|=(U d) { return static_cast<T>(fetch_or(d) | d); }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T operator^=(U d) { return static_cast<T>(fetch_xor(d) ^ d); }
};

template <class T>
class atomic<T*> : public detail::atomic_base<T*> {
  using base = detail::atomic_base<T*>;

 public:
  atomic() : base(nullptr) {}
  atomic(T* v) : base(v) {}  // NOLINT(google-explicit-constructor): as std::atomic
  using base::operator=;
  T* fetch_add(std::ptrdiff_t d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_add", where, o, [d](T* v) { return v + d; });
  }
  T* fetch_sub(std::ptrdiff_t d, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_sub", where, o, [d](T* v) { return v - d; });
  }
  T* operator++() { return fetch_add(1) + 1; }
  T* operator++(int) { return fetch_add(1); }
  T* operator--() { return fetch_sub(1) - 1; }
  T* operator--(int) { return fetch_sub(1); }
  T* operator+=(std::ptrdiff_t d) { return fetch_add(d) + d; }
  T* operator-=(std::ptrdiff_t d) { return fetch_sub(d) - d; }
};

/// std::atomic_flag: clear on construction (C++20), test_and_set, wait.
class atomic_flag {
 public:
  atomic_flag() = default;
  atomic_flag(const atomic_flag&) = delete;
  atomic_flag& operator=(const atomic_flag&) = delete;
  bool test_and_set(memory_order o = memory_order_seq_cst, detail::site where = detail::site()) {
    return flag_.exchange(true, o, where);
  }
  bool test(memory_order o = memory_order_seq_cst, detail::site where = detail::site()) const {
    return flag_.load(o, where);
  }
  void clear(memory_order o = memory_order_seq_cst, detail::site where = detail::site()) { flag_.store(false, o, where); }
  void wait(bool old, memory_order o = memory_order_seq_cst, detail::site where = detail::site()) const {
    flag_.wait(old, o, where);
  }
  void notify_one() { flag_.notify_one(); }
  void notify_all() { flag_.notify_all(); }

 private:
  atomic<bool> flag_;
};

/// std::atomic_thread_fence: a scheduling point; for the race detector, an
/// acquire fence orders the thread after the releases its earlier relaxed
/// loads read from, and a release fence lets its later relaxed stores publish
/// what it did before the fence.
inline void atomic_thread_fence(memory_order o, detail::site where = detail::site()) {
  sim::executor& ex = detail::running("atomic_thread_fence", where);
  detail::at(ex, "atomic_thread_fence", where);
  ex.schedule_point();
  sim::happens_before* hb = ex.clocks();
  if (hb == nullptr) return;
  const sim::fiber_id me = ex.current().id;
  if (detail::acquires(o)) hb->acquire_fence(me);
  if (detail::releases(o)) hb->release_fence(me);
}
/// std::atomic_signal_fence: within one thread; orders nothing between threads.
inline void atomic_signal_fence(memory_order) noexcept {}

}  // namespace lockstep::sim_std
