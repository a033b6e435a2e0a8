// The C++ memory model for sim_std's atomics: which store a load may read,
// and where a store goes in its location's modification order.
//
// Each atomic keeps its stores in modification order (a store_history). A
// load reads any of them that coherence and happens-before allow, and a
// relaxed or release store may be placed before stores its thread has not
// seen; which one is a choice the strategy draws and the record keeps
// (executor::choose), with 0 — the newest store, the end of the order —
// as the ordinary outcome, so seq_cst-only behaviour is the first schedule.
//
// The rules are the view-based operational reading of C++20's (Kaiser et
// al., "Strong Logic for Weak Memory", ECOOP 2017; Kang et al., "A Promising
// Semantics for Relaxed-Memory Concurrency", POPL 2017), derived from the
// race detector's vector clocks rather than kept as views:
//   - coherence: an operation never reads or writes below the newest store
//     that it happens after, or that was read by an operation it happens
//     after (write-write, write-read, read-read and read-write coherence);
//   - release/acquire: an acquire load that reads a store takes that store's
//     release sequence's clock (C++20: the release store and later RMWs);
//     a relaxed load keeps it for an acquire fence;
//   - read-modify-writes read the newest store and go at the end (atomicity),
//     and nothing is placed between an RMW and the store it read;
//   - seq_cst: seq_cst stores and RMWs go at the end of the order, and a
//     seq_cst load reads the last seq_cst store or later (C++20
//     [atomics.order], S consistent with coherence); a seq_cst fence makes
//     visible what every earlier seq_cst fence covered ([atomics.fences]);
//   - no load reads a store that has not yet been made (po ∪ rf acyclic, as
//     RC11 — Lahav et al., PLDI 2017 — and C11Tester assume): so load
//     buffering's weak outcome, which C++ permits and RC11 forbids, is never
//     produced. Said in results/memory_model.md.
// A history keeps its newest `history_limit` stores; older ones can no longer
// be read (fewer behaviours, never a wrong one).
#pragma once

#include <atomic>  // determinism-rules: allow (std::memory_order names the orders; nothing here is a real atomic)
#include <cstddef>
#include <cstdint>
#include <vector>

#include "happens_before.hpp"

namespace lockstep::sim {

class executor;

/// What an order does: acquire (consume is taken as acquire), release, and
/// the order a compare-exchange's failure has when one order is given.
constexpr bool acquires(std::memory_order o) {
  return o == std::memory_order_acquire || o == std::memory_order_consume || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst;
}
constexpr bool releases(std::memory_order o) {
  return o == std::memory_order_release || o == std::memory_order_acq_rel || o == std::memory_order_seq_cst;
}
constexpr std::memory_order failure_order(std::memory_order o) {
  return o == std::memory_order_acq_rel   ? std::memory_order_acquire
         : o == std::memory_order_release ? std::memory_order_relaxed
                                          : o;
}

/// One atomic location's stores, in modification order, with their values
/// as bytes (any trivially copyable T).
class store_history {
 public:
  explicit store_history(std::size_t value_bytes) : bytes_(value_bytes) {}
  [[nodiscard]] bool empty() const { return stores_.empty(); }
  [[nodiscard]] std::size_t size() const { return stores_.size(); }
  /// The value of the i-th store in modification order (0: the oldest kept).
  [[nodiscard]] const std::byte* value(std::size_t i) const { return values_.data() + i * bytes_; }

 private:
  friend class memory_model;
  struct store {
    happens_before::epoch by;  ///< its writer's epoch; fiber `everyone`: seen by all
    std::uint64_t sc = 0;      ///< its place among seq_cst stores (0: not seq_cst)
    bool rmw = false;          ///< a read-modify-write: nothing goes between it and the store before
    happens_before::vector_clock published;  ///< what an acquire that reads it gets
    /// Each fiber's first read of it: a later read is seen only if the first is.
    std::vector<happens_before::epoch> readers;
  };
  std::vector<store> stores_;
  std::vector<std::byte> values_;
  std::size_t bytes_;
};

class memory_model {
 public:
  using fiber_id = happens_before::fiber_id;
  /// A store every fiber has seen: the value an atomic held when the model
  /// started (its initialisation, or the last seq_cst-only store).
  static constexpr fiber_id everyone = UINT32_MAX;
  /// Stores kept per location.
  static constexpr std::size_t history_limit = 16;

  memory_model(executor& ex, happens_before& clocks) : ex_(&ex), hb_(&clocks) {}

  /// A new run (or the model starting part-way through one).
  void clear();

  /// Starts `h` from `value` if it is empty: the value the atomic holds,
  /// seen by everyone, carrying what a release under `key` published before
  /// the model started.
  void seed(store_history& h, const void* value, std::uint64_t key);

  /// A load by `t`: the index of the store it reads (drawn among those
  /// allowed), its reading recorded and its clocks joined.
  std::size_t load(store_history& h, fiber_id t, std::memory_order o);
  /// A load of the newest store (a compare-exchange that fails, atomic::wait).
  void load_newest(store_history& h, fiber_id t, std::memory_order o);
  /// A store by `t` of `value`, placed where the model allows (drawn).
  void store(store_history& h, fiber_id t, std::memory_order o, const void* value);
  /// A read-modify-write by `t`: it read the newest store and writes `value` after it.
  void modify(store_history& h, fiber_id t, std::memory_order o, const void* value);
  /// atomic_thread_fence by `t` (its acquire, seq_cst and release parts).
  void fence(fiber_id t, std::memory_order o);

 private:
  /// The oldest store `t` may read (or write after) now.
  [[nodiscard]] std::size_t floor(const store_history& h, fiber_id t, bool seq_cst) const;
  [[nodiscard]] bool seen(happens_before::epoch e, fiber_id t, bool seq_cst) const;
  void read(store_history& h, std::size_t i, fiber_id t, std::memory_order o);
  void insert(store_history& h, std::size_t at, store_history::store s, const void* value);
  happens_before::vector_clock published_by(fiber_id t, std::memory_order o);

  struct fiber_view {
    happens_before::vector_clock fenced;  ///< what its seq_cst fences made visible
    std::uint64_t sc_fence = 0;           ///< seq_cst stores made before its last seq_cst fence
  };
  fiber_view& view(fiber_id t);

  executor* ex_;
  happens_before* hb_;
  std::vector<fiber_view> views_;
  happens_before::vector_clock sc_fences_;  ///< the join of every seq_cst fence's clock
  std::uint64_t sc_stores_ = 0;
};

}  // namespace lockstep::sim
