// std::atomic<T> and std::atomic_flag, simulated: every operation is a
// scheduling point. Sequentially consistent: a memory_order is accepted and
// not modelled (every load reads the latest store), so bugs that need a
// weaker order are not found (issue: the C++ memory model in the simulator).
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

/// Operations every atomic has, whatever T is.
template <class T>
class atomic_base {
 public:
  using value_type = T;
  static constexpr bool is_always_lock_free = true;

  atomic_base(const atomic_base&) = delete;
  atomic_base& operator=(const atomic_base&) = delete;

  [[nodiscard]] bool is_lock_free() const noexcept { return true; }
  T load(memory_order = memory_order_seq_cst, site where = site()) const { return touch("atomic.load", where), value_; }
  operator T() const { return load(); }  // NOLINT(google-explicit-constructor): as std::atomic
  void store(T v, memory_order = memory_order_seq_cst, site where = site()) {
    touch("atomic.store", where);
    value_ = v;
    ex_->wake_all(waiters_);
  }
  T operator=(T v) {  // NOLINT: returns T, as std::atomic's does
    store(v);
    return v;
  }
  T exchange(T v, memory_order = memory_order_seq_cst, site where = site()) {
    touch("atomic.exchange", where);
    T old = value_;
    value_ = v;
    ex_->wake_all(waiters_);
    return old;
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order = memory_order_seq_cst,
                               memory_order = memory_order_seq_cst, site where = site()) {
    touch("atomic.compare_exchange_strong", where);
    return swap_if(expected, desired);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order = memory_order_seq_cst,
                             memory_order = memory_order_seq_cst, site where = site()) {
    touch("atomic.compare_exchange_weak", where);
    if (ex_->choose(2, "weak_cas_fails") == 1) {  // a spurious failure: nothing stored
      expected = value_;
      return false;
    }
    return swap_if(expected, desired);
  }
  /// Blocks while the value equals `old` (C++20 atomic waiting): returns
  /// only once a store changed it, as std's does.
  void wait(T old, memory_order = memory_order_seq_cst, site where = site()) const {
    touch("atomic.wait", where);
    while (value_ == old) {
      ex_->block("atomic.wait", key_, &waiters_, std::nullopt, true);
      ex_->access(key_);
    }
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
    ex_->access(key_);
  }
  bool swap_if(T& expected, T desired) {
    if (value_ == expected) {
      value_ = desired;
      ex_->wake_all(waiters_);
      return true;
    }
    expected = value_;
    return false;
  }
  template <class F>
  T read_modify_write(const char* op, const site& where, F f) {
    touch(op, where);
    T old = value_;
    value_ = f(old);
    ex_->wake_all(waiters_);
    return old;
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
  T fetch_add(U d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_add", where, [d](T v) { return static_cast<T>(v + d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U> || std::is_floating_point_v<U>>>
  T fetch_sub(U d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_sub", where, [d](T v) { return static_cast<T>(v - d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_and(U d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_and", where, [d](T v) { return static_cast<T>(v & d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_or(U d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_or", where, [d](T v) { return static_cast<T>(v | d); });
  }
  template <class U = T, class = std::enable_if_t<std::is_integral_v<U>>>
  T fetch_xor(U d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_xor", where, [d](T v) { return static_cast<T>(v ^ d); });
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
  T* fetch_add(std::ptrdiff_t d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_add", where, [d](T* v) { return v + d; });
  }
  T* fetch_sub(std::ptrdiff_t d, memory_order = memory_order_seq_cst, detail::site where = detail::site()) {
    return this->read_modify_write("atomic.fetch_sub", where, [d](T* v) { return v - d; });
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
  bool test_and_set(memory_order = memory_order_seq_cst) { return flag_.exchange(true); }
  bool test(memory_order = memory_order_seq_cst) const { return flag_.load(); }
  void clear(memory_order = memory_order_seq_cst) { flag_.store(false); }
  void wait(bool old, memory_order = memory_order_seq_cst) const { flag_.wait(old); }
  void notify_one() { flag_.notify_one(); }
  void notify_all() { flag_.notify_all(); }

 private:
  atomic<bool> flag_;
};

}  // namespace lockstep::sim_std
