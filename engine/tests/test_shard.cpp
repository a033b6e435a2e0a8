// Goal: the shard reactor and its router behave as grommet's shard does — every
// test of the seed's `mod tests`, with its setup (budgets [4, 4], tick 1 ms,
// evict_after 3600 s, mailbox 64, a recording processor), plus abort policy,
// backpressure, try_submit hand-back, the stable hash and multi-shard routing.
//
// Each seed test runs under `fifo` (one fixed schedule) and 20 seeds each of
// `random` and `pct`. Where the seed asserts an order across keys, that order
// is the one tokio's FIFO polling gives; our `fifo` strategy runs ready fibers
// oldest first, so the dispatched items of one turn run in dispatch order and
// the exact order is asserted under fifo. The reactor's select stays random
// under every strategy (rt.random(), as tokio's select! is): none of the exact
// orders depends on which ready source the reactor takes first, because all
// the items in question are admitted in one batch before any of them runs.
// Under random and pct the per-key sequences and the totals are asserted.
#define BOOST_TEST_MODULE engine_shard
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/stable_hash.hpp"
#include "sim/runtime.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep;
using lockstep::sim::runtime;
using lockstep::sim::testing::config;

namespace {

constexpr class_id io = 0;
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t secs = 1'000 * ms;

struct item {
    using key_type = std::uint64_t;
    using id_type = std::uint64_t;
    std::uint64_t k = 0;
    class_id c = io;
    std::optional<std::int64_t> ttl;
    std::optional<std::uint64_t> id;

    key_type key() const { return k; }
    class_id cls() const { return c; }
    std::optional<std::int64_t> ttl_ns() const { return ttl; }
    std::optional<id_type> request_id() const { return id; }

    static item of(std::uint64_t key) { return item{key, io, std::nullopt, std::nullopt}; }
    static item retry(std::uint64_t key, std::uint64_t request) {
        return item{key, io, std::nullopt, request};
    }
};

using processed_t = std::vector<std::pair<std::uint64_t, std::optional<std::uint64_t>>>;

/// Everything the shard did, in order, so tests assert on behaviour, not timing.
struct event_log {
    processed_t processed;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> evicted;
    std::vector<std::uint64_t> expired;
    std::vector<std::uint64_t> failed;
    std::vector<std::uint64_t> coalesced;
    std::set<std::uint32_t> cores;
    /// Runs inside process() after logging; may suspend (a gate, a sleep).
    std::function<void(std::uint64_t)> pause;
};

/// An error whose outcome is unknown (or, optionally, known clean).
struct fault {
    lockstep::fallout how = lockstep::fallout::in_doubt;
    lockstep::fallout fallout() const { return how; }
};

struct recorder {
    using work_type = item;
    using state_type = std::uint64_t;
    using error_type = fault;

    std::shared_ptr<event_log> log = std::make_shared<event_log>();
    std::optional<std::uint64_t> panic_on;
    std::optional<std::uint64_t> fail_on;
    lockstep::fallout fail_how = lockstep::fallout::in_doubt;

    static recorder panicking_on(std::uint64_t key) {
        recorder r;
        r.panic_on = key;
        return r;
    }
    static recorder failing_on(std::uint64_t key, lockstep::fallout how = lockstep::fallout::in_doubt) {
        recorder r;
        r.fail_on = key;
        r.fail_how = how;
        return r;
    }

