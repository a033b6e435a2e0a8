// A simulated atomic for the engine's seam (R::atomic<T>): every operation is
// a scheduling point, so fibers on other cores interleave between any two of
// them. Each operation takes a std::memory_order, seq_cst by default, as the
// threads backend's std::atomic does. seq_cst operations, while the run has
// no memory model going, read and write one value, as they always have; an
// operation weaker than seq_cst starts the C++ memory model
// (memory_model.hpp), and from then on every operation of every atomic goes
// through it, so a relaxed load may read an older store and the race
// detector sees what the orders order, exactly as for sim_std::atomic.
#pragma once

#include <array>
#include <atomic>  // determinism-rules: allow (std::memory_order names the orders; nothing here is a real atomic)
#include <bit>
#include <cstring>

#include "executor.hpp"
#include "memory_model.hpp"

namespace lockstep::sim {

template <class T>
class atomic {
 public:
  using order = std::memory_order;
  static constexpr order sc = std::memory_order_seq_cst;

  atomic(executor& ex, T initial) : ex_(ex), key_(ex.next_atomic_key()), value_(initial) {}
  template <class R>
  atomic(R& rt, T initial) : atomic(rt.exec(), initial) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  // Each operation twice: without an order (the engine's every call today),
  // where the fast path tests only whether the model is running, and with one.
  T load() {
    ex_.schedule_point(key_);
    if (ex_.memory() == nullptr) [[likely]] {
      ex_.access(key_);
      return value_;
    }
    return load_modelled(sc);
  }
  T load(order o) {
    ex_.schedule_point(key_);
    if (plain(o)) [[likely]] {
      ex_.access(key_);
      return value_;
    }
    return load_modelled(o);
  }
  void store(T v) { store(v, sc); }
  void store(T v, order o) {
    ex_.schedule_point(key_);
    if (plain(o)) [[likely]] {
      ex_.access(key_);
      value_ = v;
      return;
    }
    store_modelled(v, o);
  }
  T exchange(T v, order o = sc) {
    ex_.schedule_point(key_);
    T old = value_;
    modify(v, o);
    return old;
  }
  /// On failure `expected` receives the current value, as std::atomic does.
  /// Reads the newest store either way (a failure is a load of it).
  bool compare_exchange(T& expected, T desired, order o = sc) {
    ex_.schedule_point(key_);
    if (value_ == expected) {
      modify(desired, o);
      return true;
    }
    expected = value_;
    if (plain(o)) [[likely]] {
      ex_.access(key_);
    } else {
      load_newest_modelled(failure_order(o));
    }
    return false;
  }
  T fetch_add(T d) {
    ex_.schedule_point(key_);
    T old = value_;
    modify_sc(static_cast<T>(value_ + d));
    return old;
  }
  T fetch_add(T d, order o) {
    ex_.schedule_point(key_);
    T old = value_;
    modify(static_cast<T>(value_ + d), o);
    return old;
  }
  T fetch_sub(T d) {
    ex_.schedule_point(key_);
    T old = value_;
    modify_sc(static_cast<T>(value_ - d));
    return old;
  }
  T fetch_sub(T d, order o) {
    ex_.schedule_point(key_);
    T old = value_;
    modify(static_cast<T>(value_ - d), o);
    return old;
  }

 private:
  /// The path of a run without the memory model, the engine's every step:
  /// the runtime API's rule for the race detector (acquire and release on
  /// the atomic) and one value. Everything else is out of line.
  bool plain(order o) const { return ex_.memory() == nullptr && o == sc; }
  void modify_sc(T v) {
    if (ex_.memory() == nullptr) [[likely]] {
      ex_.access(key_);
    } else {
      modify_modelled(v, sc);
    }
    value_ = v;
  }
  void modify(T v, order o) {
    if (plain(o)) [[likely]] {
      ex_.access(key_);
    } else {
      modify_modelled(v, o);
    }
    value_ = v;
  }
  /// The model, seeded with this atomic's value; null under seq_cst_only,
  /// where the runtime API's rule applies whatever the order.
  memory_model* model(order o) {
    memory_model* m = o == sc ? ex_.memory() : ex_.start_memory_model();
    if (m == nullptr) {
      ex_.access(key_);
      return nullptr;
    }
    ex_.touch(key_);  // for partial-order reduction; the model orders
    m->seed(history_, &value_, key_);
    return m;
  }
  [[gnu::noinline]] T load_modelled(order o) {
    memory_model* m = model(o);
    return m != nullptr ? value_at(m->load(history_, ex_.current().id, o)) : value_;
  }
  [[gnu::noinline]] void store_modelled(T v, order o) {
    if (memory_model* m = model(o)) {
      m->store(history_, ex_.current().id, o, &v);
      value_ = value_at(history_.size() - 1);  // unchanged when it went before the newest
    } else {
      value_ = v;
    }
  }
  [[gnu::noinline]] void modify_modelled(T v, order o) {
    if (memory_model* m = model(o)) m->modify(history_, ex_.current().id, o, &v);
  }
  [[gnu::noinline]] void load_newest_modelled(order o) {
    if (memory_model* m = model(o)) m->load_newest(history_, ex_.current().id, o);
  }
  T value_at(std::size_t i) const {
    std::array<std::byte, sizeof(T)> bytes;
    std::memcpy(bytes.data(), history_.value(i), sizeof(T));
    return std::bit_cast<T>(bytes);
  }
  executor& ex_;
  std::uint64_t key_;  // its identity for a search that reorders by what steps touch
  T value_;            // the newest store's
  store_history history_{sizeof(T)};  // empty until the model starts
};

}  // namespace lockstep::sim
