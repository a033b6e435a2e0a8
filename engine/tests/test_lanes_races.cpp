// Goal: the lane router's lifecycle races hold on every schedule we can draw.
// Four small programs — route vs reap at the TTL boundary, a long handler over
// an empty queue with a tiny TTL, dropping the router with work queued, and
// capacity admission under concurrent producers — each run over 1,000 seeds
// of "random" and 1,000 of "pct" on 2–3 simulated cores, with oracles checked
// on every seed:
//   * strict order per (key, producer) — the only route order a test can know;
//   * every admitted item handled exactly once, every refused item never —
//     also when the router is dropped with work queued: lanes drain what they
//     were given before they exit (that is the contract);
//   * at most one lane per key holding work: no two consumer calls of a key
//     overlap, and the lane (fiber) generation a key is served by never goes
//     back;
//   * no reap while work is pending or in flight: with one key, the last live
//     lane never closes while an admitted item of the key is unfinished;
//   * capacity never exceeded: admitted-and-unfinished items of a key never
//     exceed the capacity they were routed with;
//   * every lane gone once the router is dropped: created == closed (and the
//     map empty, lane_count() == 0, once the program went idle before that).
// Two canaries — routers broken the ways the seed warns about — prove the
// oracles and the sweep can find those bugs.
#define BOOST_TEST_MODULE engine_lanes_races
#include <boost/test/unit_test.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "sim/tests/sim_test_util.hpp"
#include "tools/scenario/lane_canaries.hpp"

using namespace lockstep;
using sim::runtime;

namespace {

using models::velo::item;

using config_t = lane_router_config<std::uint64_t>;

// The oracle lives in tools/scenario/lane_canaries.hpp, shared with the
// scenario lanes driver; the canaries are bugs planted in the real router
// (engine/plant.hpp).
using oracle = models::velo::oracle<item>;

// --- the programs --------------------------------------------------------

/// One race program: who routes what, how the consumer and producers pace
/// themselves, and when the router goes away.
struct plan {
  std::string name;
  std::uint64_t keys = 1;
  std::uint32_t producers = 3, per_producer = 5;
  std::int64_t ttl_ns = 100;
  std::optional<std::size_t> capacity;
  std::function<void(runtime&)> pause;                // between one producer's routes
  std::function<void(runtime&, const item&)> work;    // inside the consumer
  std::function<void(runtime&)> before_drop;          // main, once producers are done
  bool wait_idle_before_drop = true;                  // else drop with work queued
};

struct outcome {
  sim::run_result run;
  std::vector<std::string> violations;
  int refusals = 0;
  int lanes = 0;
  bool dropped_with_work = false;
};

std::int64_t draw(runtime& rt, std::int64_t below) { return static_cast<std::int64_t>(rt.random() % below); }

template <class Pred>
bool poll(runtime& rt, Pred pred, std::int64_t step_ns, int limit) {
  for (int i = 0; i < limit && !pred(); ++i) rt.sleep_for(step_ns);
  return pred();
}

template <class Router>
outcome drive(const plan& p, std::uint64_t seed, const std::string& strategy, std::uint32_t cores) {
  auto cfg = sim::testing::config(seed, strategy, cores);
  cfg.trace = sim::trace_mode::off;
  cfg.options.pct_steps = 250;  // about the length of these programs, in steps
  cfg.max_steps = 2'000'000;
  const std::size_t items = p.producers * p.per_producer;
  outcome out;
  // Every violation is kept (the first 4), each named by its oracle.
  auto o = std::make_shared<oracle>(items, p.keys == 1, p.capacity,
                                    [&out](const char* name, const std::string& message) {
                                      if (out.violations.size() < 4) out.violations.push_back(message + " [" + name + "]");
                                    });
  int unfinished_at_drop = 0;
  out.run = sim::run(cfg, [&](runtime& rt) {
    config_t c;
    c.idle_ttl_ns = p.ttl_ns;
    c.observer = o;
    c.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key + 1); };
    std::optional<Router> router;
    router.emplace(
        rt,
        [&rt, &p, o](item it) {
          o->consume_begin(it, rt.exec().current().id);
          p.work(rt, it);
          o->consume_end(it);
        },
        c);
    std::vector<runtime::task> producers;
    for (std::uint32_t pr = 0; pr < p.producers; ++pr) {
      producers.push_back(rt.spawn_on(pr % rt.cores(), "producer", [&, pr] {
        for (std::uint32_t seq = 0; seq < p.per_producer; ++seq) {
          const item it{p.keys == 1 ? 0 : rt.random() % p.keys, pr, seq, pr * p.per_producer + seq};
          o->routed(it, router->route(it.key, it, p.capacity));
          p.pause(rt);
        }
      }));
    }
    for (auto& t : producers) t.join();
    if (p.wait_idle_before_drop) {
      // A reaped lane leaves the map first and reports closed a moment later.
      if (!poll(rt, [&] { return router->lane_count() == 0 && o->closed == o->created; }, p.ttl_ns, 1000))
        o->violate("lanes reap once idle", "lanes never went idle: " + std::to_string(o->created - o->closed) + " still open");
    }
    if (p.before_drop) p.before_drop(rt);
    for (auto& [key, n] : o->outstanding) unfinished_at_drop += static_cast<int>(n);
    router.reset();
    if (!poll(rt, [&] { return o->closed == o->created; }, p.ttl_ns, 1000))
      o->violate("every lane gone after the drop",
                 "lanes still alive after the router was dropped: " + std::to_string(o->created - o->closed));
    if (!o->all_settled()) o->violate("every admitted item handled exactly once", "admitted items never finished");
    o->final_checks();
  });
  if (!o->deferred.empty()) o->violate("no reap while work is pending", o->deferred);
  out.refusals = static_cast<int>(o->refusals);
  out.lanes = static_cast<int>(o->created);
  out.dropped_with_work = unfinished_at_drop > 0;
  return out;
}

