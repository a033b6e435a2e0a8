// Goal: at least 1,000,000 items (LOCKSTEP_STRESS_ITEMS) through two shard
// reactors (one per pinned thread) behind their router, with the properties
// checked on what happened: each producer's items of a key processed in
// submit order, every submitted item processed exactly once, at most one item
// of a key in flight, the class budget never exceeded, every dispatch seeing
// exactly the state the model predicts (resident, or reloaded from what the
// last flush wrote), and at shutdown every resident state flushed once with
// its latest value — also when the router is shut down while producers are
// still submitting.
//
// Two producers, one per core, each with its own copy of the router: one
// submits (suspending on a full mailbox: backpressure), the other
// try_submits and, when the mailbox is full and hands the item back, submits
// that same item. The
// processor counts a key's items in its state; idle keys are evicted every
// tick (1 ms) into a per-key store and reloaded from it, so flushes race the
// workload instead of only ending it. Each key lives on one shard, hence one
// core, so the per-key arrays below have one writer thread each.
#define BOOST_TEST_MODULE threads_stress_shards
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/stress.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::testing::per_core_log;
using lockstep::threads::testing::stress_items;

namespace {

constexpr std::uint32_t producers = 2;
constexpr std::size_t budget = 8;  // class 0's in-flight budget per shard

struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t k = 0;
  std::uint32_t producer = 0;
  std::uint32_t seq = 0;  // this producer's n-th item of this key
  key_type key() const { return k; }
  class_id cls() const { return 0; }
  std::optional<std::int64_t> ttl_ns() const { return std::nullopt; }
  std::optional<id_type> request_id() const { return std::nullopt; }
};

struct no_error {
  lockstep::fallout fallout() const { return lockstep::fallout::clean; }
};

struct processed {
  std::uint64_t key;
  std::uint32_t producer;
  std::uint32_t seq;
  std::uint64_t state_seen;  // the count the dispatch saw (resident or reloaded)
  bool reloaded;
};
struct flush {
  std::uint64_t key;
  std::uint64_t state;
};

/// What the processors share; per-key fields are touched by the key's shard only.
struct world {
  world(runtime& r, std::uint32_t keys)
      : rt(r), log(2, 600'000), flushes(2, 1024), store(keys, 0), inside(keys, 0), in_flight(2, 0) {}
  runtime& rt;
  per_core_log<processed> log;
  per_core_log<flush> flushes;
  std::vector<std::uint64_t> store;   // [key]: what the last flush wrote (the "database")
  std::vector<std::uint8_t> inside;   // [key]: an item of the key is being processed
  std::vector<std::size_t> in_flight; // [core]: items being processed on that core
  std::vector<std::uint64_t> overlaps = std::vector<std::uint64_t>(2, 0);
  std::vector<std::uint64_t> over_budget = std::vector<std::uint64_t>(2, 0);
  std::vector<std::uint64_t> yields = std::vector<std::uint64_t>(2, 0);
};

struct recording_processor {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = no_error;
  world* w;

