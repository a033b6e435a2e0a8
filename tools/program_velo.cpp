// tools/program_velo.cpp — the `velo` program: producers on several cores
// route items over a few keys through the lane router (engine/lanes.hpp);
// each key's lane hands them to a consumer that takes up to handler_ns of
// virtual time. Producers pace themselves to a grid of idle_ttl_ns, where a
// lane's idle timeout also falls, so routes meet reaps at the boundary. Then
// the router is dropped: after every lane went idle (reaped), or at once with
// work still queued (drop_router_early).
//
// Oracles: strict order per (key, producer) — the only route order a caller
// can know with several producers on a key; every admitted item handled
// exactly once and every refused one never; at most one lane per key holding
// work (no two consumer calls of a key overlap, and the lane a key is served
// by never goes back to an older one); capacity never exceeded; lane_count()
// == 0 once idle before the drop, and every lane closed (created == closed)
// after it. canary=true runs a lane router, built from the real one's detail
// parts, that admits and sends *after* releasing the map lock — the race the
// real route() comment warns about: a lane can reap in between and the item
// lands on a dead lane.
// The canary router and the oracle live in tools/models/velo_model.hpp, shared
// with engine/tests/test_lanes_races.cpp; a broken rule goes to sim::check.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "tools/models/velo_model.hpp"
#include "tools/program_options.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

using sim::runtime;

using models::velo::item;

using config_t = lane_router_config<std::uint64_t>;

using models::velo::str;

/// The canary (tools/models/velo_model.hpp): route() copies the lane's sender
/// and state out of the map, releases the lock, and only then admits and sends.
using unlocked_send_router = models::velo::canary_router<item, true, false>;
using oracle = models::velo::oracle<item>;

struct settings {
  std::uint64_t keys, producers, items, idle_ttl_ns, capacity, handler_ns, gap_ns;
  bool drop_router_early, canary;
};

template <class Pred>
bool poll(runtime& rt, Pred pred, std::int64_t step_ns, std::uint64_t limit) {
  for (std::uint64_t i = 0; i < limit && !pred(); ++i) rt.sleep_for(step_ns);
  return pred();
}

template <class Router>
void drive(runtime& rt, const settings& s) {
  const std::optional<std::size_t> capacity =
      s.capacity == 0 ? std::nullopt : std::optional<std::size_t>(s.capacity);
  auto o = std::make_shared<oracle>(s.producers * s.items, s.keys == 1, capacity,
                                    [](const char* name, const std::string& message) { sim::check(false, name, message); });
  config_t c;
  if (s.idle_ttl_ns != 0) c.idle_ttl_ns = static_cast<std::int64_t>(s.idle_ttl_ns);
  c.observer = o;
  c.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key + 1); };
  std::optional<Router> router;
  router.emplace(
      rt,
      [&rt, o, handler_ns = s.handler_ns](item it) {
        o->consume_begin(it, rt.exec().current().id);
        if (handler_ns > 0 && rt.random() % 3 != 0) {
          rt.sleep_for(static_cast<std::int64_t>(rt.random() % (handler_ns + 1)));
        } else {
          rt.yield_now();
        }
        o->consume_end(it);
      },
      c);
  // Producers pace themselves to the idle-TTL grid (or gap_ns when lanes never reap).
  const auto grid = static_cast<std::int64_t>(s.idle_ttl_ns != 0 ? s.idle_ttl_ns : s.gap_ns);
  std::vector<runtime::task> producers;
  for (std::uint64_t pr = 0; pr < s.producers; ++pr) {
    producers.push_back(rt.spawn_on(static_cast<std::uint32_t>(pr % rt.cores()), "producer." + str(pr), [&, pr] {
      for (std::uint64_t seq = 0; seq < s.items; ++seq) {
        const item it{rt.random() % s.keys, pr, seq, pr * s.items + seq};
        o->routed(it, router->route(it.key, it, capacity));
        if (seq + 1 == s.items) break;  // no pause after the last: an early drop finds work queued
        if (grid > 0) {
          rt.sleep_until((rt.now() / grid + 1 + static_cast<std::int64_t>(rt.random() % 2)) * grid);
        } else {
          rt.yield_now();
        }
      }
    }));
  }
  for (auto& t : producers) t.join();
  const auto step = static_cast<std::int64_t>(1 + s.idle_ttl_ns + s.handler_ns);
  const std::uint64_t limit = 100 + s.producers * s.items;
  if (!s.drop_router_early) {
    if (s.idle_ttl_ns != 0) {
      // A reaped lane leaves the map first and reports closed a moment later.
      const bool idle = poll(rt, [&] { return router->lane_count() == 0 && o->closed == o->created; }, step, limit);
      sim::check(idle, "lanes reap once idle",
                 "lane_count()=" + str(router->lane_count()) + ", " + str(o->created - o->closed) + " lanes open");
    } else {
      sim::check(poll(rt, [&] { return o->all_settled(); }, step, limit), "every admitted item handled",
                 "admitted items never finished before the drop");
    }
  }
  router.reset();
  sim::check(poll(rt, [&] { return o->closed == o->created; }, step, limit), "every lane gone after the drop",
             "created " + str(o->created) + " lanes, closed " + str(o->closed));
  sim::check(o->deferred.empty(), "no reap while work is pending", o->deferred);
  sim::check(o->all_settled(), "every admitted item handled exactly once", "admitted items never finished");
  o->final_checks();
}

settings settings_of(const nlohmann::json& o) {
  return settings{o["keys"],       o["producers"], o["items"],  o["idle_ttl_ns"],       o["capacity"],
                  o["handler_ns"], o["gap_ns"],    o["drop_router_early"], o["canary"]};
}

void run_velo(runtime& rt, const nlohmann::json& options) {
  const settings s = settings_of(options);
  if (s.canary) {
    drive<unlocked_send_router>(rt, s);
  } else {
    drive<lane_router<runtime, std::uint64_t, item>>(rt, s);
  }
}

nlohmann::json normalise_velo(const json_reader& r) {
  const nlohmann::json& given = options_object(r);
  reject_unknown_options(r, given,
                         {"keys", "producers", "items", "idle_ttl_ns", "capacity", "handler_ns", "gap_ns",
                          "drop_router_early", "canary"});
  constexpr std::uint64_t second = 1'000'000'000;
  nlohmann::json o;
  o["keys"] = option_u64(r, given, "keys", 2, 1, 1024);
  o["producers"] = option_u64(r, given, "producers", 3, 1, 64);
  o["items"] = option_u64(r, given, "items", 6, 1, 100'000);
  o["idle_ttl_ns"] = option_u64(r, given, "idle_ttl_ns", 100, 0, 3600 * second);
  o["capacity"] = option_u64(r, given, "capacity", 2, 0, 1 << 20);
  o["handler_ns"] = option_u64(r, given, "handler_ns", 60, 0, 3600 * second);
  o["gap_ns"] = option_u64(r, given, "gap_ns", 100, 0, 3600 * second);
  o["drop_router_early"] = option_bool(r, given, "drop_router_early", false);
  o["canary"] = option_bool(r, given, "canary", false);
  return o;
}

}  // namespace

program velo_program() {
  program p;
  p.description =
      "producers route keyed items through the lane router, lanes reap when idle, then the router is dropped; "
      "oracles: per-key order, every admitted item once, one lane per key holding work, capacity, every lane "
      "closed (canary=true sends after releasing the map lock)";
  p.normalise = normalise_velo;
  p.run = run_velo;
  return p;
}

}  // namespace lockstep::cli
