// Fiber stacks, for both backends: the simulator's executors
// (sim/stack_pool.hpp) and the threads backend's schedulers. One pool serves
// one OS thread.
//
// Carved from slabs (one mapping holds 64 stacks), each with a guard page
// below it (an overflow faults instead of corrupting a neighbour), pooled (a
// finished fiber's stack is kept for the next one: a fresh mapping costs
// syscalls and page faults on every spawn), and coloured: each stack's top is
// offset by a few cache lines so that equally spaced stacks do not all alias
// in the same L2 sets (shared/peers/limits measured 2x at 1,024 fibers).
//
// Guard pages are installed with MADV_GUARD_INSTALL (Linux 6.13+), which marks
// pages without splitting the mapping, so 100,000 stacks cost ~1,600 mappings.
// On older kernels a guard is an mprotect'ed page, which splits the mapping:
// two mappings per stack, and the kernel's vm.max_map_count (65,530 by
// default) caps live fibers near 32,000. Either way running out is a
// stack_exhausted error naming the limit, never a crash.
//
// What each backend adds:
//   * the simulator shares one pool per thread and stack size across its
//     executors (shared(): a run that maps, guards and unmaps fresh stacks
//     pays ~30 µs of kernel time, most of a small test's run), and an idle
//     pool that grew past a few slabs gives them back (trim_if_idle);
//   * the threads backend bounds a core's stacks (`limit`) and keeps one
//     spare stack, mapped when the pool is made, on which a fiber that could
//     get no stack of its own is dropped unrun (its captures may block as
//     they are destroyed, so they need a fiber): scheduler::create.
//
// Invariant: every stack handed out and not yet returned lies in a slab; the
// free list holds each returned stack once; slabs are unmapped only with the
// pool, or by trim_if_idle when none is in use.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace lockstep {

/// No stack could be had: the message names the limit and what to change.
struct stack_exhausted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class stack_pool {
 public:
  /// `limit`: the most stacks allocate() carves, the spare aside (0: none
  /// but the kernel's). `spare`: keep one stack aside for take_spare().
  /// Throws stack_exhausted when the spare cannot be mapped.
  explicit stack_pool(std::size_t usable_bytes, std::size_t limit = 0, bool spare = false);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  /// This thread's pool for stacks of `usable_bytes` (made on first use; no
  /// limit, no spare). Only this thread may use it; the simulator's
  /// executors share it one after another.
  static stack_pool& shared(std::size_t usable_bytes);

  /// Throws stack_exhausted when no stack can be mapped or guarded, or the limit is reached.
  boost::context::stack_context allocate();
  /// Returns a stack from allocate() or take_spare(); never allocates.
  void deallocate(boost::context::stack_context& sctx) noexcept;

  /// The spare stack, for a fiber that allocate() refused; only while
  /// spare_free() (and only in a pool made with one). It comes back through
  /// deallocate().
  [[nodiscard]] bool spare_free() const { return spare_top_ != nullptr && !spare_taken_; }
  boost::context::stack_context take_spare();

  /// Stacks carved so far (in use + pooled), the spare aside.
  [[nodiscard]] std::size_t carved() const { return carved_; }
  /// The stack pointer the allocate() after the next `skip` ones returns if
  /// it reuses a stack (and nothing is returned meanwhile), else null: a
  /// scheduler warms the stacks its next new fibers will start on.
  [[nodiscard]] const char* next_top(std::size_t skip) const {
    return free_.size() > skip ? free_[free_.size() - 1 - skip].top - free_[free_.size() - 1 - skip].colour
                               : nullptr;
  }
  /// With no stack in use, unmaps every slab past the first `keep_slabs`,
  /// so one huge run does not pin its memory for the thread's lifetime.
  /// Not in a pool with a spare (the spare lies in the first slab).
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
  char* carve();  // a new stack's top, from the last slab or a new one
  [[nodiscard]] std::size_t slots_used() const { return carved_ + (spare_top_ != nullptr ? 1 : 0); }

  std::size_t usable_;
  std::size_t stride_;  // guard page + usable bytes
  std::vector<slab> slabs_;
  std::size_t carved_ = 0;   // stacks handed out of slabs so far, the spare aside
  std::size_t in_use_ = 0;   // handed out, not yet returned (the spare aside): trim only when 0
  std::vector<free_stack> free_;
  std::size_t limit_;          // 0: none
  char* spare_top_ = nullptr;  // the first stack carved, when the pool keeps one
  bool spare_taken_ = false;
};

}  // namespace lockstep
