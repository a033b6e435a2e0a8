#include "engine/threads/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "engine/threads/sanitizer.hpp"

namespace lockstep {

namespace {

// Asked once: sysconf costs more than the rest of handing back a stack.
std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
constexpr std::size_t colour_step = 320;  // bytes: five cache lines, not a power of two
constexpr std::size_t colours = 11;

#ifndef MADV_GUARD_INSTALL
constexpr int MADV_GUARD_INSTALL = 102;  // Linux 6.13; glibc headers may predate it
#endif
// Learnt once per process (a kernel without guard markers says EINVAL); read
// and written by every thread that has a pool, so atomic.
std::atomic<bool> guard_markers_work{true};

std::string max_map_count() {
  std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r");
  if (f == nullptr) return "unknown";
  char buf[32] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string s(buf, n);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

stack_pool::stack_pool(std::size_t usable_bytes, std::size_t limit, bool spare) : limit_(limit) {
  const std::size_t page = page_size();
  usable_ = (usable_bytes + page - 1) / page * page;
  stride_ = usable_ + page;
  if (!spare) return;
  try {
    spare_top_ = carve();  // slot 0, colour 0: not counted in carved_
  } catch (...) {
    for (const slab& s : slabs_) ::munmap(s.base, s.length);  // no destructor runs for a throwing constructor
    throw;
  }
}

stack_pool& stack_pool::shared(std::size_t usable_bytes) {
  // A handful of sizes at most (run_config::stack_bytes); a vector is enough.
  thread_local std::vector<std::unique_ptr<stack_pool>> pools;
  const std::size_t page = page_size();
  const std::size_t rounded = (usable_bytes + page - 1) / page * page;
  for (auto& p : pools) {
    if (p->usable_ == rounded) return *p;
  }
  pools.push_back(std::make_unique<stack_pool>(usable_bytes));
  return *pools.back();
}

stack_pool::~stack_pool() {
  for (std::size_t i = 0; i < slabs_.size(); ++i) {
    // Leave no stale poison for whatever is mapped here next (only the
    // stacks carved so far were ever used).
    const std::size_t used = std::min(stacks_per_slab, slots_used() - i * stacks_per_slab);
    threads::san::unpoison(slabs_[i].base, used * stride_);
    ::munmap(slabs_[i].base, slabs_[i].length);
  }
}

void stack_pool::trim_if_idle(std::size_t keep_slabs) {
  if (spare_top_ != nullptr || in_use_ != 0 || slabs_.size() <= keep_slabs) return;
  for (std::size_t i = keep_slabs; i < slabs_.size(); ++i) {
    const std::size_t used = std::min(stacks_per_slab, carved_ - i * stacks_per_slab);
    threads::san::unpoison(slabs_[i].base, used * stride_);
    ::munmap(slabs_[i].base, slabs_[i].length);
  }
  slabs_.resize(keep_slabs);
  carved_ = keep_slabs * stacks_per_slab;
  // Every stack is free again: rebuild the free list from the kept slabs.
  free_.clear();
  for (std::size_t i = carved_; i-- > 0;) {
    char* region = slabs_[i / stacks_per_slab].base + (i % stacks_per_slab) * stride_;
    free_.push_back({region + stride_, (i % colours) * colour_step});
  }
}

void stack_pool::exhausted(const char* call, int error) const {
  std::string msg = "out of fiber stacks: " + std::string(call) + " failed (" + std::strerror(error) +
                    ") with " + std::to_string(carved_) + " stacks of " + std::to_string(usable_ / 1024) +
                    " KiB mapped";
  if (error == ENOMEM) {
    msg += guard_markers_work.load(std::memory_order_relaxed)
               ? "; the machine is out of address space or memory: run fewer fibers or give them "
                 "smaller stacks (run_config::stack_bytes, runtime_config::stack_bytes on threads)"
               : "; on this kernel every guard page is a mapping of its own, and vm.max_map_count is " +
                     max_map_count() +
                     ": raise it (sysctl -w vm.max_map_count=262144), run fewer fibers, or use Linux "
                     "6.13+ (guard pages without extra mappings)";
  }
  throw stack_exhausted(msg);
}

void stack_pool::guard(char* page_start) {
  const std::size_t page = page_size();
  if (guard_markers_work.load(std::memory_order_relaxed)) {
    if (::madvise(page_start, page, MADV_GUARD_INSTALL) == 0) return;
    if (errno != EINVAL) exhausted("madvise(MADV_GUARD_INSTALL)", errno);
    guard_markers_work.store(false, std::memory_order_relaxed);
  }
  if (::mprotect(page_start, page, PROT_NONE) != 0) exhausted("mprotect (guard page)", errno);
}

char* stack_pool::carve() {
  const std::size_t slot = slots_used();
  const std::size_t in_slab = slot % stacks_per_slab;
  if (in_slab == 0) {
    // Reserved, not committed: pages cost memory only once a fiber touches them.
    const std::size_t length = stride_ * stacks_per_slab;
    void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if (base == MAP_FAILED) exhausted("mmap (a slab of stacks)", errno);
    try {
      slabs_.push_back({static_cast<char*>(base), length});
      free_.reserve(carved_ + stacks_per_slab);  // so deallocate never allocates
    } catch (const std::bad_alloc&) {
      if (slabs_.empty() || slabs_.back().base != base) ::munmap(base, length);
      exhausted("allocating the pool's bookkeeping", ENOMEM);
    }
  }
  char* region = slabs_.back().base + in_slab * stride_;
  guard(region);
  return region + stride_;
}

boost::context::stack_context stack_pool::allocate() {
  free_stack s{};
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
    // ASan does not know this memory is a stack, and frames that ended by a
    // switch or an unwind leave their scope poison behind: an earlier fiber's
    // poison would otherwise fire in the next fiber's frames.
    threads::san::unpoison(s.top - usable_, usable_);
  } else {
    if (limit_ != 0 && carved_ >= limit_) {
      throw stack_exhausted("out of fiber stacks: all " + std::to_string(limit_) +
                            " that this pool may carve are in use (runtime_config::max_stacks_per_core)");
    }
    const std::size_t slot = slots_used();
    s = {carve(), (slot % colours) * colour_step};
    ++carved_;
  }
  ++in_use_;
  boost::context::stack_context sctx;
  sctx.sp = s.top - s.colour;
  sctx.size = usable_ - s.colour;
  return sctx;
}

boost::context::stack_context stack_pool::take_spare() {
  if (spare_top_ == nullptr || spare_taken_) throw std::logic_error("stack_pool: no spare stack to take");
  spare_taken_ = true;
  threads::san::unpoison(spare_top_ - usable_, usable_);
  boost::context::stack_context s;
  s.sp = spare_top_;
  s.size = usable_;
  return s;
}

void stack_pool::deallocate(boost::context::stack_context& sctx) noexcept {
  // Recover the region's top from the stack pointer: the colour is below a page.
  const std::size_t page = page_size();
  const auto sp = reinterpret_cast<std::uintptr_t>(sctx.sp);
  const auto top = (sp + page - 1) & ~(page - 1);  // pages are a power of two
  if (reinterpret_cast<char*>(top) == spare_top_) {
    spare_taken_ = false;
    return;
  }
  free_.push_back({reinterpret_cast<char*>(top), top - sp});  // capacity reserved when it was carved
  --in_use_;
}

}  // namespace lockstep
