// engine/shard.hpp — the per-core shard reactor (grommet `shard::run`).
//
// One shard owns one core, one scheduler, one processor and every key routed to
// it. Its reactor is a single fiber; nothing it holds is shared, so it needs no
// locks. Each dispatched item and each flush runs on its own fiber on the
// reactor's core and reports back over an unbounded completion channel.
//
// A turn of the reactor:
//   1. dispatch: fill every class budget from its round-robin ring;
//   2. shed: hand every expired head item to on_expired, releasing its id;
//      repeat 1-2 while anything expired (see run());
//   3. if the mailbox is closed and nothing is outstanding: flush every
//      resident state once (on_evict), wait for those flushes, then exit;
//   4. otherwise take one ready source, polled from a random start as tokio's
//      select! without `biased` does: a completion; the mailbox (only while it
//      is open and the scheduler is not saturated: at the cap the bounded
//      mailbox fills and the router's submit suspends its caller, which is the
//      backpressure); the tick (only while open). With none ready, wait on one
//      notify that both channels signal, until the next tick.
//
// Invariants (checked after every turn when shard_config::check_invariants):
// * outstanding fibers == items in flight (all classes) + keys flushing;
// * queued items <= max_pending (admission stops at the cap);
// * with coalescing, live (key, request id)s <= queued + in-flight items;
// * the scheduler's own invariants hold.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "plant.hpp"
#include "probes.hpp"
#include "processor.hpp"
#include "runtime.hpp"
#include "scheduler.hpp"
#include "shard_stats.hpp"
#include "work.hpp"

namespace lockstep {


/// How a shard runs; defaults follow the seed's ShardConfig::new.
struct shard_config {
    scheduler_config scheduler;
    /// Mailbox items admitted per turn at most: one awaited, the rest already there.
    std::size_t admit_batch = 64;
    /// How often gauges are published and the idle sweep runs.
    std::int64_t tick_ns = 1'000'000'000;
    /// What a throw from process() does (the seed's PanicPolicy; contain by default).
    panic_policy on_panic = panic_policy::contain;
    /// Suppress an item whose request id matches a queued or in-flight one of its key.
    bool coalesce_duplicates = false;
    /// Check the scheduler's and the reactor's invariants after every turn.
#ifdef NDEBUG
    bool check_invariants = false;
#else
    bool check_invariants = true;
#endif

    /// The seed's ShardConfig::new: these budgets, everything else default.
    static shard_config with_budgets(std::vector<std::size_t> max_inflight) {
        shard_config cfg;
        cfg.scheduler.max_inflight = std::move(max_inflight);
        return cfg;
    }
};

template <Runtime R, Processor P>
class shard {
public:
    using work_type = typename P::work_type;
    using key_type = typename work_type::key_type;
    using id_type = typename work_type::id_type;
    using state_type = typename P::state_type;
    using error_type = typename P::error_type;
    using mail = envelope<work_type>;
    using mailbox = typename R::template channel<mail>;

    /// Takes the mailbox's receiving end; publishes into `stats`.
    shard(R& rt, typename mailbox::receiver rx, P processor, std::shared_ptr<shard_stats<R>> stats,
          shard_config cfg)
        : rt_(rt),
          cfg_(std::move(cfg)),
          stats_(std::move(stats)),
          book_(cfg_.scheduler),
          wake_(rt),
          mail_rx_(std::move(rx)) {
        auto done = completions::unbounded(rt);
        done_rx_ = std::move(done.second);
        common_ = std::make_shared<common>(
            common{std::move(processor), std::move(done.first)});
        mail_rx_.attach(wake_);
        done_rx_.attach(wake_);
    }
    shard(const shard&) = delete;
    shard& operator=(const shard&) = delete;

