// engine/plant.hpp — planted bugs: switches in the real engine, each a known
// one-line defect, compiled only into a selfcheck build.
//
// lockstep tests the harness as it tests others: every oracle rule has a bug
// planted in the engine that breaks it, and the bundled scenarios (and the
// generated ones) must catch each by name. A planted bug is a site in the
// engine that reads
//
//     if (LOCKSTEP_PLANT(shards_lifo_per_key)) { ...the defect... } else { ...the engine... }
//
// so a planted variant differs from the shipped engine by exactly that one
// defect. In a build without LOCKSTEP_SELFCHECK (a release, an installed
// package) LOCKSTEP_PLANT(name) is the constant false: the defect is dead
// code, folded away, and nothing is left to switch on. In a selfcheck build
// (cmake -DLOCKSTEP_SELFCHECK=ON: the test and demo builds) at most one bug
// is active per thread, chosen by a scenario's `canary` field
// (tools/scenario/) or a test, for the extent of a plant::scope; the threads
// backend's workers take the bug of the thread that started them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lockstep::plant {

// Every planted bug, once: X(name). The names are the component's and the
// scenario format's `canary` value, joined by '_'.
#define LOCKSTEP_PLANTED_BUGS(X)          \
  X(shards_skip_final_flush)              \
  X(shards_keep_expired_request_ids)      \
  X(shards_lose_expired)                  \
  X(shards_ignore_pending_cap)            \
  X(shards_lifo_per_key)                  \
  X(shards_ignore_budget)                 \
  X(shards_refile_to_front)               \
  X(shards_complete_before_process)       \
  X(shards_panic_not_in_doubt)            \
  X(shards_evict_ignores_age)             \
  X(shards_submit_never_waits)            \
  X(shards_try_submit_next_shard)         \
  X(shards_full_reported_closed)          \
  X(shards_clean_error_not_failed)        \
  X(shards_panic_uncounted)               \
  X(shards_expiry_uncounted)              \
  X(shards_started_before_coalescing)     \
  X(shards_final_flush_uncounted)         \
  X(shards_queue_wait_absolute)           \
  X(shards_release_id_at_dispatch)        \
  X(shards_coalesced_uncounted)           \
  X(shards_completed_counts_successes)    \
  X(shards_evict_busy_keys)               \
  X(shards_publish_before_flushes_end)    \
  X(shards_shed_only_past_deadline)       \
  X(shards_no_publish_on_exit)           \
  X(lanes_send_after_unlock)             \
  X(lanes_decrement_at_dequeue)          \
  X(lanes_replace_lane_on_route)         \
  X(lanes_exit_guard_keeps_entry)        \
  X(lanes_lane_count_only_grows)         \
  X(lanes_lane_holds_map)                \
  X(flights_send_skips_without_subscribers) \
  X(flights_decrement_outside_lock)      \
  X(flights_removal_without_identity_check) \
  X(flights_keep_retired_slot)           \
  X(flights_abandon_after_answer)        \
  X(flights_count_answers_as_abandoned)  \
  X(flights_recycled_outcome)

enum class bug : std::uint8_t {
  none,
#define LOCKSTEP_PLANT_ENUM(name) name,
  LOCKSTEP_PLANTED_BUGS(LOCKSTEP_PLANT_ENUM)
#undef LOCKSTEP_PLANT_ENUM
};

/// Whether this build can plant bugs (LOCKSTEP_SELFCHECK).
constexpr bool compiled_in() {
#ifdef LOCKSTEP_SELFCHECK
  return true;
#else
  return false;
#endif
}

/// The bug planted on this thread (bug::none: the shipped engine).
inline bug& current() {
  static thread_local bug active = bug::none;
  return active;
}

/// Plants `b` on this thread for the scope's extent, then restores the one before.
class scope {
 public:
  explicit scope(bug b) : before_(current()) { current() = b; }
  ~scope() { current() = before_; }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

 private:
  bug before_;
};

inline constexpr std::string_view names[] = {
    "none",
#define LOCKSTEP_PLANT_NAME(name) #name,
    LOCKSTEP_PLANTED_BUGS(LOCKSTEP_PLANT_NAME)
#undef LOCKSTEP_PLANT_NAME
};

inline constexpr std::string_view name(bug b) { return names[static_cast<std::size_t>(b)]; }

/// The bug of that name (bug::none for "none"); nullopt for a name that is none.
inline std::optional<bug> by_name(std::string_view n) {
  for (std::size_t i = 0; i < std::size(names); ++i) {
    if (names[i] == n) return static_cast<bug>(i);
  }
  return std::nullopt;
}

}  // namespace lockstep::plant

#ifdef LOCKSTEP_SELFCHECK
#define LOCKSTEP_PLANT(name) (::lockstep::plant::current() == ::lockstep::plant::bug::name)
#else
#define LOCKSTEP_PLANT(name) false
#endif
