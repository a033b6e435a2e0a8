#include "engine/threads/record_pool.hpp"

#include <mutex>
#include <vector>

#include "engine/threads/sanitizer.hpp"

namespace lockstep::threads::detail::record_pool {

namespace {

// Each thread keeps up to `local_most` blocks of its own; past that it moves
// `batch` of them to the shared pool in one go, and a thread with none takes
// up to `batch` from there in one go, so the shared lock is taken once per
// `batch` records, not per record. The shared pool holds at most
// `shared_most` (32 MiB: the records of 64,000 parked fibers); a block given
// to a full pool is freed.
constexpr std::size_t local_most = 256;
constexpr std::size_t batch = 128;
constexpr std::size_t shared_most = 65536;

void free_block(void* block) noexcept { ::operator delete(block, std::align_val_t(block_align)); }

struct shared_pool {
  std::mutex mu;
  std::vector<void*> blocks;
};

shared_pool& shared() {
  // Never destroyed: records may be freed during static destruction, and a
  // thread's cache is handed back here when the thread ends.
  static auto* pool = new shared_pool;
  return *pool;
}

// Keeps `block` in the shared pool, or frees it if that is full. Under s.mu.
void keep_locked(shared_pool& s, void* block) noexcept {
  if (s.blocks.size() < shared_most) {
    try {
      s.blocks.push_back(block);
      return;
    } catch (...) {  // no memory for the pool's own list: free the block instead
    }
  }
  san::unpoison(block, block_bytes);
  free_block(block);
}

// Moves up to `n` blocks from the back of `from` to the shared pool.
void spill(std::vector<void*>& from, std::size_t n) noexcept {
  shared_pool& s = shared();
  std::lock_guard<std::mutex> hold(s.mu);
  for (; n > 0 && !from.empty(); --n) {
    keep_locked(s, from.back());
    from.pop_back();
  }
}

// Set when this thread's cache is destroyed (its thread is ending): a record
// freed after that (by a thread-local or static destructor that ran later)
// goes straight to the shared pool. Constant-initialized, so never destroyed.
constinit thread_local bool cache_gone = false;

struct local_cache {
  std::vector<void*> blocks;
  local_cache() { blocks.reserve(local_most); }
  local_cache(const local_cache&) = delete;
  local_cache& operator=(const local_cache&) = delete;
  ~local_cache() {
    spill(blocks, blocks.size());
    cache_gone = true;
  }
};

thread_local local_cache cache;

void* take_shared() {
  shared_pool& s = shared();
  std::lock_guard<std::mutex> hold(s.mu);
  if (s.blocks.empty()) return nullptr;
  void* block = s.blocks.back();
  s.blocks.pop_back();
  return block;
}

// A pooled block, or null when the pool has none: from this thread's cache,
// refilled from the shared pool `batch` at a time.
void* take_pooled() {
  if (cache_gone) return take_shared();
  std::vector<void*>& mine = cache.blocks;
  if (mine.empty()) {
    shared_pool& s = shared();
    std::lock_guard<std::mutex> hold(s.mu);
    for (std::size_t n = 0; n < batch && !s.blocks.empty(); ++n) {
      mine.push_back(s.blocks.back());  // capacity reserved: no allocation
      s.blocks.pop_back();
    }
  }
  if (mine.empty()) return nullptr;
  void* block = mine.back();
  mine.pop_back();
  return block;
}

}  // namespace

void* take() {
  void* block = take_pooled();
  if (block == nullptr) return ::operator new(block_bytes, std::align_val_t(block_align));
  san::unpoison(block, block_bytes);
  return block;
}

void give(void* block) noexcept {
  san::poison(block, block_bytes);  // a use after free of a pooled record is reported
  if (cache_gone) {
    shared_pool& s = shared();
    std::lock_guard<std::mutex> hold(s.mu);
    keep_locked(s, block);
    return;
  }
  std::vector<void*>& mine = cache.blocks;
  if (mine.size() == local_most) spill(mine, batch);
  mine.push_back(block);  // below capacity now: no allocation
}

void trim(std::size_t keep) noexcept {
  if (!cache_gone) spill(cache.blocks, cache.blocks.size());
  shared_pool& s = shared();
  std::lock_guard<std::mutex> hold(s.mu);
  while (s.blocks.size() > keep) {
    san::unpoison(s.blocks.back(), block_bytes);
    free_block(s.blocks.back());
    s.blocks.pop_back();
  }
  s.blocks.shrink_to_fit();
}

std::size_t pooled() noexcept {
  shared_pool& s = shared();
  std::lock_guard<std::mutex> hold(s.mu);
  return s.blocks.size() + (cache_gone ? 0 : cache.blocks.size());
}

}  // namespace lockstep::threads::detail::record_pool
