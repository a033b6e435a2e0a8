// Fiber stacks: mmap'd with a guard page (an overflow faults instead of
// corrupting a neighbour), pooled (a run creates and ends many short fibers;
// mmap + mprotect per fiber would cost ~6 µs), and coloured: each stack's top
// is offset by a few cache lines so that equally spaced stacks do not all
// alias in the same L2 sets (shared/peers/limits measured 2x at 1,024 fibers).
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

namespace lockstep::sim {

class stack_pool {
 public:
  explicit stack_pool(std::size_t usable_bytes);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

  /// Stacks ever mapped (live + pooled); for tests and benchmarks.
  [[nodiscard]] std::size_t mapped() const { return mapped_.size(); }

 private:
  struct region {
    void* base;
    std::size_t length;
    std::size_t colour;  // bytes the stack top sits below the region's end
  };
  std::size_t usable_;
  std::vector<region> mapped_;
  std::vector<region> free_;
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
