// Fiber-switch annotations for ASan and TSan, for the threads backend.
//
// Placement follows shared/notes/fibers-sanitizers-cancellation.md: ASan is
// told of every stack switch (Boost's creation excursion included), TSan
// switches shadow stacks with flags 0 (no_sync reports false races) from an
// always-inline call site (a wrapper's own entry/exit would land on two
// fibers' shadow stacks and crash TSan). Kept apart from sim/ on purpose: this
// backend must build without the simulator.
#pragma once

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKSTEP_THREADS_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define LOCKSTEP_THREADS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_THREADS_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define LOCKSTEP_THREADS_TSAN 1
#endif

#if defined(LOCKSTEP_THREADS_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(LOCKSTEP_THREADS_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#define LOCKSTEP_THREADS_INLINE inline __attribute__((always_inline))

namespace lockstep::threads::san {

LOCKSTEP_THREADS_INLINE void start_switch([[maybe_unused]] void** fake_save, [[maybe_unused]] const void* bottom,
                                          [[maybe_unused]] std::size_t size) {
#if defined(LOCKSTEP_THREADS_ASAN)
  __sanitizer_start_switch_fiber(fake_save, bottom, size);
#endif
}

LOCKSTEP_THREADS_INLINE void finish_switch([[maybe_unused]] void* fake, [[maybe_unused]] const void** bottom_old,
                                           [[maybe_unused]] std::size_t* size_old) {
#if defined(LOCKSTEP_THREADS_ASAN)
  __sanitizer_finish_switch_fiber(fake, bottom_old, size_old);
#endif
}

/// Marks memory no one may touch until it is unpoisoned (a pooled block).
LOCKSTEP_THREADS_INLINE void poison([[maybe_unused]] void* base, [[maybe_unused]] std::size_t size) {
#if defined(LOCKSTEP_THREADS_ASAN)
  __asan_poison_memory_region(base, size);
#endif
}

/// A pooled stack is reused: clear the poison its last fiber left behind.
LOCKSTEP_THREADS_INLINE void unpoison([[maybe_unused]] void* base, [[maybe_unused]] std::size_t size) {
#if defined(LOCKSTEP_THREADS_ASAN)
  __asan_unpoison_memory_region(base, size);
#endif
}

LOCKSTEP_THREADS_INLINE void* tsan_current() {
#if defined(LOCKSTEP_THREADS_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

LOCKSTEP_THREADS_INLINE void* tsan_create() {
#if defined(LOCKSTEP_THREADS_TSAN)
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}

LOCKSTEP_THREADS_INLINE void tsan_destroy([[maybe_unused]] void* f) {
#if defined(LOCKSTEP_THREADS_TSAN)
  if (f != nullptr) __tsan_destroy_fiber(f);
#endif
}

LOCKSTEP_THREADS_INLINE void tsan_switch([[maybe_unused]] void* f) {
#if defined(LOCKSTEP_THREADS_TSAN)
  __tsan_switch_to_fiber(f, 0);
#endif
}

}  // namespace lockstep::threads::san
