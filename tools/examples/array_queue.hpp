// A bounded array queue written against the standard's names (through the
// alias EXAMPLE_CC): push reserves a slot with one atomic increment and then
// writes it; pop, under a mutex, takes the next slot. With
// EXAMPLE_PLANTED_BUG=1 pop takes a reserved slot before its write lands and
// returns 0, a value nobody pushed: every single operation looks fine, but
// the history is not linearizable.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#ifndef EXAMPLE_PLANTED_BUG
#define EXAMPLE_PLANTED_BUG 0
#endif

namespace example {

class array_queue {
 public:
  /// "ok", or "full" once the 16 slots are used.
  std::string push(std::int64_t v) {
    const int i = tail_.fetch_add(1);
    if (i >= static_cast<int>(slots_.size())) return "full";
    slots_[static_cast<std::size_t>(i)].store(static_cast<int>(v));
    return "ok";
  }
  /// The oldest value, or "empty".
  std::string pop() {
    EXAMPLE_CC::lock_guard<EXAMPLE_CC::mutex> g(pop_lock_);
    const int reserved = tail_.load() < static_cast<int>(slots_.size()) ? tail_.load() : static_cast<int>(slots_.size());
    if (head_ >= reserved) return "empty";
    int v = slots_[static_cast<std::size_t>(head_)].load();
#if !EXAMPLE_PLANTED_BUG
    while (v == 0) {  // reserved but not written yet: wait for the write
      EXAMPLE_CC::this_thread::yield();
      v = slots_[static_cast<std::size_t>(head_)].load();
    }
#endif
    ++head_;
    return std::to_string(v);
  }

 private:
  std::array<EXAMPLE_CC::atomic<int>, 16> slots_{};  // 0: not written yet (values pushed are > 0)
  EXAMPLE_CC::atomic<int> tail_{0};
  EXAMPLE_CC::mutex pop_lock_;
  int head_ = 0;  // guarded by pop_lock_
};

}  // namespace example
