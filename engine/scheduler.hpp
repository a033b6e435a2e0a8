// engine/scheduler.hpp — the keyed scheduler a shard drives (DESIGN.md §5,
// grommet_core::Scheduler).
//
// A pure single-threaded data structure: no threads, no clocks (the caller
// passes now_ns), no hashing. Each key has a FIFO of queued items, an optional
// resident state and a phase: idle, in flight (exactly one item dispatched) or
// flushing (its state is out at on_evict). An idle key with queued items is
// *ready* and waits in the round-robin ring of its head item's class. Every
// traversal is in key order or ring order, so identical calls give identical
// results.
//
// Invariants (check_invariants, one comparison per check):
// * pending equals the sum of every key's FIFO length.
// * in flight per class equals the keys in flight for it, and is <= its budget.
// * a key is in a ring iff it is ready, exactly once, in its head's class ring.
// * a key in flight or flushing holds no resident state.
// * a key with no items, no state and nothing outstanding is not kept at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "plant.hpp"
#include "disposition.hpp"

namespace lockstep {

using class_id = std::uint32_t;


/// Limits of one scheduler; the number of classes is max_inflight.size().
struct scheduler_config {
    std::vector<std::size_t> max_inflight;
    std::size_t max_pending = 4096;
    std::int64_t evict_after_ns = 60'000'000'000;
};

/// Gauges, as a shard publishes them on each tick.
struct scheduler_snapshot {
    std::size_t pending = 0;
    std::vector<std::size_t> inflight;
    std::size_t resident = 0;
    std::size_t flushing = 0;
};

template <class Key, class Payload, class State>
class scheduler {
public:
    /// One dispatched item: the key's resident state travels with it.
    struct dispatch {
        Key key;
        class_id cls;
        std::optional<State> state;
        Payload payload;
    };

    /// Throws std::invalid_argument naming the field on zero classes or a zero budget.
    explicit scheduler(scheduler_config cfg) : cfg_(std::move(cfg)) {
        if (cfg_.max_inflight.empty()) {
            throw std::invalid_argument("scheduler_config.max_inflight: needs at least one class");
        }
        for (std::size_t budget : cfg_.max_inflight) {
            if (budget == 0) {
                throw std::invalid_argument("scheduler_config.max_inflight: a class budget is 0");
            }
        }
        if (cfg_.max_pending == 0) {
            throw std::invalid_argument("scheduler_config.max_pending: must be > 0");
        }
        if (cfg_.evict_after_ns < 0) {
            throw std::invalid_argument("scheduler_config.evict_after_ns: must be >= 0");
        }
        rings_.resize(cfg_.max_inflight.size());
        inflight_.assign(cfg_.max_inflight.size(), 0);
    }

    /// Appends to the key's FIFO (even past max_pending: the caller gates on
    /// is_saturated). Throws std::out_of_range for an unknown class.
    void admit(Key key, class_id cls, std::optional<std::int64_t> expires_at_ns, Payload payload,
               [[maybe_unused]] std::int64_t now_ns) {
        require_class(cls, "scheduler::admit");
        // Take the node first: if that allocation throws, no empty entry is left behind.
        const std::size_t n = acquire(item{cls, expires_at_ns, std::move(payload)});
        const slot s = keys_.try_emplace(std::move(key)).first;
        entry& e = s->second;
        const bool was_empty = e.size == 0;
        if (e.ph == phase::flushing) {
            notes_ |= note_admit_while_flushing;
        }
        if (was_empty) {
            e.head = n;
        } else if (LOCKSTEP_PLANT(shards_lifo_per_key)) {
            nodes_[n].next = e.head;
            e.head = n;
            ++e.size;
            ++pending_;
            return;
        } else {
            nodes_[e.tail].next = n;
        }
        e.tail = n;
        ++e.size;
        ++pending_;
        // A non-empty idle key is already in a ring; in flight or flushing it waits.
        if (was_empty && e.ph == phase::idle) {
            rings_[cls].push_back(s);
        }
    }

