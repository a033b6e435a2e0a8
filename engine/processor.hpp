// engine/processor.hpp — what a shard asks of the user code that does the work.
//
// A processor turns (key, resident state or none, work) into a disposition for
// the key's state, or an error. The shard calls it on fibers of the shard's own
// core, at most one item per key at a time, and never concurrently with that
// key's flush; different keys do run concurrently (up to the class budgets).
//
// Hooks and where they run:
//   process(key, state, work)  own fiber; may suspend. nullopt state = reload.
//   on_error(key, error)       the item's fiber, right after process failed.
//   on_evict(key, state)       own fiber; may suspend. The write-back: the key
//                              dispatches nothing until it returns.
//   on_coalesced(key, work)    the reactor fiber: must not suspend for long.
//   on_expired(key, work)      the reactor fiber: must not suspend for long.
//   on_flush_chosen(key, final) optional (called only if the processor has
//                              it): the reactor fiber, the moment it takes
//                              the key's state to flush — an idle sweep
//                              (final false) or the final flush at shutdown
//                              (true) — before on_evict's fiber starts; for
//                              harnesses that judge when a key was chosen.
//
// A C++ exception escaping process (or on_error) is a *panic*: the state moved
// into the call is gone, so the key reloads; it is counted as panicked and as
// an in-doubt failure, and panic_policy decides whether the shard carries on
// (contain) or ends the run (abort). An exception escaping on_evict is ignored
// (the key is released all the same), as the seed does.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>

#include "disposition.hpp"
#include "work.hpp"

namespace lockstep {

/// What a failed process() may have done before it failed.
enum class fallout : std::uint8_t {
    clean,     ///< nothing happened: safe to retry as is
    in_doubt,  ///< the outcome is unknown: it may have taken effect
};

/// What a shard does when process() throws.
enum class panic_policy : std::uint8_t {
    contain,  ///< drop the key's state, count it, keep serving every key
    abort,    ///< publish the stats, then end the run (rt.abort)
};

/// An error a processor returns: it says what may have happened.
template <class E>
concept ProcessError = requires(const E& e) {
    { e.fallout() } -> std::same_as<lockstep::fallout>;
};

/// What process() returns: the key's disposition, or a classified error.
template <class State, class Error>
using process_result = std::variant<disposition<State>, Error>;

// clang-format off
/// The user code a shard drives (see the table at the top of this file).
template <class P>
concept Processor =
    Work<typename P::work_type> && std::movable<typename P::state_type> &&
    ProcessError<typename P::error_type> &&
    requires(P& p, const typename P::work_type::key_type& key,
             std::optional<typename P::state_type> state, typename P::work_type work,
             typename P::state_type resident, const typename P::error_type& error) {
        { p.process(key, std::move(state), std::move(work)) }
            -> std::same_as<process_result<typename P::state_type, typename P::error_type>>;
        p.on_error(key, error);
        p.on_evict(key, std::move(resident));
        p.on_coalesced(key, std::move(work));
        p.on_expired(key, std::move(work));
    };
// clang-format on

}  // namespace lockstep