plan route_vs_reap() {
  // One key, three producers that pause to points of the TTL grid, where the
  // lane's idle timeout also falls: routes and reaps meet at the boundary.
  plan p;
  p.name = "route_vs_reap";
  p.producers = 3;
  p.per_producer = 6;
  p.ttl_ns = 100;
  p.pause = [](runtime& rt) { rt.sleep_until((rt.now() / 100 + 1 + draw(rt, 2)) * 100); };
  p.work = [](runtime& rt, const item&) { rt.yield_now(); };
  return p;
}

plan long_handler() {
  // Handlers that outlast a tiny TTL by far, over queues that are often empty.
  plan p;
  p.name = "long_handler";
  p.producers = 2;
  p.per_producer = 5;
  p.ttl_ns = 10;
  p.pause = [](runtime& rt) { rt.sleep_for(draw(rt, 4) * 40); };
  p.work = [](runtime& rt, const item&) { rt.sleep_for(draw(rt, 2) == 0 ? 1 : 150); };
  return p;
}

plan drop_with_queued_work() {
  // Two keys; the router is dropped while lanes still hold queued work (and
  // may be mid-reap, on the grid): each lane drains, then exits.
  plan p;
  p.name = "drop_with_queued_work";
  p.keys = 2;
  p.producers = 2;
  p.per_producer = 5;
  p.ttl_ns = 50;
  p.pause = [](runtime& rt) { rt.sleep_for(draw(rt, 3) * 25); };
  p.work = [](runtime& rt, const item&) { rt.sleep_for(draw(rt, 3) * 20); };
  p.wait_idle_before_drop = false;
  p.before_drop = [](runtime& rt) { rt.sleep_until((rt.now() / 50 + draw(rt, 3)) * 50); };
  return p;
}

plan capacity_admission() {
  // Three producers race to admit into two keys capped at 2 unfinished items.
  plan p;
  p.name = "capacity_admission";
  p.keys = 2;
  p.producers = 3;
  p.per_producer = 6;
  p.ttl_ns = 30;
  p.capacity = 2;
  p.pause = [](runtime& rt) { rt.sleep_for(draw(rt, 2) == 0 ? draw(rt, 3) * 5 : 40); };
  p.work = [](runtime& rt, const item&) { rt.sleep_for(draw(rt, 3) * 10); };
  return p;
}