    /// Branches taken since the last take_notes(), one bit each, for the
    /// shard's coverage probes (engine/probes.hpp): a pure structure has no
    /// runtime to call, so its caller reports them.
    enum note : std::uint32_t {
        note_expired = 1U << 0,                  ///< next() shed an expired head
        note_dispatched_with_deadline = 1U << 1, ///< next() dispatched an item that has a deadline
        note_budget_full = 1U << 2,              ///< next() left ready keys: the class is at budget
        note_evict_found_busy = 1U << 3,         ///< evict() skipped a resident key with queued items
        note_admit_while_flushing = 1U << 4,     ///< admit() queued on a flushing key
        note_ready_after_flush = 1U << 5,        ///< finish_evict() left the key ready
    };
    std::uint32_t take_notes() { return std::exchange(notes_, 0U); }

    /// True when queued items reach max_pending: stop admitting.
    bool is_saturated() const { return pending_ >= cfg_.max_pending; }

    /// The next ready key of class cls, with its state moved out, while the
    /// class has budget; expired head items are shed on the way, free of charge.
    std::optional<dispatch> next(class_id cls, std::int64_t now_ns) {
        require_class(cls, "scheduler::next");
        std::deque<slot>& ring = rings_[cls];
        while ((inflight_[cls] < cfg_.max_inflight[cls] || LOCKSTEP_PLANT(shards_ignore_budget)) && !ring.empty()) {
            const slot s = ring.front();
            ring.pop_front();
            entry& e = s->second;
            const item& head = *nodes_[e.head].value;
            if (head.expires_at_ns && (LOCKSTEP_PLANT(shards_shed_only_past_deadline) ? *head.expires_at_ns < now_ns
                                                                        : *head.expires_at_ns <= now_ns)) {
                expired_.emplace_back(s->first, pop_head(e));
                refile(s);
                notes_ |= note_expired;
                continue;
            }
            if (head.expires_at_ns) {
                notes_ |= note_dispatched_with_deadline;
            }
            dispatch d{s->first, cls, std::exchange(e.state, std::nullopt), pop_head(e)};
            if (d.state) {
                --resident_;
            }
            e.ph = phase::in_flight;
            e.cls = cls;
            ++inflight_[cls];
            return d;
        }
        if (!ring.empty()) {
            notes_ |= note_budget_full;
        }
        return std::nullopt;
    }

    /// The oldest shed item, in the order items expired.
    std::optional<std::pair<Key, Payload>> pop_expired() {
        if (expired_.empty()) {
            return std::nullopt;
        }
        std::pair<Key, Payload> out = std::move(expired_.front());
        expired_.pop_front();
        return out;
    }

    /// Ends the key's dispatch for cls: keep makes the state resident (last use
    /// = now_ns), drop discards it. Throws std::logic_error if not in flight for cls.
    void complete(const Key& key, class_id cls, disposition<State> d, std::int64_t now_ns) {
        const auto s = keys_.find(key);
        if (s == keys_.end() || s->second.ph != phase::in_flight) {
            throw std::logic_error("scheduler::complete: key is not in flight");
        }
        entry& e = s->second;
        if (e.cls != cls) {
            throw std::logic_error("scheduler::complete: key is in flight for another class");
        }
        --inflight_[cls];
        e.ph = phase::idle;
        e.state = d.take_state();
        if (e.state) {
            ++resident_;
            e.last_use_ns = now_ns;
        }
        if (LOCKSTEP_PLANT(shards_refile_to_front) && e.size > 0) {
            rings_[nodes_[e.head].value->cls].push_front(s);
            return;
        }
        refile(s);
    }

    /// Moves out (in key order) the state of every idle key with an empty FIFO
    /// unused for evict_after_ns, and marks those keys flushing.
    void evict(std::int64_t now_ns, std::vector<std::pair<Key, State>>& out) {
        bool flushed_ready = false;
        for (auto& [key, e] : keys_) {
            if (LOCKSTEP_PLANT(shards_evict_busy_keys) && e.ph == phase::idle && e.size > 0 && e.state &&
                now_ns - e.last_use_ns >= cfg_.evict_after_ns) {
                flushed_ready = true;  // the planted bug: a key with queued items is not idle
                start_flush(key, e, out);
            } else if (e.ph == phase::idle && e.size == 0 && e.state &&
                (now_ns - e.last_use_ns >= cfg_.evict_after_ns || LOCKSTEP_PLANT(shards_evict_ignores_age))) {
                start_flush(key, e, out);
            } else if (e.ph == phase::idle && e.size > 0 && e.state) {
                notes_ |= note_evict_found_busy;
            }
        }
        if (flushed_ready) {
            for (std::deque<slot>& ring : rings_) {
                std::erase_if(ring, [](slot s) { return s->second.ph == phase::flushing; });
            }
        }
    }