    process_result<std::uint64_t, fault> process(const std::uint64_t& key, std::optional<std::uint64_t> state,
                                                 item) {
        log->processed.emplace_back(key, state);
        if (log->pause) {
            log->pause(key);
        }
        if (panic_on == key) {
            throw std::runtime_error("deliberate processor panic");
        }
        if (fail_on == key) {
            return fault{fail_how};
        }
        return disposition<std::uint64_t>::keep(state.value_or(0) + 1);
    }
    void on_error(const std::uint64_t& key, const fault&) { log->failed.push_back(key); }
    void on_coalesced(const std::uint64_t& key, item) { log->coalesced.push_back(key); }
    void on_evict(const std::uint64_t& key, std::uint64_t state) { log->evicted.emplace_back(key, state); }
    void on_expired(const std::uint64_t& key, item) { log->expired.push_back(key); }
};

static_assert(Processor<recorder>);

using mailbox_t = shard<runtime, recorder>::mailbox;
using router_t = router<runtime, item>;

shard_config base_config() {
    shard_config cfg = shard_config::with_budgets({4, 4});
    cfg.tick_ns = 1 * ms;
    cfg.scheduler.evict_after_ns = 3600 * secs;
    cfg.check_invariants = true;
    return cfg;
}

struct driven {
    sim::run_result run;
    shard_stats_snapshot stats;
};

/// Runs a shard on core 0 beside `driver(rt, router[, stats])`, then closes the
/// router and waits for the shard to drain (the seed's `drive`).
template <class Driver, class Proc = recorder>
driven drive(const sim::run_config& rc, Proc processor, shard_config cfg, Driver driver,
             std::size_t capacity = 64) {
    using mailbox = typename shard<runtime, Proc>::mailbox;
    driven out;
    out.run = sim::run(rc, [&](runtime& rt) {
        auto channel = mailbox::bounded(rt, capacity);
        auto stats = std::make_shared<shard_stats<runtime>>(rt);
        std::vector<typename mailbox::sender> senders;
        senders.push_back(std::move(channel.first));
        router_t route(rt, std::move(senders));
        auto engine =
            rt.spawn("shard", [&rt, rx = std::move(channel.second), processor, stats, cfg]() mutable {
                run_shard(rt, std::move(rx), std::move(processor), stats, cfg);
            });
        if constexpr (std::is_invocable_v<Driver&, runtime&, router_t&, shard_stats<runtime>&>) {
            driver(rt, route, *stats);
        } else {
            driver(rt, route);
        }
        route.close();
        engine.join();
        out.stats = stats->read();
    });
    return out;
}

/// Calls body(run_config, exact) for fifo (exact == true), then 20 seeds each
/// of random and pct.
template <class Body>
void for_each_schedule(Body body, std::uint32_t cores = 1) {
    body(config(0, "fifo", cores), true);
    for (const char* strategy : {"random", "pct"}) {
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            BOOST_TEST_CONTEXT("strategy " << strategy << ", seed " << seed) {
                body(config(seed, strategy, cores), false);
            }
        }
    }
}

std::map<std::uint64_t, std::vector<std::optional<std::uint64_t>>> by_key(const processed_t& processed) {
    std::map<std::uint64_t, std::vector<std::optional<std::uint64_t>>> out;
    for (const auto& [key, state] : processed) {
        out[key].push_back(state);
    }
    return out;
}

/// The failure message of a run, or "" when it held.
std::string why(const sim::run_result& r) {
    return r.failed ? r.failed->message : std::string();
}

using states = std::vector<std::optional<std::uint64_t>>;

void submit_ok(router_t& route, item work) {
    BOOST_TEST_REQUIRE(route.submit(std::move(work)).ok());
}

}  // namespace

// --- the seed's tests --------------------------------------------------------

BOOST_AUTO_TEST_CASE(one_key_is_processed_in_submission_order_with_accumulating_state) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            for (int i = 0; i < 3; ++i) submit_ok(route, item::of(7));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->processed == processed_t{{7, std::nullopt}, {7, 1}, {7, 2}}),
                   "state must follow the key across dispatches, in order");
        BOOST_TEST(d.stats.counters.completed == 3u);
        BOOST_TEST(d.stats.counters.panicked == 0u);
    });
}

BOOST_AUTO_TEST_CASE(a_panicking_processor_is_contained_and_the_shard_keeps_serving) {
    for_each_schedule([](const sim::run_config& rc, bool exact) {
        recorder p = recorder::panicking_on(1);
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(2));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        if (exact) {
            // Key 2 runs beside key 1 rather than behind its panics, and key 1's
            // second item sees no state because the first panic dropped it.
            BOOST_TEST(
                (p.log->processed == processed_t{{1, std::nullopt}, {2, std::nullopt}, {1, std::nullopt}}));
        }
        auto keys = by_key(p.log->processed);
        BOOST_TEST((keys[1] == states{std::nullopt, std::nullopt}),
                   "a panic drops the panicking key's state");
        BOOST_TEST((keys[2] == states{std::nullopt}));
        BOOST_TEST(d.stats.counters.panicked == 2u);
        BOOST_TEST(d.stats.counters.completed == 3u, "a panicked item still completes its slot");
        BOOST_TEST(d.stats.counters.in_doubt == 2u);
        BOOST_TEST(d.stats.counters.failed == 2u);
    });
}