    /// Runs until the mailbox closes and everything outstanding drains; suspends.
    void run() {
        std::int64_t now = rt_.now();
        next_tick_ns_ = now;  // like tokio's interval, the first tick is due at once
        while (true) {
            // Shedding an expired head can refile its key into the ring of an
            // earlier class, already passed this round: go round again until
            // nothing expires, or a ready key could be stranded at shutdown.
            do {
                dispatch_ready(now);
            } while (shed_expired() > 0);
            verify();
            if (!open_ && outstanding_ == 0) {
                // Resident state is a write-back cache: the scheduler holds the
                // only copy. Nothing can arrive or dispatch any more, so one pass
                // hands every state to on_evict and those flushes are the last work.
                if (std::exchange(final_flush_due_, false) && !LOCKSTEP_PLANT(shards_skip_final_flush)) {
                    book_.evict_all(flush_buf_);
                    if (!flush_buf_.empty()) {
                        LOCKSTEP_PROBE(rt_, "shards.final_flush_resident");
                    }
                    report_notes();
                    start_flushes();
                    if (LOCKSTEP_PLANT(shards_publish_before_flushes_end)) {
                        publish();  // the planted bug: the write-backs are still out
                    }
                }
                if (outstanding_ == 0) {
                    break;
                }
            }
            if (!take_one_ready(now)) {
                wait();
                now = rt_.now();
            }
        }
        if (!LOCKSTEP_PLANT(shards_publish_before_flushes_end) && !LOCKSTEP_PLANT(shards_no_publish_on_exit)) {
            publish();
        }
    }

private:
    using book = scheduler<key_type, stamped<work_type>, state_type>;
    using dispatch = typename book::dispatch;

    /// A dispatched item finished, however it finished.
    struct ran {
        key_type key;
        class_id cls;
        std::optional<disposition<state_type>> kept;  // nullopt: drop
        std::optional<id_type> request_id;            // to release from live_
        std::optional<lockstep::fallout> failure;     // set when it failed
        bool panicked = false;
        std::string panic_what;
    };
    /// A key's flush finished: the key can be released.
    struct flushed {
        key_type key;
    };
    using outcome = std::variant<ran, flushed>;
    using completions = typename R::template channel<outcome>;

    /// What item and flush fibers share with the reactor; they may outlive it
    /// only when the run is torn down, so they hold it by shared_ptr.
    struct common {
        P processor;
        typename completions::sender done;
    };

    // --- turn steps ----------------------------------------------------------

    void dispatch_ready(std::int64_t now) {
        for (class_id c = 0; c < book_.classes(); ++c) {
            while (std::optional<dispatch> d = book_.next(c, now)) {
                if (LOCKSTEP_PLANT(shards_release_id_at_dispatch) && d->payload.request_id) {
                    live_.erase({d->key, *d->payload.request_id});
                }
                hot_.queue_wait_ns += LOCKSTEP_PLANT(shards_queue_wait_absolute)
                                          ? now
                                          : std::max<std::int64_t>(0, now - d->payload.enqueued_ns);
                ++outstanding_;
                (void)rt_.spawn("shard.process", [shared = common_, item = std::move(*d)]() mutable {
                    run_item(*shared, std::move(item));
                });
            }
        }
        report_notes();
    }

    /// Turns the scheduler's notes (scheduler::take_notes) into probes.
    void report_notes() {
        if constexpr (!R::probes_enabled) {
            return;  // the notes just accumulate, unread
        }
        const std::uint32_t n = book_.take_notes();
        if (n == 0) {
            return;
        }
        if ((n & book::note_expired) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.expired_at_dispatch");
        }
        if ((n & book::note_dispatched_with_deadline) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.dispatched_with_deadline");
        }
        if ((n & book::note_budget_full) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.class_budget_full");
        }
        if ((n & book::note_evict_found_busy) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.evict_found_busy");
        }
        if ((n & book::note_admit_while_flushing) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.admit_while_flushing");
        }
        if ((n & book::note_ready_after_flush) != 0) {
            LOCKSTEP_PROBE(rt_, "shards.dispatch_after_flush");
        }
    }

