// The simulator's fiber stacks: the pool both backends share
// (engine/threads/stack_pool.hpp: slabs, guard pages, colouring, one pool per
// OS thread and stack size kept between executors, trimmed when idle), and
// the allocator that hands its stacks to boost::context::fiber.
#pragma once

#include <boost/context/stack_context.hpp>

#include "../engine/threads/stack_pool.hpp"

namespace lockstep::sim {

using lockstep::stack_exhausted;
using lockstep::stack_pool;

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
