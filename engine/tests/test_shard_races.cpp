// Goal: the shard reactor keeps its promises under every interleaving the
// simulator finds — 1,000 seeds of `random` and 1,000 of `pct` per property, on
// 2 simulated cores (shard on one, producers on both), with small generated
// programs over 4 keys.
//
// Oracles (checked by the shared model processor, engine/tests/shard_race_model.hpp,
// as things happen and after the run; the script checks stay here):
// * per-key order: items of a key leave (processed or expired) in submission order;
// * at most one item of a key in flight, and never while the key is flushing;
// * class budgets: items of a class in process() <= max_inflight[class];
// * state: process() sees exactly the latest state kept for its key and not
//   flushed since (none after a drop, an error, a panic or a flush);
// * every delivered item is processed, expired or coalesced exactly once; work
//   handed back by try_submit is never seen by the shard;
// * every resident state is flushed exactly once, with its latest value, so
//   none is left when the shard has exited;
// * deadlines: nothing is processed past its deadline, nothing expires early;
// * counters (after exit): started == completed + expired;
//   delivered == started + coalesced; completed == process() calls;
//   failed == errors + panics; in_doubt == in-doubt errors + panics;
//   panicked, coalesced, expired, evicted match what the processor saw; every
//   gauge is back to 0.
// Canaries: a reactor that skips the final flush, one that leaks an expired
// item's request id, and a processor that breaks per-key serialisation (it
// returns before its work ends) must each be caught by the same sweeps.
#define BOOST_TEST_MODULE engine_shard_races
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/tests/shard_race_model.hpp"
#include "sim/runtime.hpp"
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep;
using lockstep::sim::runtime;