    /// Hands every expired item to on_expired; returns how many there were.
    std::size_t shed_expired() {
        std::size_t shed = 0;
        while (std::optional<std::pair<key_type, stamped<work_type>>> e = book_.pop_expired()) {
            ++shed;
            if (!LOCKSTEP_PLANT(shards_expiry_uncounted)) {
                ++hot_.expired;
            }
            if (e->second.request_id && !LOCKSTEP_PLANT(shards_keep_expired_request_ids)) {
                live_.erase({e->first, *e->second.request_id});
            }
            if (!LOCKSTEP_PLANT(shards_lose_expired)) {
                common_->processor.on_expired(e->first, std::move(e->second.work));
            }
        }
        return shed;
    }

    /// Polls the three sources from a random start; false when none was ready.
    bool take_one_ready(std::int64_t& now) {
        const std::uint64_t start = rt_.random() % 3;
        for (std::uint64_t i = 0; i < 3; ++i) {
            switch ((start + i) % 3) {
                case 0:
                    if (outstanding_ > 0) {
                        recv_outcome<outcome> r = done_rx_.try_recv();
                        if (r.status == recv_status::item) {
                            harvest(std::move(*r.item), now);
                            return true;
                        }
                    }
                    break;
                case 1:
                    if (open_ && book_.is_saturated() && !LOCKSTEP_PLANT(shards_ignore_pending_cap)) {
                        LOCKSTEP_PROBE(rt_, "shards.pending_cap_reached");
                    }
                    if (open_ && (!book_.is_saturated() || LOCKSTEP_PLANT(shards_ignore_pending_cap))) {
                        recv_outcome<mail> r = mail_rx_.try_recv();
                        if (r.status == recv_status::item) {
                            admit_ready(std::move(*r.item), now);
                            return true;
                        }
                        if (r.status == recv_status::closed) {
                            if (outstanding_ > 0) {
                                LOCKSTEP_PROBE(rt_, "shards.close_found_inflight");
                            } else {
                                LOCKSTEP_PROBE(rt_, "shards.close_found_idle");
                            }
                            open_ = false;  // the router is gone: stop admitting, drain
                            return true;
                        }
                    }
                    break;
                default:
                    if (open_ && rt_.now() >= next_tick_ns_) {
                        on_tick(now);
                        return true;
                    }
                    break;
            }
        }
        return false;
    }

    void wait() {
        // Every arrival on either channel stores a permit in wake_, so an
        // arrival between the polls above and this wait is not lost.
        if (open_) {
            (void)wake_.notified_until(next_tick_ns_);
        } else {
            wake_.notified();
        }
    }

    // --- sources -------------------------------------------------------------

    void harvest(outcome o, std::int64_t& now) {
        const std::int64_t at = rt_.now();
        if (ran* r = std::get_if<ran>(&o)) {
            if (!r->failure || !LOCKSTEP_PLANT(shards_completed_counts_successes)) {
                ++hot_.completed;
            }
            if (r->failure && (*r->failure == fallout::in_doubt || !LOCKSTEP_PLANT(shards_clean_error_not_failed))) {
                ++hot_.failed;
            }
            if (r->failure) {
                if (*r->failure == fallout::in_doubt && !(LOCKSTEP_PLANT(shards_panic_not_in_doubt) && r->panicked)) {
                    ++hot_.in_doubt;
                    if (!r->panicked) {
                        LOCKSTEP_PROBE(rt_, "shards.failed_in_doubt");
                    }
                } else {
                    LOCKSTEP_PROBE(rt_, "shards.failed_clean");
                }
            }
            if (r->panicked) {
                if (!LOCKSTEP_PLANT(shards_panic_uncounted)) {
                    ++hot_.panicked;
                }
                if (cfg_.on_panic == panic_policy::abort) {
                    LOCKSTEP_PROBE(rt_, "shards.panic_abort");
                    publish();
                    rt_.abort("shard: process() panicked (panic_policy::abort): " + r->panic_what);
                }
                LOCKSTEP_PROBE(rt_, "shards.panic_contained");
            }
            if (r->request_id) {
                live_.erase({r->key, *r->request_id});
            }
            book_.complete(r->key, r->cls, r->kept ? std::move(*r->kept) : disposition<state_type>::drop(),
                           at);
        } else {
            book_.finish_evict(std::get<flushed>(o).key, at);
            report_notes();
        }
        --outstanding_;
        now = rt_.now();
        hot_.busy_ns += now - at;
    }

