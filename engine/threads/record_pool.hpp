// Memory for fiber records, recycled across threads.
//
// A record is made by the thread that spawns the fiber and freed by whichever
// thread drops its last reference, most often the fiber's home when it ends.
// glibc's malloc hands a block freed on another thread back to the arena of
// the thread that made it, under that arena's lock, once the freeing thread's
// small cache (7 blocks a size) is full. With 64,000 single-flight waiters
// spawned from one core and ended on both, the two schedulers queued on that
// lock: a futex sleep and wake, ~10% of the run. Here a freed record goes
// to a cache of the freeing thread, which hands blocks to a shared pool, and
// takes them from it, 128 at a time; the next spawn on any thread reuses it.
// (Boost.Lockfree's stack was tried first: its pop reads a node that a push
// may be writing, which TSan reports, rightly by the letter of the model.)
//
// Blocks are 512 bytes, aligned to a cache line, so no two records share a
// line. The pool outlives every runtime (a task handle may hold a record
// past its runtime). A runtime's records wait in it for the runtime's next
// run, as its fiber stacks do; the runtime's destructor trims it, so a peak
// is not held for the rest of the process.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace lockstep::threads::detail::record_pool {

inline constexpr std::size_t block_bytes = 512;
inline constexpr std::size_t block_align = 64;

/// A block of block_bytes: a recycled one if any, else a new one.
void* take();
/// Returns a block from take() for reuse (or frees it if the pool is full).
void give(void* block) noexcept;
/// Frees every block of the shared pool past the first `keep`, after moving
/// the calling thread's cached blocks there.
void trim(std::size_t keep) noexcept;
/// Blocks in the shared pool and the calling thread's cache; for tests.
std::size_t pooled() noexcept;

/// The allocator of fiber records (std::allocate_shared): a record and its
/// reference counts in one pooled block.
template <class T>
struct allocator {
  using value_type = T;
  allocator() = default;
  template <class U>
  allocator(const allocator<U>& /*other*/) noexcept {}  // NOLINT: rebinding, as std::allocator
  T* allocate(std::size_t n) {
    if constexpr (sizeof(T) <= block_bytes && alignof(T) <= block_align) {
      if (n == 1) return static_cast<T*>(take());
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (sizeof(T) <= block_bytes && alignof(T) <= block_align) {
      if (n == 1) return give(p);
    }
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const allocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace lockstep::threads::detail::record_pool
