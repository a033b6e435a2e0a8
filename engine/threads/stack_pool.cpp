#include "engine/threads/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/threads/sanitizer.hpp"

namespace lockstep::threads::detail {

namespace {

#ifndef MADV_GUARD_INSTALL
constexpr int MADV_GUARD_INSTALL = 102;  // Linux 6.13; glibc headers may predate it
#endif
// Learnt once per process: a kernel without guard markers says EINVAL. Read
// and written by every scheduler thread, so atomic.
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

stack_pool::stack_pool(std::size_t usable_bytes, std::size_t limit)
    : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))), limit_(limit) {
  usable_ = (usable_bytes + page_ - 1) / page_ * page_;
  stride_ = usable_ + page_;
  try {
    spare_top_ = carve();
  } catch (...) {
    for (const slab& sl : slabs_) ::munmap(sl.base, sl.length);  // no destructor runs for a throwing constructor
    throw;
  }
}

stack_pool::~stack_pool() {
  for (const slab& s : slabs_) {
    san::unpoison(s.base, s.length);  // leave no stale poison for what is mapped here next
    ::munmap(s.base, s.length);
  }
}

void stack_pool::exhausted(const char* call, int error) const {
  std::string msg = std::string("out of fiber stacks: ") + call + " failed (" + std::strerror(error) + ") with " +
                    std::to_string(carved_) + " stacks of " + std::to_string(usable_ / 1024) + " KiB mapped";
  if (error == ENOMEM) {
    msg += guard_markers_work.load()
               ? "; out of address space or memory: run fewer fibers or give them smaller stacks "
                 "(runtime_config::stack_bytes)"
               : "; every guard page is a mapping of its own on this kernel and vm.max_map_count is " +
                     max_map_count() + ": raise it, run fewer fibers, or use Linux 6.13+";
  }
  throw std::runtime_error(msg);
}

void stack_pool::guard(char* page_start) {
  if (guard_markers_work.load(std::memory_order_relaxed)) {
    if (::madvise(page_start, page_, MADV_GUARD_INSTALL) == 0) return;
    if (errno != EINVAL) exhausted("madvise(MADV_GUARD_INSTALL)", errno);
    guard_markers_work.store(false, std::memory_order_relaxed);
  }
  if (::mprotect(page_start, page_, PROT_NONE) != 0) exhausted("mprotect (guard page)", errno);
}

char* stack_pool::carve() {
  // The spare is the first stack carved and is not counted, so every slab
  // holds stacks_per_slab stacks: stack k (the spare is -1) is at k + 1.
  const std::size_t in_slab = (carved_ + (spare_top_ != nullptr ? 1 : 0)) % stacks_per_slab;
  if (in_slab == 0) {
    // Reserved, not committed: pages cost memory only once a fiber touches them.
    const std::size_t length = stride_ * stacks_per_slab;
    void* base =
        ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
  if (spare_top_ != nullptr) ++carved_;  // null only while the constructor carves the spare
  return region + stride_;
}

boost::context::stack_context stack_pool::allocate() {
  char* top = nullptr;
  if (!free_.empty()) {
    top = free_.back();
    free_.pop_back();
    // Frames that ended by a switch or an unwind leave their scope poison
    // behind: the last fiber's would fire in the next one's frames.
    san::unpoison(top - usable_, usable_);
  } else {
    if (limit_ != 0 && carved_ >= limit_) {
      throw std::runtime_error("out of fiber stacks: all " + std::to_string(limit_) +
                               " that runtime_config::max_stacks_per_core allows this core are in use");
    }
    top = carve();
  }
  boost::context::stack_context s;
  s.sp = top;
  s.size = usable_;
  return s;
}

boost::context::stack_context stack_pool::take_spare() {
  if (spare_taken_) throw std::logic_error("stack_pool: the spare stack is taken");
  spare_taken_ = true;
  san::unpoison(spare_top_ - usable_, usable_);
  boost::context::stack_context s;
  s.sp = spare_top_;
  s.size = usable_;
  return s;
}

void stack_pool::deallocate(boost::context::stack_context& s) noexcept {
  if (s.sp == spare_top_) {
    spare_taken_ = false;
    return;
  }
  free_.push_back(static_cast<char*>(s.sp));  // capacity reserved when it was carved
}

}  // namespace lockstep::threads::detail
