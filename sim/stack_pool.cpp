#include "sim/stack_pool.hpp"

#include "sim/sanitizer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace lockstep::sim {

namespace {
std::size_t page_size() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
constexpr std::size_t colour_step = 320;  // bytes: five cache lines, not a power of two
constexpr std::size_t colours = 11;
}  // namespace

stack_pool::stack_pool(std::size_t usable_bytes) {
  const std::size_t page = page_size();
  usable_ = (usable_bytes + page - 1) / page * page;
}

stack_pool::~stack_pool() {
  for (const region& r : mapped_) {
    san::unpoison(static_cast<char*>(r.base) + page_size(), usable_);
    ::munmap(r.base, r.length);
  }
}

boost::context::stack_context stack_pool::allocate() {
  region r{};
  if (!free_.empty()) {
    r = free_.back();
    free_.pop_back();
  } else {
    const std::size_t page = page_size();
    const std::size_t length = usable_ + page;
    void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    if (::mprotect(base, page, PROT_NONE) != 0) {
      ::munmap(base, length);
      throw std::bad_alloc();
    }
    r = {base, length, (mapped_.size() % colours) * colour_step};
    mapped_.push_back(r);
  }
  // ASan does not know this memory is a stack, and frames that ended by a
  // switch or an unwind leave their scope poison behind: an earlier fiber's
  // (or, after munmap and a new mmap at the same address, an earlier pool's)
  // poison would otherwise fire in the next fiber's frames.
  san::unpoison(static_cast<char*>(r.base) + page_size(), usable_);
  boost::context::stack_context sctx;
  sctx.sp = static_cast<char*>(r.base) + r.length - r.colour;
  sctx.size = usable_ - r.colour;
  return sctx;
}

void stack_pool::deallocate(boost::context::stack_context& sctx) noexcept {
  // Recover the region from the stack top: sp lies in the last page of it.
  const std::size_t page = page_size();
  auto top = reinterpret_cast<std::uintptr_t>(sctx.sp);
  auto end = (top + page - 1) / page * page;
  const std::size_t length = usable_ + page;
  free_.push_back({reinterpret_cast<void*>(end - length), length, end - top});
}

}  // namespace lockstep::sim