namespace {

constexpr std::int64_t us = 1'000;
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t secs = 1'000 * ms;
constexpr std::uint64_t seeds_per_strategy = 1'000;
constexpr std::uint64_t canary_seeds = 100;

using models::grommet::act;
using models::grommet::job;
using models::grommet::router_t;
using models::grommet::world;
using model_processor = models::grommet::processor;

/// Points the shared model's reports at `problems` (the first 8, each with the
/// virtual time while the run lives) and sets the tests' pace of work.
void record_problems(world& w, std::vector<std::string>& problems) {
    w.on_violation = [&w, &problems](std::string_view oracle, const std::string& message) {
        if (problems.size() >= 8) return;
        std::string line = std::string(oracle) + ": " + message;
        if (w.rt) line += " at t=" + std::to_string(w.rt->now());
        problems.push_back(std::move(line));
    };
    w.sleep_ns = [](runtime& rt) { return static_cast<std::int64_t>(rt.random() % 3 + 1) * 250 * us; };
}

using mailbox_t = shard<runtime, model_processor>::mailbox;

/// The shape of the generated programs; percentages per item.
struct scenario {
    int items_per_producer = 6;
    int panic_pct = 0, fail_pct = 0, drop_pct = 0;
    int ttl_pct = 0, retry_pct = 0, try_pct = 0, gap_pct = 0;
    bool short_idle = false;  // evict_after 0.5 ms in half the runs (else 3600 s)
    enum class script : std::uint8_t { none, expiry, coalesce } special = script::none;
    plant::bug planted = plant::bug::none;  // engine/plant.hpp
    bool detach = false;
};

/// What a run left behind, for the checks after it.
struct outcome {
    sim::run_result run;
    shard_stats_snapshot stats;
    std::vector<std::string> problems;
};

bool pct(runtime& rt, int percent) {
    return static_cast<int>(rt.random() % 100) < percent;
}

/// Producer p (on core p) owns keys p and p + 2, so each key has one sender
/// and its submission order is well defined.
std::vector<job> generate(runtime& rt, const scenario& sc, int producer, std::uint64_t& next_uid,
                          std::map<std::uint64_t, std::uint64_t>& seqs) {
    std::vector<job> out;
    std::map<std::uint64_t, std::uint64_t> last_id;
    for (int i = 0; i < sc.items_per_producer; ++i) {
        job j;
        j.uid = next_uid++;
        // A scripted run keeps key 3 for its script.
        const bool own_both = sc.special == scenario::script::none || producer == 0;
        j.k = static_cast<std::uint64_t>(producer) + (own_both ? 2 * (rt.random() % 2) : 0);
        j.c = static_cast<class_id>(rt.random() % 2);
        j.seq = ++seqs[j.k];
        if (pct(rt, sc.ttl_pct)) j.ttl = (rt.random() % 2) * ms;
        if (pct(rt, sc.retry_pct) && last_id.count(j.k)) {
            j.id = last_id[j.k];
        } else if (pct(rt, 50)) {
            j.id = j.uid;
            last_id[j.k] = j.uid;
        }
        const int roll = static_cast<int>(rt.random() % 100);
        if (roll < sc.panic_pct) {
            j.does = act::panic;
        } else if (roll < sc.panic_pct + sc.fail_pct) {
            j.does = rt.random() % 2 ? act::fail_clean : act::fail_in_doubt;
        } else if (roll < sc.panic_pct + sc.fail_pct + sc.drop_pct) {
            j.does = act::drop;
        }
        j.use_try = pct(rt, sc.try_pct);
        if (pct(rt, sc.gap_pct)) j.gap_ns = static_cast<std::int64_t>(rt.random() % 5) * 500 * us;
        out.push_back(j);
    }
    return out;
}

void send(world& w, router_t& route, job j) {
    if (j.gap_ns > 0) w.rt->sleep_for(j.gap_ns);
    models::grommet::submit(w, route, std::move(j));
}

/// Polls (in virtual time) until `done()`; the seed's tests wait the same way.
template <class Pred>
void await(world& w, Pred done) {
    for (int i = 0; i < 1000 && !done(); ++i) w.rt->sleep_for(250 * us);
    w.expect(done(), "scripted waits end", "a scripted wait never ended");
}

/// Key 3's scripted story, sent by producer 1 around its generated items.
void run_script(world& w, router_t& route, const scenario& sc, std::vector<job>& items,
                std::uint64_t& next_uid, std::map<std::uint64_t, std::uint64_t>& seqs,
                std::vector<std::uint64_t>& script_uids) {
    auto make = [&](std::optional<std::int64_t> ttl, act does) {
        job j;
        j.uid = next_uid++;
        j.k = 3;
        j.c = 1;  // class 0 has one slot: a gated original there would stall the whole class
        j.id = 77;
        j.ttl = ttl;
        j.does = does;
        j.seq = ++seqs[3];
        script_uids.push_back(j.uid);
        return j;
    };
    if (sc.special == scenario::script::expiry) {
        // An item shed at dispatch holds request id 77; once it has expired, a
        // retry with the same id must be admitted, not coalesced.
        job first = make(0, act::keep);
        job retry = make(std::nullopt, act::keep);
        const std::uint64_t first_uid = first.uid;
        send(w, route, first);
        for (job& j : items) send(w, route, j);
        await(w, [&] { return w.outcomes[first_uid] != 0; });
        send(w, route, retry);
        return;
    }
    // Coalescing: the original holds the gate, so two retries sent meanwhile
    // must be coalesced; a retry after it completed must run, on its state.
    job original = make(std::nullopt, act::gate);
    job again = make(std::nullopt, act::keep);
    job again2 = make(std::nullopt, act::keep);
    job later = make(std::nullopt, act::keep);
    const std::uint64_t original_uid = original.uid;
    send(w, route, original);
    send(w, route, again);
    for (job& j : items) send(w, route, j);
    send(w, route, again2);
    await(w, [&] { return w.shards[0].coalesced >= 2; });
    w.gate->cancel();
    await(w, [&] { return w.returned[original_uid]; });
    w.rt->sleep_for(1);  // time moves only once the reactor has harvested the completion
    send(w, route, later);
}

outcome run_once(const scenario& sc, const std::string& strategy, std::uint64_t seed) {
    world w;
    outcome out;
    record_problems(w, out.problems);
    w.shards.assign(1, models::grommet::shard_tally{});
    std::vector<std::uint64_t> script_uids;
    sim::run_config rc = sim::testing::config(seed, strategy, 2);
    rc.trace = sim::trace_mode::off;
    rc.record_decisions = false;
    rc.max_steps = 2'000'000;
    // These runs take ~100-300 scheduling steps: draw PCT's change points from
    // that range, or they would all fall after the run has ended.
    rc.options.pct_steps = 256;
    const plant::scope planted(sc.planted);
    out.run = sim::run(rc, [&](runtime& rt) {
        w.rt = &rt;
        w.detach = sc.detach;
        runtime::cancellation_token gate(rt);
        w.gate = &gate;
        shard_config cfg = shard_config::with_budgets({1, 2});
        cfg.scheduler.max_pending = 3;
        cfg.scheduler.evict_after_ns = sc.short_idle && rt.random() % 2 ? 500 * us : 3600 * secs;
        cfg.admit_batch = 2;
        cfg.tick_ns = 1 * ms;
        cfg.coalesce_duplicates = true;
        cfg.check_invariants = true;
        w.budgets = cfg.scheduler.max_inflight;

        std::uint64_t next_uid = 1;
        std::map<std::uint64_t, std::uint64_t> seqs;
        std::vector<job> programs[2];
        for (int p = 0; p < 2; ++p) programs[p] = generate(rt, sc, p, next_uid, seqs);

        auto channel = mailbox_t::bounded(rt, 2);
        auto stats = std::make_shared<shard_stats<runtime>>(rt);
        std::vector<mailbox_t::sender> senders;
        senders.push_back(std::move(channel.first));
        router_t route(rt, std::move(senders));
        const auto shard_core = static_cast<std::uint32_t>(rt.random() % 2);
        auto engine =
            rt.spawn_on(shard_core, "shard", [&rt, rx = std::move(channel.second), &w, stats, cfg]() mutable {
                run_shard(rt, std::move(rx), model_processor{&w}, stats, cfg);
            });
        auto second = rt.spawn_on(1, "producer.1", [&] {
            if (sc.special != scenario::script::none) {
                run_script(w, route, sc, programs[1], next_uid, seqs, script_uids);
            } else {
                for (job& j : programs[1]) send(w, route, j);
            }
        });
        for (job& j : programs[0]) send(w, route, j);
        second.join();
        route.close();
        engine.join();
        out.stats = stats->read();
    });
    w.rt = nullptr;  // the run is over: its runtime is gone
    auto fail = [&](const std::string& what) { out.problems.push_back(what); };
    if (!out.run.ok()) {
        fail("run failed: " + out.run.failed->message);
        return out;
    }
    models::grommet::check_after_shutdown(w, {out.stats});
    const shard_counters& c = out.stats.counters;
    if (sc.special == scenario::script::expiry && script_uids.size() == 2) {
        if (w.outcomes[script_uids[1]] != 1 || w.seen_states[3].empty())
            fail("the retry after expiry did not run");
        if (c.coalesced != 0) fail("the retry after expiry was coalesced: the expired id was not released");
    }
    if (sc.special == scenario::script::coalesce && script_uids.size() == 4) {
        const std::vector<std::optional<std::uint64_t>> expected{std::nullopt, script_uids[0]};
        if (w.seen_states[3] != expected)
            fail("key 3 should run the original, then the later retry on its state");
        if (c.coalesced != 2)
            fail("the two concurrent retries should be coalesced, got " + std::to_string(c.coalesced));
    }
    return out;
}

std::string describe(const outcome& o) {
    std::ostringstream s;
    for (const std::string& p : o.problems) s << "\n  " << p;
    return s.str();
}

/// Runs the sweep; every problem is reported with its strategy and seed.
void sweep(const scenario& sc, std::uint64_t seeds = seeds_per_strategy) {
    for (const char* strategy : {"random", "pct"}) {
        for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
            const outcome o = run_once(sc, strategy, seed);
            BOOST_TEST_CONTEXT("strategy " << strategy << ", seed " << seed) {
                BOOST_TEST(o.problems.empty(),
                           "strategy " << strategy << ", seed " << seed << ":" << describe(o));
            }
        }
    }
}

