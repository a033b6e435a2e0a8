// One scheduler's timers: a binary min-heap of its fibers' timed waits,
// ordered by (deadline, sequence), in which each fiber knows its own place
// (fiber::timer_slot). A wait that ends before its deadline (an item came,
// a notify, a cancel) takes its entry out at once, so the heap holds only
// the waits still pending, and an entry needs no reference to keep its fiber
// alive: the fiber is parked in that wait for as long as the entry exists.
// (Entries used to stay until their deadline, each holding its fiber's
// record: a lane waiting with a 1 ms ttl after every item left one per item,
// and a fiber that had ended was kept as long as its longest timeout.)
// Home thread only, like the fibers' timed waits. A template over the
// waiting item only so its tests can use a plain struct; the scheduler's is
// timer_heap, of fibers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiber.hpp"

namespace lockstep::threads::detail {

template <class Item>
class basic_timer_heap {
 public:
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  /// The earliest deadline; the heap must not be empty.
  [[nodiscard]] std::int64_t next_deadline() const { return entries_.front().deadline; }

  /// Enters `f`'s current wait, due at `deadline`; `f` must hold no entry.
  void push(Item& f, std::int64_t deadline) {
    entries_.push_back(entry{deadline, ++seq_, &f});
    f.timer_slot = entries_.size() - 1;
    sift_up(entries_.size() - 1);
  }

  /// Takes `f`'s entry out, if it holds one.
  void remove(Item& f) {
    const std::size_t at = f.timer_slot;
    if (at == Item::no_timer) return;
    f.timer_slot = Item::no_timer;
    const std::size_t last = entries_.size() - 1;
    if (at != last) {
      place(at, entries_[last]);
      entries_.pop_back();
      // The moved entry may belong higher or lower than where it landed.
      if (at > 0 && earlier(entries_[at], entries_[(at - 1) / 2])) {
        sift_up(at);
      } else {
        sift_down(at);
      }
    } else {
      entries_.pop_back();
    }
  }

  /// Takes out and returns the fiber of the earliest entry; not empty.
  Item& pop() {
    Item& f = *entries_.front().f;
    remove(f);
    return f;
  }

  /// Drops every entry (a scheduler thread that ends).
  void clear() {
    for (const entry& e : entries_) e.f->timer_slot = Item::no_timer;
    entries_.clear();
  }

 private:
  struct entry {
    std::int64_t deadline;
    std::uint64_t seq;  // among equal deadlines, the earlier wait first
    Item* f;
  };
  static bool earlier(const entry& a, const entry& b) {
    return a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq;
  }
  void place(std::size_t at, const entry& e) {
    entries_[at] = e;
    e.f->timer_slot = at;
  }
  void sift_up(std::size_t at) {
    const entry e = entries_[at];
    while (at > 0) {
      const std::size_t parent = (at - 1) / 2;
      if (!earlier(e, entries_[parent])) break;
      place(at, entries_[parent]);
      at = parent;
    }
    place(at, e);
  }
  void sift_down(std::size_t at) {
    const entry e = entries_[at];
    const std::size_t n = entries_.size();
    while (true) {
      std::size_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && earlier(entries_[child + 1], entries_[child])) ++child;
      if (!earlier(entries_[child], e)) break;
      place(at, entries_[child]);
      at = child;
    }
    place(at, e);
  }

  std::vector<entry> entries_;
  std::uint64_t seq_ = 0;
};

using timer_heap = basic_timer_heap<fiber>;

}  // namespace lockstep::threads::detail