    /// Moves out (in key order) every resident state and marks those keys
    /// flushing; for shutdown. Their queued items wait for finish_evict.
    void evict_all(std::vector<std::pair<Key, State>>& out) {
        bool flushed_ready = false;
        for (auto& [key, e] : keys_) {
            if (e.state) {
                // Only an idle key holds state; a queued one is leaving its ring.
                flushed_ready = flushed_ready || e.size > 0;
                start_flush(key, e, out);
            }
        }
        if (flushed_ready) {
            // A flushing key must not dispatch, so it leaves its ring now.
            for (std::deque<slot>& ring : rings_) {
                std::erase_if(ring, [](slot s) { return s->second.ph == phase::flushing; });
            }
        }
    }

    /// The key's flush is done: it is idle with no state, and ready again if
    /// items queued meanwhile. Throws std::logic_error if it was not flushing.
    void finish_evict(const Key& key, [[maybe_unused]] std::int64_t now_ns) {
        const auto s = keys_.find(key);
        if (s == keys_.end() || s->second.ph != phase::flushing) {
            throw std::logic_error("scheduler::finish_evict: key is not flushing");
        }
        s->second.ph = phase::idle;
        --flushing_;
        if (s->second.size > 0) {
            notes_ |= note_ready_after_flush;
        }
        refile(s);
    }

    /// The gauges: pending, in flight per class, resident, flushing.
    scheduler_snapshot snapshot() const { return {pending_, inflight_, resident_, flushing_}; }

    /// Queued items, over all keys (expired ones are no longer counted).
    std::size_t pending() const { return pending_; }

    /// Nothing queued, in flight, flushing, or waiting in the expired list.
    bool idle() const {
        std::size_t inflight = 0;
        for (std::size_t n : inflight_) {
            inflight += n;
        }
        return pending_ == 0 && inflight == 0 && flushing_ == 0 && expired_.empty();
    }

    /// Number of classes (max_inflight.size()).
    std::size_t classes() const { return rings_.size(); }

    /// Keys the scheduler holds any record of; bounded by queued + resident + outstanding.
    std::size_t tracked_keys() const { return keys_.size(); }

    /// Throws std::logic_error naming the first broken invariant.
    void check_invariants() const;

private:
    static constexpr std::size_t none = static_cast<std::size_t>(-1);

    enum class phase : std::uint8_t { idle, in_flight, flushing };

    struct item {
        class_id cls;
        std::optional<std::int64_t> expires_at_ns;
        Payload payload;
    };

    // Queued items live in one pool, linked per key, with a free list, so a
    // steady state of admit/next allocates nothing.
    struct node {
        std::optional<item> value;
        std::size_t next = none;
    };

    struct entry {
        std::size_t head = none;
        std::size_t tail = none;
        std::size_t size = 0;
        std::optional<State> state;
        std::int64_t last_use_ns = 0;
        phase ph = phase::idle;
        class_id cls = 0;  // the class it is in flight for, when in flight
    };

    using table = std::map<Key, entry>;
    // Rings hold map iterators: stable until erase, and a key is only erased
    // when it holds nothing, which is never while it is in a ring.
    using slot = typename table::iterator;

    struct by_key {
        bool operator()(const Key* a, const Key* b) const { return *a < *b; }
    };

    static void check(bool ok, const char* invariant) {
        if (!ok) {
            throw std::logic_error(std::string("scheduler invariant broken: ") + invariant);
        }
    }

    void require_class(class_id cls, const char* where) const {
        if (cls >= rings_.size()) {
            throw std::out_of_range(std::string(where) + ": class " + std::to_string(cls) +
                                    " out of range");
        }
    }

    static bool is_ready(const entry& e) { return e.ph == phase::idle && e.size > 0; }

    std::size_t acquire(item it) {
        if (free_ == none) {
            nodes_.push_back(node{std::move(it), none});
            return nodes_.size() - 1;
        }
        const std::size_t n = free_;
        free_ = nodes_[n].next;
        nodes_[n] = node{std::move(it), none};
        return n;
    }