constexpr std::uint64_t sweep_seeds = 1000;

/// Every seed of both strategies, 2 or 3 cores by seed; each failure names its seed.
template <class Router>
void sweep_clean(const plan& p) {
  int refusals = 0, lanes = 0, dropped_with_work = 0;
  std::uint64_t steps = 0;
  for (const char* strategy : {"random", "pct"}) {
    for (std::uint64_t seed = 0; seed < sweep_seeds; ++seed) {
      const std::uint32_t cores = 2 + static_cast<std::uint32_t>(seed % 2);
      const outcome o = drive<Router>(p, seed, strategy, cores);
      refusals += o.refusals;
      lanes += o.lanes;
      steps += o.run.steps;
      dropped_with_work += o.dropped_with_work;
      BOOST_TEST_CONTEXT(p.name << " seed " << seed << " strategy " << strategy << " cores " << cores) {
        BOOST_TEST(o.run.ok(), (o.run.failed ? o.run.failed->message : ""));
        BOOST_TEST(o.violations.empty(), (o.violations.empty() ? "" : o.violations.front()));
      }
    }
  }
  BOOST_TEST_MESSAGE(p.name << ": " << lanes << " lanes, " << refusals << " refusals, " << dropped_with_work
                              << " runs dropped the router with work unfinished, " << steps / (2 * sweep_seeds)
                              << " steps per run");
  // The program must exercise what it claims to: lanes rebuilt, items refused.
  BOOST_TEST(lanes > static_cast<int>(2 * sweep_seeds * p.keys), p.name << " never rebuilt a lane");
  if (p.capacity) BOOST_TEST(refusals > 0, p.name << " never refused an item");
  if (!p.wait_idle_before_drop) BOOST_TEST(dropped_with_work > 0, p.name << " never dropped with work queued");
}

/// Sweeps a canary over every seed of both strategies; each sweep must find
/// at least one seed that breaks an oracle.
template <class Router>
void sweep_finds(const plan& p, plant::bug bug) {
  const plant::scope planted(bug);
  for (const char* strategy : {"random", "pct"}) {
    std::optional<std::uint64_t> first;
    std::string what;
    int caught = 0;
    for (std::uint64_t seed = 0; seed < sweep_seeds; ++seed) {
      const outcome o = drive<Router>(p, seed, strategy, 2 + static_cast<std::uint32_t>(seed % 2));
      if (o.run.ok() && o.violations.empty()) continue;
      ++caught;
      if (!first) {
        first = seed;
        what = o.run.ok() ? o.violations.front() : o.run.failed->message;
      }
    }
    BOOST_TEST_CONTEXT(p.name << " strategy " << strategy) {
      BOOST_TEST(caught > 0, "the sweep missed a deliberately broken router");
    }
    if (first)
      BOOST_TEST_MESSAGE(p.name << " canary (" << strategy << "): " << caught << " of " << sweep_seeds
                                << " seeds caught, first " << *first << ": " << what);
  }
}

using real_router = lane_router<runtime, std::uint64_t, item>;

}  // namespace

BOOST_AUTO_TEST_CASE(route_vs_reap_holds_every_oracle) { sweep_clean<real_router>(route_vs_reap()); }

BOOST_AUTO_TEST_CASE(long_handler_over_tiny_ttl_holds_every_oracle) { sweep_clean<real_router>(long_handler()); }

BOOST_AUTO_TEST_CASE(drop_with_queued_work_holds_every_oracle) {
  sweep_clean<real_router>(drop_with_queued_work());
}

BOOST_AUTO_TEST_CASE(capacity_admission_holds_every_oracle) { sweep_clean<real_router>(capacity_admission()); }

BOOST_AUTO_TEST_CASE(canary_send_after_unlock_is_caught) {
  sweep_finds<real_router>(route_vs_reap(), plant::bug::lanes_send_after_unlock);
}

BOOST_AUTO_TEST_CASE(canary_decrement_at_dequeue_is_caught) {
  sweep_finds<real_router>(capacity_admission(), plant::bug::lanes_decrement_at_dequeue);
}
