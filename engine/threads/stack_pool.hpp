// Fiber stacks for one scheduler, carved from slabs: one mapping holds 64
// stacks, each with a guard page below it, and a finished fiber's stack is
// kept for the next one (a fresh mapping costs syscalls and page faults on
// every spawn). A pool belongs to one scheduler thread: Boost frees a
// finished fiber's stack on the thread that resumed it, which is always the
// fiber's home, so no lock is needed.
//
// Guard pages are installed with MADV_GUARD_INSTALL (Linux 6.13+), which
// marks pages without splitting the mapping; on older kernels a guard is an
// mprotect'ed page, two mappings per stack, and vm.max_map_count (65,530 by
// default) caps live fibers near 32,000. One stack per mapping plus an
// mprotect'ed guard (Boost's protected_fixedsize_stack, used before) hit that
// cap at 64,000 parked single-flight waiters.
//
// Running out (the kernel refuses a mapping, or the pool's own limit,
// runtime_config::max_stacks_per_core, is reached) is a failure of the run,
// not of the process: each pool keeps one spare stack, mapped when the pool
// is made, on which a fiber that could get no stack of its own is dropped
// unrun (its captures may block as they are destroyed, so they need a fiber).
// scheduler::create says how.
//
// Invariant: every stack handed out and not yet returned lies in a slab; the
// free list holds each returned stack once; slabs are unmapped only with the
// pool, when no fiber of this scheduler is left.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

namespace lockstep::threads::detail {

class stack_pool {
 public:
  /// `limit`: the most stacks allocate() carves, the spare aside; 0 for none
  /// but the kernel's. Throws, as allocate() does, when not even the spare
  /// can be mapped (a stack size the address space cannot hold).
  stack_pool(std::size_t usable_bytes, std::size_t limit);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  /// Throws std::runtime_error naming the limit when no stack can be mapped or guarded.
  boost::context::stack_context allocate();
  /// Returns a stack from allocate() or take_spare() to the pool.
  void deallocate(boost::context::stack_context& s) noexcept;
  /// The spare stack, for a fiber that allocate() refused; only while
  /// spare_free(). It comes back through deallocate().
  [[nodiscard]] bool spare_free() const { return !spare_taken_; }
  boost::context::stack_context take_spare();
  /// Stacks carved so far (live + free), the spare aside; for tests.
  [[nodiscard]] std::size_t carved() const { return carved_; }
  /// The top of the stack the allocate() after the next `skip` ones returns
  /// if it reuses one (and nothing is returned meanwhile), else null.
  [[nodiscard]] const char* next_top(std::size_t skip) const {
    return free_.size() > skip ? free_[free_.size() - 1 - skip] : nullptr;
  }

  static constexpr std::size_t stacks_per_slab = 64;

 private:
  struct slab {
    char* base;
    std::size_t length;
  };
  [[noreturn]] void exhausted(const char* call, int error) const;
  void guard(char* page_start);
  char* carve();  // a new stack's top, from the last slab or a new one

  std::size_t page_;
  std::size_t usable_;
  std::size_t stride_;  // guard page + usable bytes
  std::vector<slab> slabs_;
  std::size_t carved_ = 0;
  std::vector<char*> free_;  // tops of returned stacks; capacity kept >= carved_
  std::size_t limit_;        // 0: none
  char* spare_top_ = nullptr;  // carved first, not counted in carved_
  bool spare_taken_ = false;
};

/// The allocator handed to boost::context::fiber: it hands over a stack
/// already taken from the pool (so a refusal never throws from inside
/// Boost's constructor, mid sanitizer switch) and gives it back to the pool.
struct pool_allocator {
  stack_pool* pool;
  boost::context::stack_context taken;
  boost::context::stack_context allocate() const { return taken; }
  void deallocate(boost::context::stack_context& s) noexcept { pool->deallocate(s); }
};

}  // namespace lockstep::threads::detail
