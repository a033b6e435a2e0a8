// Fiber stacks: carved from slabs (one mapping holds many stacks), each with a
// guard page below it (an overflow faults instead of corrupting a neighbour),
// pooled (a run creates and ends many short fibers; a syscall per fiber would
// cost microseconds), and coloured: each stack's top is offset by a few cache
// lines so that equally spaced stacks do not all alias in the same L2 sets
// (shared/peers/limits measured 2x at 1,024 fibers).
//
// One pool per OS thread and stack size outlives the executors that use it
// (shared()): a run that maps, guards and unmaps fresh stacks pays ~30 µs of
// kernel time, which on small tests was most of a run's cost. An idle pool
// that grew past a few slabs gives them back (trim_if_idle).
//
// Guard pages are installed with MADV_GUARD_INSTALL (Linux 6.13+), which marks
// pages without splitting the mapping, so 100,000 stacks cost ~1,600 mappings.
// On older kernels a guard is an mprotect'ed page, which splits the mapping:
// two mappings per stack, and the kernel's vm.max_map_count (65,530 by
// default) caps live fibers near 32,000. Either way running out is reported
// as a stack_exhausted error naming the limit, never a crash.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace lockstep::sim {

/// No stack could be had: the message names the limit and what to change.
struct stack_exhausted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class stack_pool {
 public:
  explicit stack_pool(std::size_t usable_bytes);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  /// This thread's pool for stacks of `usable_bytes` (created on first use).
  /// Only this thread may use it; executors share it one after another.
  static stack_pool& shared(std::size_t usable_bytes);

  /// Throws stack_exhausted when no stack can be mapped or guarded.
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

  /// Stacks ever carved (live + pooled); for tests and benchmarks.
  [[nodiscard]] std::size_t mapped() const { return carved_; }
  /// With no stack in use, unmaps every slab past the first `keep_slabs`,
  /// so one huge run does not pin its memory for the thread's lifetime.
  void trim_if_idle(std::size_t keep_slabs = 4);

  static constexpr std::size_t stacks_per_slab = 64;

 private:
  struct slab {
    char* base;
    std::size_t length;
  };
  struct free_stack {
    char* top;  // the end of its region: the stack grows down from here
    std::size_t colour;
  };
  [[noreturn]] void exhausted(const char* call, int error) const;
  void guard(char* page_start);

  std::size_t usable_;
  std::size_t stride_;  // guard page + usable bytes
  std::vector<slab> slabs_;
  std::size_t carved_ = 0;         // stacks handed out of slabs so far
  std::size_t in_use_ = 0;  // handed out, not yet returned: trim only when 0
  std::vector<free_stack> free_;
};

/// The allocator handed to boost::context::fiber: draws from a pool and tells
/// the fiber where its stack lies (the sanitizer annotations need the bounds).
struct pooled_stack_allocator {
  stack_pool* pool;
  boost::context::stack_context* record;
  boost::context::stack_context allocate() {
    *record = pool->allocate();
    return *record;
  }
  void deallocate(boost::context::stack_context& sctx) noexcept { pool->deallocate(sctx); }
};

}  // namespace lockstep::sim
