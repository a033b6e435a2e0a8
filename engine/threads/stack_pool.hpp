// Fiber stacks for one scheduler: mmap'ed with a guard page below
// (boost's protected_fixedsize_stack), kept for reuse because a fresh mapping
// costs syscalls and page faults on every spawn. A pool belongs to one
// scheduler thread: Boost frees a finished fiber's stack on the thread that
// resumed it, which is always the fiber's home, so no lock is needed.
#pragma once

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

#include "engine/threads/sanitizer.hpp"

namespace lockstep::threads::detail {

class stack_pool {
 public:
  explicit stack_pool(std::size_t bytes) : make_(bytes) {}
  ~stack_pool() {
    for (auto& s : free_) make_.deallocate(s);
  }
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  boost::context::stack_context allocate() {
    if (free_.empty()) return make_.allocate();
    boost::context::stack_context s = free_.back();
    free_.pop_back();
    san::unpoison(static_cast<char*>(s.sp) - s.size, s.size);
    return s;
  }
  void deallocate(boost::context::stack_context& s) noexcept {
    if (free_.size() < kept) {
      free_.push_back(s);  // capacity reserved up front: never throws here
    } else {
      make_.deallocate(s);
    }
  }
  void reserve() { free_.reserve(kept); }

  static constexpr std::size_t kept = 256;  // idle stacks a scheduler holds on to

 private:
  boost::context::protected_fixedsize_stack make_;
  std::vector<boost::context::stack_context> free_;
};

/// The allocator handed to boost::context::fiber; it also records where the
/// stack lies, which the sanitizer annotations need.
struct pool_allocator {
  stack_pool* pool;
  boost::context::stack_context* record;
  boost::context::stack_context allocate() {
    *record = pool->allocate();
    return *record;
  }
  void deallocate(boost::context::stack_context& s) noexcept { pool->deallocate(s); }
};

}  // namespace lockstep::threads::detail
