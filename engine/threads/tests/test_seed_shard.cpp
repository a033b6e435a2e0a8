// Goal: the shard reactor behaves as grommet's shard does on the real threads
// backend, too: every test of the seed's `mod tests` (as engine/tests/
// test_shard.cpp runs them in the simulator), with the seed's setup (budgets
// [4, 4], tick 1 ms, evict_after 3600 s, mailbox 64, a recording processor),
// the shard on core 1 and the test's driver on core 0 of a two-core runtime.
//
// How the seed's virtual-time idioms map onto real threads:
// * "both reach the mailbox before the shard runs" (tokio polls the driver
//   to its end before the shard wakes): drive()'s `before` phase submits
//   before the shard's fiber is spawned, so those items are admitted in one
//   batch, and the orders the seed asserts across keys hold exactly (the
//   shard's item fibers run FIFO on its core, as tokio's are polled).
// * a `sleep` that lets the shard make progress: a bounded poll of the very
//   condition the seed waited for (wait_for: 1 ms naps, 20 s of real time at
//   most, so ThreadSanitizer can only make a test slower; timing out fails).
// * ttl 0 is still "already past at dispatch": the router stamps the deadline
//   with steady_clock before the send, the shard reads it after the receive.
//
// What the processor records is written on core 1 only and read by the test
// after rt.run() has returned; the two counts the driver polls are atomics.
#define BOOST_TEST_MODULE threads_seed_shard
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/threads/runtime.hpp"

using namespace lockstep;
using lockstep::threads::runtime;

namespace {

constexpr class_id io = 0;
constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t secs = 1'000 * ms;
/// How long a poll waits for the shard before the test fails: far beyond an
/// -O2 run (well under a millisecond), with room for a sanitizer's slowdown.
constexpr std::int64_t patience_ns = 20 * secs;
constexpr std::uint32_t shard_core = 1;

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
  static item retry(std::uint64_t key, std::uint64_t request) { return item{key, io, std::nullopt, request}; }
};

using processed_t = std::vector<std::pair<std::uint64_t, std::optional<std::uint64_t>>>;
using evicted_t = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
using keys_t = std::vector<std::uint64_t>;
using states = std::vector<std::optional<std::uint64_t>>;

/// Everything the shard did, in order, so tests assert on behaviour, not timing.
/// The vectors are written on the shard's core only; read them after the run.
struct event_log {
  const runtime* rt = nullptr;
  processed_t processed;
  evicted_t evicted;
  keys_t expired;
  keys_t failed;
  keys_t coalesced;
  std::set<std::uint32_t> cores;  // where process() ran
  // For a driver polling during the run: bumped after the matching push.
  std::atomic<std::size_t> evictions{0};
  std::atomic<std::size_t> expirations{0};
};

/// An error whose outcome is unknown, so the key must reload.
struct fault {
  lockstep::fallout fallout() const { return lockstep::fallout::in_doubt; }
};

struct recorder {
  using work_type = item;
  using state_type = std::uint64_t;
  using error_type = fault;

  std::shared_ptr<event_log> log = std::make_shared<event_log>();
  std::optional<std::uint64_t> panic_on;
  std::optional<std::uint64_t> fail_on;

  static recorder panicking_on(std::uint64_t key) {
    recorder r;
    r.panic_on = key;
    return r;
  }
  static recorder failing_on(std::uint64_t key) {
    recorder r;
    r.fail_on = key;
    return r;
  }

  process_result<std::uint64_t, fault> process(const std::uint64_t& key, std::optional<std::uint64_t> state, item) {
    log->processed.emplace_back(key, state);
    log->cores.insert(log->rt->current_core());
    // The seed's assert_ne! panics; here the panic is an exception, which the
    // shard contains (panic_policy::contain) as the seed's catch_unwind does.
    if (panic_on == key) throw std::runtime_error("deliberate processor panic");
    if (fail_on == key) return fault{};
    return disposition<std::uint64_t>::keep(state.value_or(0) + 1);
  }
  void on_error(const std::uint64_t& key, const fault&) { log->failed.push_back(key); }
  void on_coalesced(const std::uint64_t& key, item) { log->coalesced.push_back(key); }
  void on_evict(const std::uint64_t& key, std::uint64_t state) {
    log->evicted.emplace_back(key, state);
    log->evictions.fetch_add(1);
  }
  void on_expired(const std::uint64_t& key, item) {
    log->expired.push_back(key);
    log->expirations.fetch_add(1);
  }
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

/// What a driver works with, on core 0. Failures are recorded, not asserted:
/// Boost.Test is used on the test's own thread only, after the run.
struct session {
  runtime& rt;
  router_t& route;
  shard_stats<runtime>& stats;
  std::string problem;  // the first thing that went wrong, or ""