    void admit_ready(mail first, std::int64_t& now) {
        const std::int64_t at = rt_.now();
        admit_one(std::move(first), at);
        // Only what is already queued, and a bounded amount of it, so a burst of
        // arrivals delays completion harvesting by at most admit_batch items.
        for (std::size_t n = 1; n < std::max<std::size_t>(cfg_.admit_batch, 1); ++n) {
            if (book_.is_saturated() && !LOCKSTEP_PLANT(shards_ignore_pending_cap)) {
                break;
            }
            recv_outcome<mail> r = mail_rx_.try_recv();
            if (r.status != recv_status::item) {
                break;  // empty, or closed: the next poll notices the closure
            }
            admit_one(std::move(*r.item), at);
        }
        now = rt_.now();
        hot_.busy_ns += now - at;
    }

    void admit_one(mail m, std::int64_t now) {
        if (LOCKSTEP_PLANT(shards_started_before_coalescing)) {
            ++hot_.started;
        }
        std::optional<id_type> tracked;
        if (m.request_id && cfg_.coalesce_duplicates) {
            // Keyed by (key, id): an id reused by another key is not a duplicate.
            if (!live_.emplace(m.key, *m.request_id).second) {
                LOCKSTEP_PROBE(rt_, "shards.coalesced_duplicate");
                if (!LOCKSTEP_PLANT(shards_coalesced_uncounted)) {
                    ++hot_.coalesced;
                }
                common_->processor.on_coalesced(m.key, std::move(m.work));
                return;
            }
            tracked = std::move(m.request_id);
        }
        if (!LOCKSTEP_PLANT(shards_started_before_coalescing)) {
            ++hot_.started;
        }
        if (m.expires_at_ns && *m.expires_at_ns <= now) {
            LOCKSTEP_PROBE(rt_, "shards.expired_in_mailbox");
        }
        book_.admit(std::move(m.key), m.cls, m.expires_at_ns,
                    stamped<work_type>{m.enqueued_ns, std::move(tracked), std::move(m.work)}, now);
        report_notes();
    }

    void on_tick(std::int64_t& now) {
        publish();
        now = rt_.now();
        book_.evict(now, flush_buf_);
        if (!flush_buf_.empty()) {
            LOCKSTEP_PROBE(rt_, "shards.evicted_idle");
        }
        report_notes();
        start_flushes();
        // tokio's default MissedTickBehavior::Burst: late ticks fire back to back.
        next_tick_ns_ += std::max<std::int64_t>(cfg_.tick_ns, 1);
    }

    void start_flushes() {
        for (auto& [key, state] : flush_buf_) {
            if constexpr (requires(P& p, const key_type& k) { p.on_flush_chosen(k, true); }) {
                common_->processor.on_flush_chosen(key, !open_);  // sweeps run only while open
            }
            if (open_ || !LOCKSTEP_PLANT(shards_final_flush_uncounted)) {
                ++hot_.evicted;
            }
            ++outstanding_;
            (void)rt_.spawn("shard.flush",
                            [shared = common_, k = std::move(key), s = std::move(state)]() mutable {
                                run_flush(*shared, std::move(k), std::move(s));
                            });
        }
        flush_buf_.clear();
    }

    void publish() { stats_->publish(hot_, book_.snapshot()); }

    void verify() const {
        if (!cfg_.check_invariants) {
            return;
        }
        book_.check_invariants();
        const scheduler_snapshot snap = book_.snapshot();
        std::size_t inflight = 0;
        for (std::size_t n : snap.inflight) {
            inflight += n;
        }
        check(outstanding_ == inflight + snap.flushing, "outstanding == in flight + flushing");
        check(snap.pending <= cfg_.scheduler.max_pending,
              "pending <= max_pending: admission stops at the cap");
        check(!cfg_.coalesce_duplicates || LOCKSTEP_PLANT(shards_keep_expired_request_ids) ||
                  live_.size() <= snap.pending + inflight,
              "live request ids <= queued + in-flight items");
    }

