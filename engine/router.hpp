// engine/router.hpp — routes work to the shard that owns its key.
//
// A router holds one bounded mailbox sender per shard and places a key on shard
// stable_hash(key) % shards, so a key always lands on the same shard, on every
// platform and replay. It stamps each accepted item with rt.now() and its
// deadline (now + ttl). submit() suspends the calling fiber while that shard's
// mailbox is full: with a saturated shard the mailbox stays full, so producers
// wait — end-to-end backpressure. try_submit() never suspends and hands the work
// back when the mailbox is full or closed. Closing (or destroying) every copy of
// the router drops the senders, which lets each shard drain and exit.
//
// launch_shards() builds the whole thing: N shards, each on its own fiber on
// core i % rt.cores() ("one shard owns one core"), and the router in front.
//
// Invariant: shards() > 0, and shard_of(key) < shards() for every key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "plant.hpp"
#include "probes.hpp"
#include "processor.hpp"
#include "runtime.hpp"
#include "shard.hpp"
#include "shard_stats.hpp"
#include "stable_hash.hpp"
#include "work.hpp"

namespace lockstep {


template <Runtime R, Work W>
requires StablyHashable<typename W::key_type>
class router {
public:
    using mail = envelope<W>;
    using mailbox = typename R::template channel<mail>;
    using sender = typename mailbox::sender;

    /// One sender per shard, in shard order. Throws std::invalid_argument when empty.
    router(R& rt, std::vector<sender> mailboxes) : rt_(&rt), senders_(std::move(mailboxes)) {
        if (senders_.empty()) {
            throw std::invalid_argument("router: needs at least one shard mailbox");
        }
        shards_ = senders_.size();
    }

    /// The shard that owns `key`; never suspends.
    [[nodiscard]] std::size_t shard_of(const typename W::key_type& key) const {
        return static_cast<std::size_t>(stable_hash(key) % shards_);
    }

    /// How many shards the router spreads keys over.
    [[nodiscard]] std::size_t shards() const { return shards_; }

    /// Await point while the key's mailbox is full; `closed` hands the work back.
    send_outcome<W> submit(W work) {
        if (senders_.empty()) {
            LOCKSTEP_PROBE(*rt_, "shards.submit_refused_closed");
            return {send_status::closed, std::move(work)};
        }
        sender& to = senders_[shard_of(work.key())];
        // try_send first only to see the full mailbox: it is the same
        // scheduling point and check a send makes, so a submit that finds
        // room runs exactly as a plain send would.
        send_outcome<mail> first = to.try_send(mail::stamp(std::move(work), rt_->now()));
        if (first.status == send_status::full && !LOCKSTEP_PLANT(shards_submit_never_waits)) {
            LOCKSTEP_PROBE(*rt_, "shards.mailbox_full_suspends");
            return unwrap(to.send(std::move(*first.returned)));
        }
        if (first.status == send_status::closed) {
            LOCKSTEP_PROBE(*rt_, "shards.submit_refused_closed");
        }
        return unwrap(std::move(first));
    }

    /// Never suspends: `full` or `closed` hands the work back.
    send_outcome<W> try_submit(W work) {
        if (senders_.empty()) {
            LOCKSTEP_PROBE(*rt_, "shards.submit_refused_closed");
            return {send_status::closed, std::move(work)};
        }
        sender& to = senders_[(shard_of(work.key()) + (LOCKSTEP_PLANT(shards_try_submit_next_shard) ? 1 : 0)) % shards_];
        send_outcome<mail> sent = to.try_send(mail::stamp(std::move(work), rt_->now()));
        if (sent.status == send_status::full) {
            LOCKSTEP_PROBE(*rt_, "shards.try_submit_refused_full");
            if (LOCKSTEP_PLANT(shards_full_reported_closed)) sent.status = send_status::closed;
        } else if (sent.status == send_status::closed) {
            LOCKSTEP_PROBE(*rt_, "shards.submit_refused_closed");
        }
        return unwrap(std::move(sent));
    }

    /// Drops this router's senders (as destroying it would); later submits
    /// report `closed`. Shards exit once every copy is closed or destroyed.
    void close() { senders_.clear(); }

    /// True once close() was called on this copy.
    [[nodiscard]] bool is_closed() const { return senders_.empty(); }

private:
    static send_outcome<W> unwrap(send_outcome<mail> sent) {
        if (sent.ok()) {
            return {send_status::sent, std::nullopt};
        }
        return {sent.status, std::move(sent.returned->work)};
    }

    R* rt_;
    std::vector<sender> senders_;
    std::size_t shards_ = 0;
};

/// N running shards and the router in front of them.
template <Runtime R, Processor P>
struct shard_group {
    router<R, typename P::work_type> route;
    /// The shards' fibers, by shard index: join() them after closing the router.
    std::vector<typename R::task> tasks;
    /// Each shard's published stats, by shard index.
    std::vector<std::shared_ptr<shard_stats<R>>> stats;

    /// Closes this router and waits for every shard to drain and exit (await point).
    void shutdown() {
        route.close();
        for (typename R::task& t : tasks) {
            t.join();
        }
    }
};

/// Starts `shards` shards, shard i on core i % rt.cores() with processor
/// make_processor(i) and a mailbox of mailbox_capacity; never suspends beyond
/// the spawns. Throws std::invalid_argument for 0 shards or capacity.
template <Runtime R, Processor P, class Factory>
requires std::is_invocable_r_v<P, Factory&, std::size_t> shard_group<R, P> launch_shards(
    R& rt, std::size_t shards, Factory make_processor, const shard_config& cfg,
    std::size_t mailbox_capacity) {
    if (shards == 0 || mailbox_capacity == 0) {
        throw std::invalid_argument("launch_shards: needs shards > 0 and mailbox_capacity > 0");
    }
    using mailbox = typename shard<R, P>::mailbox;
    std::vector<typename mailbox::sender> senders;
    std::vector<typename R::task> tasks;
    std::vector<std::shared_ptr<shard_stats<R>>> stats;
    for (std::size_t i = 0; i < shards; ++i) {
        auto channel = mailbox::bounded(rt, mailbox_capacity);
        senders.push_back(std::move(channel.first));
        stats.push_back(std::make_shared<shard_stats<R>>(rt));
        const auto core = static_cast<std::uint32_t>(i % rt.cores());
        tasks.push_back(
            rt.spawn_on(core, "shard." + std::to_string(i),
                        [&rt, rx = std::move(channel.second), p = P(make_processor(i)), s = stats.back(),
                         cfg]() mutable { run_shard<R, P>(rt, std::move(rx), std::move(p), s, cfg); }));
    }
    return shard_group<R, P>{router<R, typename P::work_type>(rt, std::move(senders)), std::move(tasks),
                             std::move(stats)};
}

}  // namespace lockstep