BOOST_AUTO_TEST_CASE(work_past_its_deadline_is_shed_at_dispatch_without_being_processed) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            item shed = item::of(5);
            shed.ttl = 0;
            submit_ok(route, shed);
            submit_ok(route, item::of(6));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->expired == std::vector<std::uint64_t>{5}), "the deadline had passed at dispatch");
        BOOST_TEST((p.log->processed == processed_t{{6, std::nullopt}}),
                   "shed work never reaches the processor");
        BOOST_TEST(d.stats.counters.expired == 1u);
        BOOST_TEST(d.stats.counters.started == 2u);
    });
}

BOOST_AUTO_TEST_CASE(idle_state_is_flushed_through_on_evict_and_reloaded_afterwards) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        cfg.scheduler.evict_after_ns = 0;
        auto log = p.log;
        auto d = drive(rc, p, cfg, [log](runtime& rt, router_t& route) {
            submit_ok(route, item::of(4));
            // Virtual time only moves when every fiber waits, so each sleep lets
            // the shard's tick fire and sweep.
            for (int i = 0; i < 50 && log->evicted.empty(); ++i) rt.sleep_for(1 * ms);
            submit_ok(route, item::of(4));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->evicted == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{4, 1}, {4, 1}}),
                   "the idle sweep flushes the first state, and shutdown flushes the second");
        BOOST_TEST((p.log->processed == processed_t{{4, std::nullopt}, {4, std::nullopt}}),
                   "a flushed key reloads instead of reusing released state");
        BOOST_TEST(d.stats.counters.evicted == 2u);
    });
}

/// A recorder that also has the optional on_flush_chosen hook.
struct chooser : recorder {
    std::shared_ptr<std::vector<std::pair<std::uint64_t, bool>>> chosen =
        std::make_shared<std::vector<std::pair<std::uint64_t, bool>>>();
    void on_flush_chosen(const std::uint64_t& key, bool final) { chosen->emplace_back(key, final); }
};
static_assert(Processor<chooser>);

BOOST_AUTO_TEST_CASE(a_processor_with_on_flush_chosen_sees_each_sweep_and_the_final_flush_choose) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        chooser p;
        shard_config cfg = base_config();
        cfg.scheduler.evict_after_ns = 0;
        auto chosen = p.chosen;
        auto log = p.log;
        auto d = drive(rc, p, cfg, [log](runtime& rt, router_t& route) {
            submit_ok(route, item::of(4));
            for (int i = 0; i < 50 && log->evicted.empty(); ++i) rt.sleep_for(1 * ms);
            submit_ok(route, item::of(5));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((*chosen == std::vector<std::pair<std::uint64_t, bool>>{{4, false}, {5, true}}),
                   "key 4 is chosen by an idle sweep, key 5 by the final flush, each before its on_evict");
        BOOST_TEST(log->evicted.size() == 2u);
    });
}

BOOST_AUTO_TEST_CASE(state_still_resident_at_shutdown_is_flushed_before_the_shard_exits) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(2));
            submit_ok(route, item::of(1));
            route.close();
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        auto evicted = p.log->evicted;
        std::sort(evicted.begin(), evicted.end());
        BOOST_TEST((evicted == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 2}, {2, 1}}),
                   "a write-back cache must not drop its writes on a clean shutdown");
    });
}

BOOST_AUTO_TEST_CASE(an_expired_item_releases_its_request_id_for_a_later_retry) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        cfg.coalesce_duplicates = true;
        auto d = drive(rc, p, cfg, [](runtime& rt, router_t& route) {
            // Shed at dispatch, so this id never reaches a completion: expiry
            // is the only other place that releases it.
            item first = item::retry(3, 77);
            first.ttl = 0;
            BOOST_TEST_REQUIRE(route.try_submit(first).ok());
            rt.sleep_for(5 * ms);
            submit_ok(route, item::retry(3, 77));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->expired == std::vector<std::uint64_t>{3}));
        BOOST_TEST(p.log->coalesced.empty(), "the original expired, so nothing was live to match");
        BOOST_TEST((p.log->processed == processed_t{{3, std::nullopt}}),
                   "an expired item must release its id rather than black-hole the key's retries");
    });
}

