#include "engine/threads/record_pool.hpp"

#include <boost/lockfree/stack.hpp>

#include "engine/threads/sanitizer.hpp"

namespace lockstep::threads::detail::record_pool {

namespace {

// Room for the records of 64,000 parked fibers (32 MiB at most, while a run
// lasts); a block given to a full pool is freed.
constexpr std::size_t capacity = 65536;

boost::lockfree::stack<void*>& blocks() {
  // Never destroyed: records may be freed during static destruction. Its
  // nodes are all made here, so bounded_push never allocates.
  static auto* pool = new boost::lockfree::stack<void*>(capacity);
  return *pool;
}

void free_block(void* block) noexcept { ::operator delete(block, std::align_val_t(block_align)); }

}  // namespace

void* take() {
  void* block = nullptr;
  if (blocks().pop(block)) {
    san::unpoison(block, block_bytes);
    return block;
  }
  return ::operator new(block_bytes, std::align_val_t(block_align));
}

void give(void* block) noexcept {
  san::poison(block, block_bytes);  // a use after free of a pooled record is reported
  if (!blocks().bounded_push(block)) {
    san::unpoison(block, block_bytes);
    free_block(block);
  }
}

void trim(std::size_t keep) noexcept {
  std::size_t kept = 0;
  void* block = nullptr;
  boost::lockfree::stack<void*> hold(keep);
  while (blocks().pop(block)) {
    san::unpoison(block, block_bytes);
    if (kept < keep && hold.bounded_push(block)) {
      ++kept;
    } else {
      free_block(block);
    }
  }
  while (hold.pop(block)) give(block);
}

std::size_t pooled() noexcept {
  std::size_t n = 0;
  boost::lockfree::stack<void*> hold(capacity);
  void* block = nullptr;
  while (blocks().pop(block)) {
    ++n;
    (void)hold.bounded_push(block);
  }
  while (hold.pop(block)) (void)blocks().bounded_push(block);
  return n;
}

}  // namespace lockstep::threads::detail::record_pool
