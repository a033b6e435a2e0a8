// Every component, every member, compiled for both runtimes in every build.
//
// The components are templates: a member that no caller uses is never
// compiled, so a change that only one backend can compile (a primitive the
// other lacks, an operation with another signature) would pass a build that
// happens not to use it. Explicit instantiation definitions compile each
// member of each class template, for the simulator and for the threads
// backend. This file is an object library that the CLI depends on
// (tools/CMakeLists.txt), so the quick-start build, the test builds and the
// benchmark build all compile it; nothing links its objects.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/lanes.hpp"
#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/shard_stats.hpp"
#include "engine/single_flight.hpp"
#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"

namespace lockstep::instantiation {

/// The least a Work type has: a key, a class, no deadline, no request id.
struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t k = 0;
  key_type key() const { return k; }
  class_id cls() const { return 0; }
  std::optional<std::int64_t> ttl_ns() const { return std::nullopt; }
  std::optional<id_type> request_id() const { return std::nullopt; }
};

struct no_error {
  lockstep::fallout fallout() const { return lockstep::fallout::clean; }
};

/// A Processor that keeps a count per key.
struct counter {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = no_error;
  process_result<std::uint64_t, no_error> process(const std::uint64_t&, std::optional<std::uint64_t> state, job) {
    return disposition<std::uint64_t>::keep(state.value_or(0) + 1);
  }
  void on_error(const std::uint64_t&, const no_error&) {}
  void on_coalesced(const std::uint64_t&, job) {}
  void on_evict(const std::uint64_t&, std::uint64_t) {}
  void on_expired(const std::uint64_t&, job) {}
};
static_assert(Processor<counter>);

struct make_counter {
  counter operator()(std::size_t) const { return {}; }
};

}  // namespace lockstep::instantiation

namespace lockstep {

#define LOCKSTEP_INSTANTIATE_FOR(R)                                                                          \
  static_assert(Runtime<R>);                                                                                 \
  template class lane_router<R, std::uint64_t, std::uint64_t>;                                               \
  template class single_flight<R, std::uint64_t, std::string>;                                               \
  template class shard<R, instantiation::counter>;                                                           \
  template class shard_stats<R>;                                                                             \
  template class router<R, instantiation::job>;                                                              \
  template struct shard_group<R, instantiation::counter>;                                                    \
  template shard_group<R, instantiation::counter> launch_shards<R, instantiation::counter,                   \
                                                                instantiation::make_counter>(                \
      R&, std::size_t, instantiation::make_counter, const shard_config&, std::size_t);

LOCKSTEP_INSTANTIATE_FOR(sim::runtime)
LOCKSTEP_INSTANTIATE_FOR(threads::runtime)

#undef LOCKSTEP_INSTANTIATE_FOR

}  // namespace lockstep