BOOST_AUTO_TEST_CASE(queued_work_is_drained_after_the_mailbox_closes) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        // One item in flight at a time, so most of the batch is still queued
        // when the router goes away.
        cfg.scheduler.max_inflight = {1, 1};
        auto d = drive(rc, p, cfg, [](runtime&, router_t& route) {
            for (std::uint64_t key = 0; key < 16; ++key) submit_ok(route, item::of(key));
            route.close();
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(p.log->processed.size() == 16u, "shutdown must not discard queued work");
        BOOST_TEST(p.log->evicted.size() == 16u);
    });
}

BOOST_AUTO_TEST_CASE(class_budgets_are_published_per_class) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            item one = item::of(1);
            one.c = 1;
            submit_ok(route, one);
            submit_ok(route, item::of(2));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(d.stats.counters.started == 2u);
        BOOST_TEST(d.stats.counters.completed == 2u);
        BOOST_TEST(d.stats.gauges.pending == 0u, "everything drained");
        BOOST_TEST(d.stats.gauges.resident == 0u, "shutdown released every key it flushed");
        BOOST_TEST((d.stats.gauges.inflight == std::vector<std::size_t>{0, 0}), "one gauge per class");
    });
}

BOOST_AUTO_TEST_CASE(an_in_doubt_failure_drops_state_and_is_counted_apart_from_other_errors) {
    for_each_schedule([](const sim::run_config& rc, bool exact) {
        recorder p = recorder::failing_on(1);
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(2));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->failed == std::vector<std::uint64_t>{1, 1}),
                   "on_error sees every classified failure");
        if (exact) {
            BOOST_TEST(
                (p.log->processed == processed_t{{1, std::nullopt}, {2, std::nullopt}, {1, std::nullopt}}),
                "an in-doubt failure discards the key's state, so the retry reloads");
        }
        auto keys = by_key(p.log->processed);
        BOOST_TEST((keys[1] == states{std::nullopt, std::nullopt}));
        BOOST_TEST((keys[2] == states{std::nullopt}));
        BOOST_TEST(d.stats.counters.failed == 2u);
        BOOST_TEST(d.stats.counters.in_doubt == 2u, "in-doubt is counted apart, for alerting");
        BOOST_TEST(d.stats.counters.panicked == 0u, "a returned error is not a panic");
    });
}

BOOST_AUTO_TEST_CASE(a_concurrent_retry_is_coalesced_but_a_later_one_is_admitted) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        cfg.coalesce_duplicates = true;
        auto d = drive(rc, p, cfg, [](runtime& rt, router_t& route) {
            // Both reach the mailbox before the shard runs: the second retries
            // an operation that is still outstanding.
            BOOST_TEST_REQUIRE(route.try_submit(item::retry(3, 77)).ok());
            BOOST_TEST_REQUIRE(route.try_submit(item::retry(3, 77)).ok());
            rt.sleep_for(5 * ms);
            // The original completed and released its id: a fresh operation.
            submit_ok(route, item::retry(3, 77));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->coalesced == std::vector<std::uint64_t>{3}), "the concurrent retry never ran");
        BOOST_TEST((p.log->processed == processed_t{{3, std::nullopt}, {3, 1}}),
                   "the original ran once, and the later retry ran against its state");
        BOOST_TEST(d.stats.counters.coalesced == 1u);
    });
}

BOOST_AUTO_TEST_CASE(duplicate_ids_are_ignored_when_coalescing_is_off) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            BOOST_TEST_REQUIRE(route.try_submit(item::retry(4, 9)).ok());
            BOOST_TEST_REQUIRE(route.try_submit(item::retry(4, 9)).ok());
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(p.log->coalesced.empty());
        BOOST_TEST(p.log->processed.size() == 2u, "coalescing is opt-in and off by default");
    });
}

// --- beyond the seed -----------------------------------------------------------

