// engine/work.hpp — what a unit of work must say about itself, and the
// envelope it travels in from the router to its shard.
//
// A work item names its key (which fixes its shard and its serial lane), its
// class (which budget it spends), an optional time to live (shed, never
// processed, once its deadline has passed at dispatch) and an optional request
// id (for coalescing a retry with an outstanding original).
//
// The router stamps an envelope when it accepts the work: enqueued_ns is the
// router's now(), expires_at_ns = enqueued_ns + ttl (saturating). The shard
// keeps the stamped part (enqueued time, request id, work) in its scheduler.
// Invariant: an envelope's key, class and request id equal the work's own.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "scheduler.hpp"

namespace lockstep {

// clang-format off
/// A unit of work: keyed, classed, optionally deadlined and identified.
template <class W>
concept Work = std::movable<W> &&
    std::copyable<typename W::key_type> && std::totally_ordered<typename W::key_type> &&
    std::copyable<typename W::id_type> && std::totally_ordered<typename W::id_type> &&
    requires(const W& w) {
        { w.key() } -> std::convertible_to<typename W::key_type>;
        { w.cls() } -> std::convertible_to<class_id>;
        { w.ttl_ns() } -> std::convertible_to<std::optional<std::int64_t>>;
        { w.request_id() } -> std::convertible_to<std::optional<typename W::id_type>>;
    };
// clang-format on

/// What the scheduler queues for one admitted item.
template <Work W>
struct stamped {
    std::int64_t enqueued_ns = 0;
    /// Set only when the shard tracks the id for coalescing, so it can release it.
    std::optional<typename W::id_type> request_id;
    W work;
};

/// A work item as it sits in a shard's mailbox.
template <Work W>
struct envelope {
    typename W::key_type key;
    class_id cls;
    std::optional<typename W::id_type> request_id;
    std::optional<std::int64_t> expires_at_ns;
    std::int64_t enqueued_ns;
    W work;

    /// Stamps `work` as accepted at now_ns; never suspends.
    static envelope stamp(W work, std::int64_t now_ns) {
        std::optional<std::int64_t> expires;
        if (const std::optional<std::int64_t> ttl = work.ttl_ns()) {
            expires = saturating_add(now_ns, *ttl);
        }
        typename W::key_type key = work.key();
        const class_id cls = work.cls();
        std::optional<typename W::id_type> id = work.request_id();
        return envelope{std::move(key), cls, std::move(id), expires, now_ns, std::move(work)};
    }

private:
    // A ttl of "forever" (INT64_MAX) must not wrap into the past.
    static std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
        if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b) {
            return std::numeric_limits<std::int64_t>::max();
        }
        if (b < 0 && a < std::numeric_limits<std::int64_t>::min() - b) {
            return std::numeric_limits<std::int64_t>::min();
        }
        return a + b;
    }
};

}  // namespace lockstep