  void note(const std::string& what) {
    if (problem.empty()) problem = what;
  }
  void submit(item work) {
    if (!route.submit(std::move(work)).ok()) note("a submit was refused");
  }
  void try_submit(item work) {
    if (!route.try_submit(std::move(work)).ok()) note("a try_submit was refused");
  }
  /// Polls `done` every millisecond for patience_ns at most; false (and noted) on timeout.
  template <class Pred>
  bool wait_for(Pred done, const std::string& what) {
    const std::int64_t give_up = rt.now() + patience_ns;
    while (!done()) {
      if (rt.now() >= give_up) {
        note("timed out after 20 s waiting for " + what);
        return false;
      }
      rt.sleep_for(1 * ms);
    }
    return true;
  }
};

struct driven {
  std::string problem;
  shard_stats_snapshot stats;
};

constexpr auto nothing = [](session&) {};

/// The seed's `drive`: a mailbox of 64 and a router on core 0; `before(s)`
/// submits while no shard runs yet; then the shard starts on core 1 while
/// `during(s)` drives it; then the router closes and the shard drains (the
/// wait bounded like every other).
template <class Before, class During>
driven drive(recorder processor, shard_config cfg, Before before, During during) {
  driven out;
  runtime rt(2);
  processor.log->rt = &rt;
  rt.run([&] {
    auto channel = mailbox_t::bounded(rt, 64);
    auto stats = std::make_shared<shard_stats<runtime>>(rt);
    std::vector<mailbox_t::sender> senders;
    senders.push_back(std::move(channel.first));
    router_t route(rt, std::move(senders));
    session s{rt, route, *stats, {}};
    before(s);
    auto engine =
        rt.spawn_on(shard_core, "shard", [&rt, rx = std::move(channel.second), processor, stats, cfg]() mutable {
          run_shard(rt, std::move(rx), std::move(processor), stats, cfg);
        });
    if (s.problem.empty()) during(s);
    route.close();
    // A shard that never drains is left to run()'s teardown to cancel.
    if (s.wait_for([&] { return engine.finished(); }, "the shard to drain and exit")) {
      engine.join();
      out.stats = stats->read();
    }
    out.problem = s.problem;
  });
  BOOST_TEST(processor.log->cores.size() <= 1U);
  if (!processor.log->cores.empty()) {
    BOOST_TEST(*processor.log->cores.begin() == shard_core, "process() runs on the shard's core");
  }
  return out;
}

std::map<std::uint64_t, states> by_key(const processed_t& processed) {
  std::map<std::uint64_t, states> out;
  for (const auto& [key, state] : processed) out[key].push_back(state);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_key_is_processed_in_submission_order_with_accumulating_state) {
  recorder p;
  // Submitted while the shard runs: one key's order must hold however the
  // three arrivals interleave with its dispatches.
  auto d = drive(p, base_config(), nothing, [](session& s) {
    for (int i = 0; i < 3; ++i) s.submit(item::of(7));
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->processed == processed_t{{7, std::nullopt}, {7, 1}, {7, 2}}),
             "state must follow the key across dispatches, in order");
  BOOST_TEST(d.stats.counters.completed == 3U);
  BOOST_TEST(d.stats.counters.panicked == 0U);
}

BOOST_AUTO_TEST_CASE(a_panicking_processor_is_contained_and_the_shard_keeps_serving) {
  recorder p = recorder::panicking_on(1);
  auto d = drive(
      p, base_config(),
      [](session& s) {
        s.submit(item::of(1));
        s.submit(item::of(1));
        s.submit(item::of(2));
      },
      nothing);
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  // Key 2 runs beside key 1 rather than behind its panics, and key 1's second
  // item sees no state because the first panic dropped it.
  BOOST_TEST((p.log->processed == processed_t{{1, std::nullopt}, {2, std::nullopt}, {1, std::nullopt}}),
             "a panic drops only the panicking key's state, and blocks no other key");
  BOOST_TEST(d.stats.counters.panicked == 2U);
  BOOST_TEST(d.stats.counters.completed == 3U, "a panicked item still completes its slot");
  BOOST_TEST(d.stats.counters.in_doubt == 2U);
  BOOST_TEST(d.stats.counters.failed == 2U);
  BOOST_TEST(p.log->failed.empty(), "a panic is not a returned error: on_error is not called");
}

BOOST_AUTO_TEST_CASE(work_past_its_deadline_is_shed_at_dispatch_without_being_processed) {
  recorder p;
  auto d = drive(p, base_config(), nothing, [](session& s) {
    item shed = item::of(5);
    shed.ttl = 0;  // its deadline is its enqueue time: past by the time the shard looks
    s.submit(shed);
    s.submit(item::of(6));
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->expired == keys_t{5}), "the deadline had already passed at dispatch");
  BOOST_TEST((p.log->processed == processed_t{{6, std::nullopt}}), "shed work never reaches the processor");
  BOOST_TEST(d.stats.counters.expired == 1U);
  BOOST_TEST(d.stats.counters.started == 2U);
}

BOOST_AUTO_TEST_CASE(idle_state_is_flushed_through_on_evict_and_reloaded_afterwards) {
  recorder p;
  shard_config cfg = base_config();
  cfg.scheduler.evict_after_ns = 0;
  auto log = p.log;
  auto d = drive(p, cfg, nothing, [log](session& s) {
    s.submit(item::of(4));
    // The seed sleeps until its tick has swept the idle key; here the 1 ms
    // tick runs on its own core, and the driver waits for the flush itself.
    if (!s.wait_for([&] { return log->evictions.load() >= 1; }, "the idle sweep to flush key 4")) return;
    s.submit(item::of(4));
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->evicted == evicted_t{{4, 1}, {4, 1}}),
             "the idle sweep flushes the first state, and a sweep or shutdown the second");
  BOOST_TEST((p.log->processed == processed_t{{4, std::nullopt}, {4, std::nullopt}}),
             "a key that was flushed reloads instead of reusing released state");
  BOOST_TEST(d.stats.counters.evicted == 2U);
}

BOOST_AUTO_TEST_CASE(state_still_resident_at_shutdown_is_flushed_before_the_shard_exits) {
  recorder p;
  // An idle window far longer than the test, so nothing is swept: the only
  // thing that can flush these keys is shutdown itself.
  auto d = drive(p, base_config(), nothing, [](session& s) {
    s.submit(item::of(1));
    s.submit(item::of(2));
    s.submit(item::of(1));
    s.route.close();
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  auto evicted = p.log->evicted;
  std::sort(evicted.begin(), evicted.end());
  BOOST_TEST((evicted == evicted_t{{1, 2}, {2, 1}}), "a write-back cache must not drop its writes on a clean shutdown");
  BOOST_TEST(d.stats.gauges.resident == 0U);
}

BOOST_AUTO_TEST_CASE(an_expired_item_releases_its_request_id_for_a_later_retry) {
  recorder p;
  shard_config cfg = base_config();
  cfg.coalesce_duplicates = true;
  auto log = p.log;
  auto d = drive(p, cfg, nothing, [log](session& s) {
    // Shed at dispatch, so this id never reaches a completion: expiry is the
    // only other place that releases it.
    item first = item::retry(3, 77);
    first.ttl = 0;
    s.try_submit(first);
    // on_expired runs after the id is released, so once it is seen the retry
    // meets nothing live (the seed sleeps 5 ms of virtual time for this).
    if (!s.wait_for([&] { return log->expirations.load() >= 1; }, "the first item to expire")) return;
    s.submit(item::retry(3, 77));
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->expired == keys_t{3}));
  BOOST_TEST(p.log->coalesced.empty(), "the original expired, so nothing was live to match");
  BOOST_TEST((p.log->processed == processed_t{{3, std::nullopt}}),
             "an expired item must release its id rather than black-hole the key's retries");
}

BOOST_AUTO_TEST_CASE(queued_work_is_drained_after_the_mailbox_closes) {
  recorder p;
  shard_config cfg = base_config();
  // One in-flight item at a time; and all 16 are queued, the router closed,
  // before the shard starts: everything it runs, it runs after the close.
  cfg.scheduler.max_inflight = {1, 1};
  auto d = drive(
      p, cfg,
      [](session& s) {
        for (std::uint64_t key = 0; key < 16; ++key) s.submit(item::of(key));
        s.route.close();
      },
      nothing);
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST(p.log->processed.size() == 16U, "shutdown must not discard queued work");
  auto keys = by_key(p.log->processed);
  BOOST_TEST(keys.size() == 16U, "each of the 16 keys ran");
  BOOST_TEST(d.stats.counters.completed == 16U);
  BOOST_TEST(p.log->evicted.size() == 16U, "and each key's state was flushed at exit");
}

BOOST_AUTO_TEST_CASE(class_budgets_are_published_per_class) {
  recorder p;
  auto d = drive(p, base_config(), nothing, [](session& s) {
    item other = item::of(1);
    other.c = 1;
    s.submit(other);
    s.submit(item::of(2));
  });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST(d.stats.counters.started == 2U);
  BOOST_TEST(d.stats.counters.completed == 2U);
  BOOST_TEST(d.stats.gauges.pending == 0U, "everything drained");
  BOOST_TEST(d.stats.gauges.resident == 0U, "shutdown released every key it flushed");
  BOOST_TEST((d.stats.gauges.inflight == std::vector<std::size_t>{0, 0}), "one gauge per class, both idle");
}

BOOST_AUTO_TEST_CASE(an_in_doubt_failure_drops_state_and_is_counted_apart_from_other_errors) {
  recorder p = recorder::failing_on(1);
  auto d = drive(
      p, base_config(),
      [](session& s) {
        s.submit(item::of(1));
        s.submit(item::of(1));
        s.submit(item::of(2));
      },
      nothing);
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->failed == keys_t{1, 1}), "on_error sees every classified failure");
  BOOST_TEST((p.log->processed == processed_t{{1, std::nullopt}, {2, std::nullopt}, {1, std::nullopt}}),
             "an in-doubt failure discards the key's state, so the retry reloads");
  BOOST_TEST(d.stats.counters.failed == 2U);
  BOOST_TEST(d.stats.counters.in_doubt == 2U, "in-doubt is counted apart, for alerting");
  BOOST_TEST(d.stats.counters.panicked == 0U, "a returned error is not a panic");
}

BOOST_AUTO_TEST_CASE(a_concurrent_retry_is_coalesced_but_a_later_one_is_admitted) {
  recorder p;
  shard_config cfg = base_config();
  cfg.coalesce_duplicates = true;
  auto d = drive(
      p, cfg,
      [](session& s) {
        // Both reach the mailbox before the shard runs: the second retries
        // an operation that is still outstanding.
        s.try_submit(item::retry(3, 77));
        s.try_submit(item::retry(3, 77));
      },
      [](session& s) {
        // The seed sleeps 5 ms for the original to complete. Its completion
        // (which releases the id) is published by the next 1 ms tick.
        if (!s.wait_for([&] { return s.stats.read().counters.completed >= 1; }, "the original to complete")) return;
        // The original completed and released its id: a fresh operation.
        s.submit(item::retry(3, 77));
      });
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST((p.log->coalesced == keys_t{3}), "the concurrent retry never ran");
  BOOST_TEST((p.log->processed == processed_t{{3, std::nullopt}, {3, 1}}),
             "the original ran once, and the later retry ran against its state");
  BOOST_TEST(d.stats.counters.coalesced == 1U);
}

BOOST_AUTO_TEST_CASE(duplicate_ids_are_ignored_when_coalescing_is_off) {
  recorder p;
  auto d = drive(
      p, base_config(),
      [](session& s) {
        // Queued together, so with coalescing on the second would be dropped.
        s.try_submit(item::retry(4, 9));
        s.try_submit(item::retry(4, 9));
      },
      nothing);
  BOOST_TEST_REQUIRE(d.problem.empty(), d.problem);
  BOOST_TEST(p.log->coalesced.empty());
  BOOST_TEST(p.log->processed.size() == 2U, "coalescing is opt-in and off by default");
  BOOST_TEST(d.stats.counters.coalesced == 0U);
}
