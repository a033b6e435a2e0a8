// The lock every primitive of the threads backend holds for a few
// instructions (a channel's queue, a wait list, a fiber's joiners): one
// atomic word, 0 free, 1 held, 2 held with a thread asleep on it (Drepper,
// "Futexes are tricky", mutex 3). Uncontended, a lock and an unlock are one
// compare-exchange and one exchange, inline, where a std::mutex is two calls
// into libpthread. Contended, the thread sleeps on the word at once, as a
// std::mutex does: spinning first was measured and lost badly where a
// producer and a consumer hammer one channel (the lane router at one key fell
// from ~11 to 3-5 M items/s), because the sleeper lets the other side work
// through a batch instead of trading the lock, and its cache line, item by
// item. It is never held across a park (suspend releases it first).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace lockstep::threads::detail {

class lock_t {
 public:
  void lock() noexcept {
    std::uint32_t free = 0;
    if (word_.compare_exchange_strong(free, 1, std::memory_order_acquire)) return;
    // Mark "a thread sleeps here", and sleep until the word is free again.
    while (word_.exchange(2, std::memory_order_acquire) != 0) futex(FUTEX_WAIT_PRIVATE, 2);
  }
  bool try_lock() noexcept {
    std::uint32_t free = 0;
    return word_.compare_exchange_strong(free, 1, std::memory_order_acquire);
  }
  void unlock() noexcept {
    if (word_.exchange(0, std::memory_order_release) == 2) futex(FUTEX_WAKE_PRIVATE, 1);
  }

 private:
  void futex(int op, std::uint32_t value) noexcept {
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "the futex word is the atomic");
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), op, value, nullptr, nullptr, 0);
  }
  std::atomic<std::uint32_t> word_{0};
};

}  // namespace lockstep::threads::detail