/// A canary: the same sweep over a broken variant must catch it at least once.
std::uint64_t caught(const scenario& sc, std::uint64_t seeds = canary_seeds) {
    std::uint64_t n = 0;
    for (const char* strategy : {"random", "pct"}) {
        for (std::uint64_t seed = 1; seed <= seeds; ++seed)
            n += run_once(sc, strategy, seed).problems.empty() ? 0 : 1;
    }
    BOOST_TEST_MESSAGE("canary caught in " << n << " of " << 2 * seeds << " runs");
    return n;
}

scenario mixed() {
    scenario sc;
    sc.items_per_producer = 10;
    sc.panic_pct = 10;
    sc.fail_pct = 15;
    sc.drop_pct = 10;
    sc.ttl_pct = 25;
    sc.retry_pct = 30;
    sc.try_pct = 25;
    sc.gap_pct = 30;
    sc.short_idle = true;
    return sc;
}

scenario panicky() {
    scenario sc;
    sc.panic_pct = 35;
    sc.gap_pct = 30;
    sc.short_idle = true;
    return sc;
}

scenario shutdown_burst() {
    scenario sc;
    sc.items_per_producer = 8;
    sc.drop_pct = 10;
    return sc;  // no gaps: everything arrives at once and most of it is queued at close
}

scenario scripted(scenario::script which) {
    scenario sc = mixed();
    sc.short_idle = false;  // key 3's state must survive until the later retry
    sc.panic_pct = 0;
    sc.retry_pct = 0;  // only the script's retries may coalesce
    sc.special = which;
    return sc;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_panicking_processor_drops_only_its_state_and_the_key_keeps_serving) {
    sweep(panicky());
}

BOOST_AUTO_TEST_CASE(shutdown_drains_queued_work_and_flushes_every_resident_state_once) {
    sweep(shutdown_burst());
}

BOOST_AUTO_TEST_CASE(an_expired_item_releases_its_request_id_for_a_later_retry) {
    sweep(scripted(scenario::script::expiry));
}

BOOST_AUTO_TEST_CASE(concurrent_retries_are_coalesced_and_a_later_one_admitted) {
    sweep(scripted(scenario::script::coalesce));
}

BOOST_AUTO_TEST_CASE(mixed_programs_keep_order_budgets_state_and_counters) {
    sweep(mixed(), 2 * seeds_per_strategy);
}

BOOST_AUTO_TEST_CASE(canary_a_reactor_that_skips_the_final_flush_is_caught) {
    scenario sc = shutdown_burst();
    sc.planted = plant::bug::shards_skip_final_flush;
    BOOST_TEST(caught(sc) > 0u);
}

BOOST_AUTO_TEST_CASE(canary_a_reactor_that_keeps_expired_request_ids_is_caught) {
    scenario sc = scripted(scenario::script::expiry);
    sc.planted = plant::bug::shards_keep_expired_request_ids;
    BOOST_TEST(caught(sc) > 0u);
}

BOOST_AUTO_TEST_CASE(canary_a_processor_that_breaks_per_key_serialisation_is_caught) {
    scenario sc = shutdown_burst();
    sc.detach = true;
    BOOST_TEST(caught(sc) > 0u);
}