BOOST_AUTO_TEST_CASE(an_expired_head_does_not_strand_the_item_behind_it_at_shutdown) {
    // Found by test_shard_races: key 1 queues [A: class 1, expires while X runs;
    // B: class 0] behind X. When X completes after the mailbox closed, the class
    // pass sheds A from the class-1 ring, which refiles key 1 into the class-0
    // ring, already passed. A reactor that then saw "closed and nothing
    // outstanding" exited with B never processed nor expired.
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        auto log = p.log;
        auto d = drive(rc, p, base_config(), [log](runtime& rt, router_t& route) {
            log->pause = [&rt](std::uint64_t) { rt.sleep_for(2 * ms); };
            submit_ok(route, item::of(1));  // X
            item a = item::of(1);
            a.c = 1;
            a.ttl = 1 * ms;
            submit_ok(route, a);
            submit_ok(route, item::of(1));  // B
            route.close();
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->expired == std::vector<std::uint64_t>{1}));
        BOOST_TEST((p.log->processed == processed_t{{1, std::nullopt}, {1, 1}}), "B ran, on X's state");
        BOOST_TEST(d.stats.counters.started == d.stats.counters.completed + d.stats.counters.expired);
        BOOST_TEST(d.stats.gauges.pending == 0u);
    });
}

BOOST_AUTO_TEST_CASE(a_clean_failure_is_failed_but_not_in_doubt) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p = recorder::failing_on(1, lockstep::fallout::clean);
        auto d = drive(rc, p, base_config(), [](runtime&, router_t& route) {
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(1));
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST((p.log->processed == processed_t{{1, std::nullopt}, {1, std::nullopt}}),
                   "any error drops the state");
        BOOST_TEST(d.stats.counters.failed == 2u);
        BOOST_TEST(d.stats.counters.in_doubt == 0u);
        BOOST_TEST(p.log->evicted.empty(), "nothing was resident to flush");
    });
}

BOOST_AUTO_TEST_CASE(the_abort_policy_fails_the_run) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p = recorder::panicking_on(1);
        shard_config cfg = base_config();
        cfg.on_panic = panic_policy::abort;
        bool returned = false;
        auto d = drive(rc, p, cfg, [&returned](runtime& rt, router_t& route) {
            submit_ok(route, item::of(2));
            submit_ok(route, item::of(1));
            rt.sleep_for(5 * ms);
            returned = true;  // the abort ends the run before this sleep ends
        });
        BOOST_TEST_REQUIRE(!d.run.ok());
        BOOST_TEST(d.run.failed->kind == sim::failure_kind::abort);
        BOOST_TEST(d.run.failed->message.find("deliberate processor panic") != std::string::npos,
                   d.run.failed->message);
        BOOST_TEST(!returned);
    });
}

// rt.abort() inside process() ends the run: engine code rethrows
// lockstep::run_aborted from its panic containment (a Rust process::abort
// cannot be caught either). Regression: it used to be contained as a panic.
BOOST_AUTO_TEST_CASE(an_abort_called_inside_process_ends_the_run) {
    recorder p;
    auto d = drive(config(1), p, base_config(), [&p](runtime& rt, router_t& route) {
        p.log->pause = [&rt](std::uint64_t) { rt.abort("the processor gave up"); };
        submit_ok(route, item::of(1));
        route.close();
    });
    BOOST_TEST_REQUIRE(!d.run.ok(), "the abort was swallowed as a contained panic");
    BOOST_TEST(d.run.failed->kind == sim::failure_kind::abort);
}

BOOST_AUTO_TEST_CASE(submit_blocks_while_the_mailbox_is_full_and_the_shard_saturated) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        cfg.scheduler.max_inflight = {1, 1};
        cfg.scheduler.max_pending = 2;
        int accepted_while_gated = -1;
        bool blocked_while_gated = false;
        int accepted_at_end = -1;
        auto log = p.log;
        auto d = drive(
            rc, p, cfg,
            [&, log](runtime& rt, router_t& route) {
                runtime::cancellation_token gate(rt);  // a latch: "cancelled" = open
                log->pause = [&gate](std::uint64_t) { gate.cancelled(); };
                int accepted = 0;
                auto producer = rt.spawn("producer", [&] {
                    for (int i = 0; i < 8; ++i) {
                        submit_ok(route, item::of(1));
                        ++accepted;
                    }
                });
                rt.sleep_for(10 * ms);  // every fiber is parked by now
                // One item in flight, max_pending queued, a full mailbox: the
                // sixth submit waits.
                accepted_while_gated = accepted;
                blocked_while_gated = !producer.finished();
                gate.cancel();
                producer.join();
                accepted_at_end = accepted;
                log->pause = nullptr;
            },
            2);
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(accepted_while_gated == 1 + 2 + 2);
        BOOST_TEST(blocked_while_gated);
        BOOST_TEST(accepted_at_end == 8, "the producer is released once the shard drains");
        BOOST_TEST(p.log->processed.size() == 8u);
    });
}