    static void check(bool ok, const char* invariant) {
        if (!ok) {
            throw std::logic_error(std::string("shard invariant broken: ") + invariant);
        }
    }

    // --- fibers ----------------------------------------------------------------

    /// One dispatched item, start to finish, on its own fiber.
    static void run_item(common& shared, dispatch d) {
        if (LOCKSTEP_PLANT(shards_complete_before_process)) {
            // The planted bug frees the key's slot at once, so the key's next item
            // can dispatch while this one is still in process().
            (void)shared.done.send(
                outcome{ran{d.key, d.cls, std::nullopt, d.payload.request_id, std::nullopt, false, {}}});
            try {
                (void)shared.processor.process(d.key, std::move(d.state), std::move(d.payload.work));
            } catch (const fiber_cancelled&) {
                throw;
            } catch (const run_aborted&) {
                throw;
            } catch (...) {
            }
            return;
        }
        ran r{d.key, d.cls, std::nullopt, std::move(d.payload.request_id), std::nullopt, false, {}};
        // A throw must not unwind the reactor: it would strand every key of the
        // shard and the in-flight accounting. The state moved in is gone either
        // way, so the key reloads. Nothing suspends inside the catch blocks.
        try {
            process_result<state_type, error_type> result =
                shared.processor.process(d.key, std::move(d.state), std::move(d.payload.work));
            if (auto* kept = std::get_if<0>(&result)) {
                r.kept = std::move(*kept);
            } else {
                // The processor no longer holds state it can trust: drop it.
                const error_type& error = std::get<1>(result);
                r.failure = error.fallout();
                shared.processor.on_error(d.key, error);
            }
        } catch (const fiber_cancelled&) {
            throw;
        } catch (const run_aborted&) {
            throw;  // rt.abort or a simulated oracle ends the run; it is no panic
        } catch (const std::exception& e) {
            r.panicked = true;
            r.panic_what = e.what();
        } catch (...) {
            r.panicked = true;
            r.panic_what = "a non-std exception";
        }
        if (r.panicked) {
            // A panic says nothing about what the work did before it.
            r.kept.reset();
            r.failure = fallout::in_doubt;
        }
        (void)shared.done.send(outcome{std::move(r)});
    }

    /// One key's flush; the key stays quiesced until the reactor hears back.
    static void run_flush(common& shared, key_type key, state_type state) {
        try {
            shared.processor.on_evict(key, std::move(state));
        } catch (const fiber_cancelled&) {
            throw;
        } catch (const run_aborted&) {
            throw;  // rt.abort or a simulated oracle ends the run; it is no panic
        } catch (...) {
            // Ignored, as the seed does: the state is gone and the key is released.
        }
        (void)shared.done.send(outcome{flushed{std::move(key)}});
    }

    R& rt_;
    shard_config cfg_;
    std::shared_ptr<shard_stats<R>> stats_;
    book book_;
    // Declared before the receivers it is attached to, so it outlives them.
    typename R::notify wake_;
    typename mailbox::receiver mail_rx_;
    typename completions::receiver done_rx_;
    std::shared_ptr<common> common_;
    shard_counters hot_;
    std::set<std::pair<key_type, id_type>> live_;  // request ids queued or in flight
    std::vector<std::pair<key_type, state_type>> flush_buf_;
    std::size_t outstanding_ = 0;  // item and flush fibers not yet harvested
    std::int64_t next_tick_ns_ = 0;
    bool open_ = true;
    bool final_flush_due_ = true;
};

/// Runs one shard on the calling fiber until it drains (see shard::run).
template <Runtime R, Processor P>
void run_shard(R& rt, typename shard<R, P>::mailbox::receiver rx, P processor,
               std::shared_ptr<shard_stats<R>> stats, shard_config cfg) {
    shard<R, P>(rt, std::move(rx), std::move(processor), std::move(stats), std::move(cfg)).run();
}

}  // namespace lockstep