    Payload pop_head(entry& e) {
        const std::size_t n = e.head;
        Payload payload = std::move(nodes_[n].value->payload);
        e.head = nodes_[n].next;
        if (e.head == none) {
            e.tail = none;
        }
        --e.size;
        --pending_;
        nodes_[n].value.reset();
        nodes_[n].next = free_;
        free_ = n;
        return payload;
    }

    // An idle key goes to the back of its head's class ring, or, holding
    // nothing at all, is forgotten so memory stays bounded by live keys.
    void refile(slot s) {
        entry& e = s->second;
        if (e.size > 0) {
            rings_[nodes_[e.head].value->cls].push_back(s);
        } else if (!e.state) {
            keys_.erase(s);
        }
    }

    void start_flush(const Key& key, entry& e, std::vector<std::pair<Key, State>>& out) {
        out.emplace_back(key, std::move(*e.state));
        e.state.reset();
        e.ph = phase::flushing;
        --resident_;
        ++flushing_;
    }

    scheduler_config cfg_;
    table keys_;
    std::vector<node> nodes_;
    std::size_t free_ = none;
    std::vector<std::deque<slot>> rings_;
    std::deque<std::pair<Key, Payload>> expired_;
    std::vector<std::size_t> inflight_;
    std::size_t pending_ = 0;
    std::size_t resident_ = 0;
    std::size_t flushing_ = 0;
    std::uint32_t notes_ = 0;  // see take_notes()
};

template <class Key, class Payload, class State>
void scheduler<Key, Payload, State>::check_invariants() const {
    std::size_t queued = 0;
    std::size_t resident = 0;
    std::size_t flushing = 0;
    std::size_t ready = 0;
    std::vector<std::size_t> inflight(classes(), 0);
    for (const auto& [key, e] : keys_) {
        check(e.ph != phase::idle || e.size > 0 || e.state.has_value(),
              "a key holding nothing is not kept");
        std::size_t length = 0;
        for (std::size_t n = e.head; n != none; n = nodes_[n].next) {
            check(nodes_[n].value.has_value(), "a queued node holds an item");
            check(nodes_[n].value->cls < classes(), "a queued item's class exists");
            check(length < e.size, "a key's FIFO is no longer than its count");
            ++length;
        }
        check(length == e.size, "a key's FIFO length equals its count");
        check((e.size == 0) == (e.tail == none), "a FIFO has a tail iff it is non-empty");
        queued += e.size;
        resident += e.state.has_value() ? 1 : 0;
        if (e.ph == phase::in_flight) {
            check(!e.state.has_value(), "an in-flight key holds no resident state");
            check(e.cls < classes(), "an in-flight key's class exists");
            ++inflight[e.cls];
        }
        if (e.ph == phase::flushing) {
            check(!e.state.has_value(), "a flushing key holds no resident state");
            ++flushing;
        }
        ready += is_ready(e) ? 1 : 0;
    }
    check(queued == pending_, "pending equals the sum of FIFO lengths");
    std::size_t free_nodes = 0;
    for (std::size_t n = free_; n != none; n = nodes_[n].next) {
        check(!nodes_[n].value.has_value(), "a free node holds no item");
        check(free_nodes < nodes_.size(), "the free list has no cycle");
        ++free_nodes;
    }
    check(free_nodes + pending_ == nodes_.size(), "every pool node is queued or free");
    check(resident == resident_, "resident equals the keys holding state");
    check(flushing == flushing_, "flushing equals the keys in phase flushing");
    for (std::size_t c = 0; c < classes(); ++c) {
        check(inflight[c] == inflight_[c], "inflight[c] equals the keys in flight for c");
        check(inflight_[c] <= cfg_.max_inflight[c], "inflight[c] is within max_inflight[c]");
    }
    std::map<const Key*, std::size_t, by_key> seen;
    std::size_t ringed = 0;
    for (std::size_t c = 0; c < classes(); ++c) {
        for (const slot s : rings_[c]) {
            const entry& e = s->second;
            check(is_ready(e), "a key in a ring is idle with queued items");
            check(nodes_[e.head].value->cls == c, "a ready key is in its head item's class ring");
            check(seen.emplace(&s->first, c).second, "a ready key is in a ring only once");
            ++ringed;
        }
    }
    check(ringed == ready, "every ready key is in a ring");
}

}  // namespace lockstep