BOOST_AUTO_TEST_CASE(try_submit_hands_the_work_back_when_full_or_closed) {
    auto r = sim::run(config(1), [](runtime& rt) {
        auto channel = mailbox_t::bounded(rt, 2);
        std::vector<mailbox_t::sender> senders;
        senders.push_back(std::move(channel.first));
        router_t route(rt, std::move(senders));
        BOOST_TEST(route.try_submit(item::retry(1, 10)).ok());
        BOOST_TEST(route.try_submit(item::retry(1, 11)).ok());
        send_outcome<item> full = route.try_submit(item::retry(1, 12));
        BOOST_TEST((full.status == send_status::full));
        BOOST_TEST_REQUIRE(full.returned.has_value());
        BOOST_TEST((full.returned->id == std::optional<std::uint64_t>(12)), "the very work is handed back");

        channel.second.close();
        send_outcome<item> closed = route.try_submit(item::retry(1, 13));
        BOOST_TEST((closed.status == send_status::closed));
        BOOST_TEST((closed.returned->id == std::optional<std::uint64_t>(13)));
        send_outcome<item> blocking = route.submit(item::retry(1, 14));  // closed: does not wait
        BOOST_TEST((blocking.status == send_status::closed));
        BOOST_TEST((blocking.returned->id == std::optional<std::uint64_t>(14)));

        route.close();
        BOOST_TEST((route.try_submit(item::retry(1, 15)).status == send_status::closed));
        BOOST_TEST((route.submit(item::retry(1, 16)).status == send_status::closed));
        // What was queued before the close still drains, stamped as sent.
        auto first = channel.second.try_recv();
        BOOST_TEST_REQUIRE((first.status == recv_status::item));
        BOOST_TEST((first.item->request_id == std::optional<std::uint64_t>(10)));
        BOOST_TEST(first.item->enqueued_ns == 0);
    });
    BOOST_TEST(r.ok());
}

