// std::atomic<T> and std::atomic_flag, simulated: every operation is a
// scheduling point, and the C++ memory model decides what a load may read
// (sim/memory_model.hpp): a relaxed or acquire load may read an older store
// than the newest, where coherence and happens-before allow, so the
// message-passing bug with a missing release, store buffering and the
// relaxed double-checked lock are found as wrong values. Until a run's first
// operation weaker than seq_cst (and always with run_config::seq_cst_only)
// every load reads the newest store and nothing is kept but the value.
// What the orders order is also what the race detector sees: a relaxed
// flag does not order the lockstep::var writes before it.
// compare_exchange_weak may fail spuriously, as the standard allows: a
// decision the strategy draws and the record keeps. Read-modify-writes and
// compare-exchanges (failed ones too) read the newest store.
#pragma once

#include <atomic>  // determinism-rules: allow (std::memory_order, which sim_std::atomic takes and models)
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <type_traits>

#include "../executor.hpp"
#include "../memory_model.hpp"
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

using sim::acquires;
using sim::releases;

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
    if (plain(o)) return value_;
    if (sim::memory_model* m = model(o)) return value_at(m->load(history_, me(), o));
    ordered_load(o);
    return value_;
  }
  operator T() const { return load(); }  // NOLINT(google-explicit-constructor): as std::atomic
  void store(T v, memory_order o = memory_order_seq_cst, site where = site()) {
    touch("atomic.store", where);
    if (plain(o)) {
      value_ = v;
    } else if (sim::memory_model* m = model(o)) {
      m->store(history_, me(), o, &v);
      value_ = value_at(history_.size() - 1);  // unchanged when it went before the newest
    } else {
      ordered_store(o);
      value_ = v;
    }
    ex_->wake_all(waiters_, false);
  }
  T operator=(T v) {  // NOLINT: returns T, as std::atomic's does
    store(v);
    return v;
  }
  T exchange(T v, memory_order o = memory_order_seq_cst, site where = site()) {
    touch("atomic.exchange", where);
    T old = value_;
    modify(o, v);
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
    return compare_exchange_strong(expected, desired, order, sim::failure_order(order), where);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success, memory_order failure,
                             site where = site()) {
    touch("atomic.compare_exchange_weak", where);
    if (ex_->choose(2, "weak_cas_fails") == 1) {  // a spurious failure: nothing stored
      load_newest(failure, success);
      expected = value_;
      return false;
    }
    return swap_if(expected, desired, success, failure);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order order = memory_order_seq_cst,
                             site where = site()) {
    return compare_exchange_weak(expected, desired, order, sim::failure_order(order), where);
  }
  /// Blocks while the value equals `old` (C++20 atomic waiting): returns
  /// only once a store changed it, as std's does.
  void wait(T old, memory_order o = memory_order_seq_cst, site where = site()) const {
    touch("atomic.wait", where);
    while (value_ == old) {
      ex_->block("atomic.wait", key_, &waiters_, std::nullopt, true);
      ex_->touch(key_);
    }
    load_newest(o, o);  // the load that saw the value change
  }
  // Stores wake every waiter themselves (a waiter re-checks the value), so a
  // notify is only a scheduling point; it never loses a wake-up a store made.
  void notify_one(site where = site()) { touch("atomic.notify_one", where); }
  void notify_all(site where = site()) { touch("atomic.notify_all", where); }

 protected:
  explicit atomic_base(T v) : ex_(&running("atomic", site())), key_(ex_->next_atomic_key()), value_(v) {}
  void touch(const char* op, const site& where) const {
    at(*ex_, op, where);
    ex_->schedule_point(key_);
    ex_->touch(key_);
  }
  bool swap_if(T& expected, T desired, memory_order success, memory_order failure) {
    if (value_ == expected) {
      modify(success, desired, failure);
      return true;
    }
    load_newest(failure, success);
    expected = value_;
    return false;
  }
  template <class F>
  T read_modify_write(const char* op, const site& where, memory_order o, F f) {
    touch(op, where);
    T old = value_;
    modify(o, f(old));
    return old;
  }

  sim::fiber_id me() const { return ex_->current().id; }
  /// Nothing but the value matters: seq_cst, and neither the model nor the
  /// race detector running (the model starts the detector's clocks). One
  /// test on the path every all-seq_cst program takes.
  bool plain(memory_order o, memory_order other = memory_order_seq_cst) const {
    return ex_->clocks() == nullptr && o == memory_order_seq_cst && other == memory_order_seq_cst;
  }
  /// The memory model, seeded with this atomic's value, when the run has
  /// one: started by the first operation weaker than seq_cst (`o` or
  /// `other`, a compare-exchange's other order); null while every load reads
  /// the newest store.
  sim::memory_model* model(memory_order o, memory_order other = memory_order_seq_cst) const {
    sim::memory_model* m = ex_->memory();
    if (m == nullptr) {
      if (o == memory_order_seq_cst && other == memory_order_seq_cst) return nullptr;
      m = ex_->start_memory_model();
      if (m == nullptr) return nullptr;  // seq_cst_only
    }
    m->seed(history_, &value_, key_);
    return m;
  }
  T value_at(std::size_t i) const {
    std::array<std::byte, sizeof(T)> bytes;
    std::memcpy(bytes.data(), history_.value(i), sizeof(T));
    return std::bit_cast<T>(bytes);
  }
  /// A read-modify-write: reads the newest store, writes `v` after it.
  void modify(memory_order o, T v, memory_order other = memory_order_seq_cst) {
    if (plain(o, other)) {
      // nothing to order or keep
    } else if (sim::memory_model* m = model(o, other)) {
      m->modify(history_, me(), o, &v);
    } else {
      ordered_modify(o);
    }
    value_ = v;
    ex_->wake_all(waiters_, false);
  }
  /// A load of the newest store (a compare-exchange that failed, a wait that ended).
  void load_newest(memory_order o, memory_order other) const {
    if (plain(o, other)) return;
    if (sim::memory_model* m = model(o, other)) {
      m->load_newest(history_, me(), o);
    } else {
      ordered_load(o);
    }
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
  T value_;  // the newest store's
  mutable sim::store_history history_{sizeof(T)};  // empty until the model starts
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

/// std::atomic_thread_fence: a scheduling point. An acquire fence orders the
/// thread after the releases its earlier relaxed loads read from, a release
/// fence lets its later relaxed stores publish what it did before the fence,
/// and a seq_cst fence also makes visible what earlier seq_cst fences covered
/// (memory_model.hpp); the race detector sees the same orders.
inline void atomic_thread_fence(memory_order o, detail::site where = detail::site()) {
  sim::executor& ex = detail::running("atomic_thread_fence", where);
  detail::at(ex, "atomic_thread_fence", where);
  ex.schedule_point();
  const sim::fiber_id me = ex.current().id;
  // A seq_cst fence matters only beside weaker operations: it starts nothing.
  if (sim::memory_model* m = o == memory_order_seq_cst ? ex.memory() : ex.start_memory_model()) {
    m->fence(me, o);
    return;
  }
  sim::happens_before* hb = ex.clocks();
  if (hb == nullptr) return;
  if (detail::acquires(o)) hb->acquire_fence(me);
  if (detail::releases(o)) hb->release_fence(me);
}
/// std::atomic_signal_fence: within one thread; orders nothing between threads.
inline void atomic_signal_fence(memory_order) noexcept {}

}  // namespace lockstep::sim_std