  process_result<std::uint64_t, no_error> process(const std::uint64_t& key, std::optional<std::uint64_t> state,
                                                  job j) {
    const std::uint32_t core = w->rt.current_core();
    if (w->inside[key] != 0) ++w->overlaps[core];
    w->inside[key] = 1;
    if (++w->in_flight[core] > budget) ++w->over_budget[core];
    const bool reload = !state.has_value();
    const std::uint64_t seen = reload ? w->store[key] : *state;
    w->log.add(w->rt, processed{key, j.producer, j.seq, seen, reload});
    // Let the shard's other item fibers run while this one is "busy", so a
    // second item of the key or one past the budget would be caught inside.
    if (++w->yields[core] % 4 == 0) w->rt.yield_now();
    --w->in_flight[core];
    w->inside[key] = 0;
    return disposition<std::uint64_t>::keep(seen + 1);
  }
  void on_error(const std::uint64_t&, const no_error&) {}
  void on_coalesced(const std::uint64_t&, job) {}
  void on_evict(const std::uint64_t& key, std::uint64_t state) {
    w->store[key] = state;  // the write-back: the key dispatches nothing until this returns
    w->flushes.add(w->rt, flush{key, state});
  }
  void on_expired(const std::uint64_t&, job) {}
};
static_assert(Processor<recording_processor>);

struct shard_case {
  std::uint32_t keys = 512;
  std::uint64_t items = 1'000'000;  // the most the producers submit
  std::uint64_t stop_after = 0;     // > 0: shut down once this many were submitted
  bool check_invariants = false;    // the reactor's and scheduler's, after every turn: O(keys) each
};

struct shard_outcome {
  std::vector<std::vector<std::uint64_t>> submitted;  // [producer][key]
  std::uint64_t refused_closed = 0;
  std::uint64_t full_retries = 0;
  std::uint64_t started = 0, completed = 0;
  std::unique_ptr<world> w;
};

shard_outcome run_shards(const shard_case& c) {
  shard_outcome out;
  out.submitted.assign(producers, std::vector<std::uint64_t>(c.keys, 0));
  std::vector<std::uint64_t> closed(producers, 0), full(producers, 0);
  std::atomic<std::uint64_t> progress{0};
  std::atomic<bool> stop{false};
  runtime rt(2);
  out.w = std::make_unique<world>(rt, c.keys);
  world* w = out.w.get();
  rt.run([&] {
    shard_config cfg = shard_config::with_budgets({budget});
    cfg.tick_ns = 1'000'000;
    cfg.scheduler.evict_after_ns = 1'000'000;
    cfg.scheduler.max_pending = 1024;
    cfg.check_invariants = c.check_invariants;
    auto group = launch_shards<runtime, recording_processor>(
        rt, 2, [w](std::size_t) { return recording_processor{w}; }, cfg, 128);
    std::vector<runtime::task> ts;
    for (std::uint32_t p = 0; p < producers; ++p) {
      ts.push_back(rt.spawn_on(p, "producer", [&, p, route = group.route]() mutable {
        std::vector<std::uint64_t>& mine = out.submitted[p];
        const std::uint64_t n_items = c.items / producers;
        for (std::uint64_t n = 0; n < n_items; ++n) {
          if (c.stop_after != 0 && stop.load(std::memory_order_relaxed)) break;
          const std::uint64_t key = n % c.keys;
          job j{key, p, static_cast<std::uint32_t>(mine[key])};
          send_outcome<job> sent = p == 0 ? route.submit(j) : route.try_submit(j);
          if (sent.status == send_status::full) {
            // Handed back whole: offer the same item again, this time waiting for room.
            ++full[p];
            sent = route.submit(std::move(*sent.returned));
          }
          if (sent.status == send_status::closed) {
            ++closed[p];  // never: this copy is open until the loop ends
            continue;
          }
          ++mine[key];
          if (c.stop_after != 0 && (n & 1023) == 1023) progress.fetch_add(1024, std::memory_order_relaxed);
        }
        route.close();  // this producer's share of the shutdown
      }));
    }
    if (c.stop_after != 0) {
      while (progress.load(std::memory_order_relaxed) < c.stop_after) rt.yield_now();
      stop.store(true, std::memory_order_relaxed);
    }
    // Shut down now: the shards drain and exit once the producers, possibly
    // still submitting (or parked on a full mailbox), close their copies.
    group.shutdown();
    for (auto& t : ts) t.join();
    for (auto& s : group.stats) {
      const shard_stats_snapshot snap = s->read();
      out.started += snap.counters.started;
      out.completed += snap.counters.completed;
    }
  });
  for (std::uint32_t p = 0; p < producers; ++p) {
    out.refused_closed += closed[p];
    out.full_retries += full[p];
  }
  return out;
}

/// Checks the logs against what was submitted; returns the items processed.
std::uint64_t check_shards(const shard_case& c, const shard_outcome& out) {
  const world& w = *out.w;
  std::vector<std::vector<std::uint64_t>> next(c.keys, std::vector<std::uint64_t>(producers, 0));
  std::vector<std::uint64_t> count(c.keys, 0);  // items of the key processed so far
  std::vector<std::int32_t> core_of(c.keys, -1);
  std::uint64_t out_of_order = 0, wrong_state = 0, split_keys = 0, done = 0, reloads = 0;
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const processed& e : w.log.of(core)) {
      ++done;
      if (core_of[e.key] == -1) core_of[e.key] = static_cast<std::int32_t>(core);
      if (core_of[e.key] != static_cast<std::int32_t>(core)) ++split_keys;
      std::uint64_t& want = next[e.key][e.producer];
      if (e.seq != want) ++out_of_order;
      want = e.seq + 1;
      if (e.state_seen != count[e.key]) ++wrong_state;
      if (e.reloaded) ++reloads;
      ++count[e.key];
    }
  }
  std::uint64_t short_keys = 0, submitted = 0, bad_flush = 0;
  for (std::uint32_t key = 0; key < c.keys; ++key) {
    for (std::uint32_t p = 0; p < producers; ++p) {
      submitted += out.submitted[p][key];
      if (next[key][p] != out.submitted[p][key]) ++short_keys;
    }
  }
  // Flushes of a key: each writes a later count than the one before (a state
  // is flushed once), and the last one is the key's final count.
  std::vector<std::uint64_t> last_flush(c.keys, 0);
  std::vector<std::uint8_t> flushed(c.keys, 0);
  for (std::uint32_t core = 0; core < 2; ++core) {
    for (const flush& f : w.flushes.of(core)) {
      if (flushed[f.key] != 0 && f.state <= last_flush[f.key]) ++bad_flush;
      flushed[f.key] = 1;
      last_flush[f.key] = f.state;
    }
  }
  std::uint64_t unflushed = 0;
  for (std::uint32_t key = 0; key < c.keys; ++key) {
    if (count[key] == 0) continue;
    if (flushed[key] == 0 || last_flush[key] != count[key] || w.store[key] != count[key]) ++unflushed;
  }
  BOOST_TEST(out_of_order == 0U, "each producer's items of a key are processed in submit order, once each");
  BOOST_TEST(short_keys == 0U, "every submitted item of every (key, producer) was processed: nothing lost");
  BOOST_TEST(done == submitted, "as many processed as submitted: exactly once");
  BOOST_TEST(wrong_state == 0U, "every dispatch saw the key's count so far (resident or reloaded)");
  BOOST_TEST(split_keys == 0U, "a key is processed on one shard's core only");
  BOOST_TEST(w.overlaps[0] + w.overlaps[1] == 0U, "never two items of one key in flight");
  BOOST_TEST(w.over_budget[0] + w.over_budget[1] == 0U, "never more in flight than the class budget");
  BOOST_TEST(bad_flush == 0U, "a key's flushes write ever later states: none flushed twice");
  BOOST_TEST(unflushed == 0U, "at shutdown every key's latest state was flushed");
  BOOST_TEST(out.started == done, "the shards admitted exactly what was processed");
  BOOST_TEST(out.completed == done, "and harvested every completion");
  BOOST_TEST(out.refused_closed == 0U, "a producer's own open router copy never refuses");
  BOOST_TEST_MESSAGE("processed " << done << ", reloads " << reloads << ", handed back full " << out.full_retries);
  return done;
}

}  // namespace

BOOST_AUTO_TEST_CASE(shards_1m_items_512_keys_in_order_exactly_once_state_and_flush_exact) {
  shard_case c;
  c.items = stress_items();
  const shard_outcome out = run_shards(c);
  const std::uint64_t done = check_shards(c, out);
  BOOST_TEST(done == c.items / producers * producers);
}

BOOST_AUTO_TEST_CASE(shards_shut_down_while_producers_are_still_submitting) {
  shard_case c;
  c.items = stress_items();
  c.keys = 64;
  c.stop_after = c.items / 4;
  c.check_invariants = true;
  const shard_outcome out = run_shards(c);
  const std::uint64_t done = check_shards(c, out);
  BOOST_TEST(done >= c.stop_after, "the producers had submitted at least stop_after when shutdown began");
}