BOOST_AUTO_TEST_CASE(stable_hash_is_fixed_and_spreads_keys) {
    // Published splitmix64 outputs (state 0 and 1 step) and FNV-1a test vectors.
    BOOST_TEST(stable_hash(std::uint64_t{0}) == 0xe220a8397b1dcdafULL);
    BOOST_TEST(stable_hash(std::uint64_t{0x9e3779b97f4a7c15ULL}) == 0x6e789e6aa1b965f4ULL);
    BOOST_TEST(stable_hash(1) == 0x910a2dec89025cc1ULL);
    BOOST_TEST(stable_hash(-1) == stable_hash(~std::uint64_t{0}), "two's complement, any width");
    BOOST_TEST(stable_hash(std::string_view("")) == 0xcbf29ce484222325ULL);
    BOOST_TEST(stable_hash(std::string_view("a")) == 0xaf63dc4c8601ec8cULL);
    BOOST_TEST(stable_hash(std::string("foobar")) == 0x85944171f73967e8ULL);
    static_assert(stable_hash(std::uint64_t{0}) == 0xe220a8397b1dcdafULL, "usable at compile time");

    constexpr std::size_t shards = 8;
    constexpr std::size_t keys = 8000;
    std::vector<std::size_t> ints(shards, 0);
    std::vector<std::size_t> strings(shards, 0);
    for (std::size_t k = 0; k < keys; ++k) {
        ++ints[stable_hash(k) % shards];
        ++strings[stable_hash("key-" + std::to_string(k)) % shards];
    }
    for (std::size_t s = 0; s < shards; ++s) {
        BOOST_TEST_CONTEXT("shard " << s) {
            BOOST_TEST(ints[s] > 850u);  // expected 1000 each
            BOOST_TEST(ints[s] < 1150u);
            BOOST_TEST(strings[s] > 850u);
            BOOST_TEST(strings[s] < 1150u);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_router_spreads_keys_over_shards_each_on_its_own_core) {
    for_each_schedule(
        [](const sim::run_config& rc, bool) {
            constexpr std::size_t shards = 4;
            constexpr std::uint64_t keys = 24;
            std::vector<recorder> processors(shards);
            std::vector<shard_stats_snapshot> stats;
            std::vector<std::size_t> owner(keys);
            auto r = sim::run(rc, [&](runtime& rt) {
                for (recorder& p : processors) {
                    event_log* log = p.log.get();
                    log->pause = [&rt, log](std::uint64_t) { log->cores.insert(rt.current_core()); };
                }
                auto group = launch_shards<runtime, recorder>(
                    rt, shards, [&](std::size_t i) { return processors[i]; }, base_config(), 4);
                auto second = rt.spawn_on(1, "producer", [&] {
                    for (std::uint64_t k = keys / 2; k < keys; ++k)
                        for (int i = 0; i < 3; ++i) submit_ok(group.route, item::of(k));
                });
                for (std::uint64_t k = 0; k < keys / 2; ++k)
                    for (int i = 0; i < 3; ++i) submit_ok(group.route, item::of(k));
                second.join();
                for (std::uint64_t k = 0; k < keys; ++k) owner[k] = group.route.shard_of(k);
                group.shutdown();
                for (auto& s : group.stats) stats.push_back(s->read());
                for (recorder& p : processors) p.log->pause = nullptr;
            });
            BOOST_TEST_REQUIRE(r.ok(), why(r));
            std::uint64_t started = 0;
            for (std::size_t s = 0; s < shards; ++s) {
                BOOST_TEST_CONTEXT("shard " << s) {
                    started += stats[s].counters.started;
                    BOOST_TEST(stats[s].counters.completed == stats[s].counters.started);
                    if (!processors[s].log->cores.empty()) {
                        BOOST_TEST((processors[s].log->cores ==
                                    std::set<std::uint32_t>{static_cast<std::uint32_t>(s % 2)}),
                                   "one shard owns one core");
                    }
                    for (const auto& [key, seq] : by_key(processors[s].log->processed)) {
                        BOOST_TEST(owner[key] == s, "key " << key << " processed by its shard only");
                        BOOST_TEST((seq == states{std::nullopt, 1, 2}), "key " << key << " in order");
                    }
                }
            }
            BOOST_TEST(started == keys * 3);
            std::set<std::size_t> used(owner.begin(), owner.end());
            BOOST_TEST(used.size() == shards, "24 keys reach every one of 4 shards");
        },
        2);
}

BOOST_AUTO_TEST_CASE(queue_wait_is_measured_from_enqueue_to_dispatch) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_config cfg = base_config();
        cfg.scheduler.max_inflight = {1, 1};
        auto log = p.log;
        auto d = drive(rc, p, cfg, [log](runtime& rt, router_t& route) {
            log->pause = [&rt](std::uint64_t key) {
                if (key == 1) rt.sleep_for(1 * ms);
            };
            submit_ok(route, item::of(1));
            submit_ok(route, item::of(2));  // waits behind key 1 for the class budget
            route.close();
        });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(d.stats.counters.queue_wait_ns == 1 * ms);
        BOOST_TEST(d.stats.counters.busy_ns == 0, "virtual time stands still while the reactor works");
    });
}

BOOST_AUTO_TEST_CASE(gauges_are_published_on_every_tick) {
    for_each_schedule([](const sim::run_config& rc, bool) {
        recorder p;
        shard_stats_snapshot mid;
        auto log = p.log;
        auto d = drive(rc, p, base_config(),
                       [&mid, log](runtime& rt, router_t& route, shard_stats<runtime>& stats) {
                           runtime::cancellation_token gate(rt);  // a latch: "cancelled" = open
                           log->pause = [&gate](std::uint64_t) { gate.cancelled(); };
                           submit_ok(route, item::of(1));
                           item other = item::of(1);
                           other.c = 1;
                           submit_ok(route, other);
                           rt.sleep_for(3 * ms + 1);
                           mid = stats.read();
                           gate.cancel();
                           route.close();
                           rt.sleep_for(1 * ms);  // let both items finish before the gate goes away
                           log->pause = nullptr;
                       });
        BOOST_TEST_REQUIRE(d.run.ok(), why(d.run));
        BOOST_TEST(mid.publications >= 4u, "a tick at 0, 1, 2 and 3 ms");
        BOOST_TEST(mid.counters.started == 2u);
        BOOST_TEST(mid.counters.completed == 0u);
        BOOST_TEST((mid.gauges.inflight == std::vector<std::size_t>{1, 0}));
        BOOST_TEST(mid.gauges.pending == 1u, "the class-1 item waits behind its key");
        BOOST_TEST(mid.gauges.resident == 0u);
        BOOST_TEST(d.stats.counters.completed == 2u);
    });
}
