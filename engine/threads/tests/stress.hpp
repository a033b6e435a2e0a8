// Helpers shared by the threads-backend stress tests (test_stress_*.cpp).
//
// What happened is recorded in per-core logs: a fiber appends to the log of
// the core it runs on, and only that core's OS thread runs it, so a log has
// one writer and needs no lock. No lock or atomic on the recording path means
// the only synchronization TSan sees is the component's own. The logs are
// read after runtime::run() has returned (its threads joined), then merged
// and checked.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/threads/runtime.hpp"

namespace lockstep::threads::testing {

/// Items each stress case pushes through its component: LOCKSTEP_STRESS_ITEMS
/// from the environment, 1,000,000 by default (the figure issue 8 asks for).
inline std::uint64_t stress_items() {
  const char* env = std::getenv("LOCKSTEP_STRESS_ITEMS");
  if (env == nullptr || *env == '\0') return 1'000'000;
  return std::stoull(env);
}

/// One log per core, each written only by fibers of that core.
template <class E>
class per_core_log {
 public:
  explicit per_core_log(std::uint32_t cores, std::size_t reserve_each = 0) : logs_(cores) {
    for (auto& l : logs_) l.entries.reserve(reserve_each);
  }
  /// Appends to the calling fiber's core's log.
  void add(const runtime& rt, const E& e) { logs_[rt.current_core()].entries.push_back(e); }
  /// The log of one core (after the run).
  [[nodiscard]] const std::vector<E>& of(std::uint32_t core) const { return logs_[core].entries; }
  [[nodiscard]] std::uint32_t cores() const { return static_cast<std::uint32_t>(logs_.size()); }
  [[nodiscard]] std::size_t total() const {
    std::size_t n = 0;
    for (auto& l : logs_) n += l.entries.size();
    return n;
  }

 private:
  struct alignas(64) one {  // own cache line: the two writers never share one
    std::vector<E> entries;
  };
  std::vector<one> logs_;
};

/// A small per-fiber PRNG (xorshift64*), so a workload's choices cost nothing
/// shared.
struct xorshift {
  std::uint64_t s;
  explicit xorshift(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ULL + 1) {}
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dULL;
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

}  // namespace lockstep::threads::testing
