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
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "tools/program_options.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

using sim::runtime;

struct item {
  std::uint64_t key;
  std::uint64_t producer;
  std::uint64_t seq;
  std::uint64_t id;
};

using consumer_fn = std::function<void(item)>;
using config_t = lane_router_config<std::uint64_t>;

std::string str(std::uint64_t n) { return std::to_string(n); }

/// The canary: a lane router whose route() copies the lane's sender and
/// state out of the map, releases the lock, and only then admits and sends.
/// Lanes, reaps and exit guards are the real router's detail parts.
class unlocked_send_router {
  using map_t = detail::lane_map<runtime, std::uint64_t, item>;
  using state_t = detail::lane_state<runtime>;
  using task_t = detail::lane_task<runtime, std::uint64_t, item>;

 public:
  unlocked_send_router(runtime& rt, consumer_fn consumer, config_t cfg)
      : rt_(rt),
        map_(std::make_shared<map_t>(rt)),
        consumer_(std::make_shared<const consumer_fn>(std::move(consumer))),
        cfg_(std::move(cfg)) {}

  route_result<item> route(std::uint64_t key, item it, std::optional<std::size_t> capacity) {
    std::unique_lock<runtime::mutex> hold(map_->mu);
    auto found = map_->lanes.find(key);
    if (found == map_->lanes.end()) found = open_lane(key);
    auto tx = found->second.tx;
    const std::shared_ptr<state_t> state = found->second.state;
    hold.unlock();  // the flaw: the lane may reap before the item is counted and sent
    const std::size_t depth = state->pending.load();
    if (capacity && depth >= *capacity) return {depth, std::move(it)};
    state->pending.fetch_add(1);
    (void)tx.send(std::move(it));  // to a reaped lane: refused, and the item is lost
    return {depth, std::nullopt};
  }

  std::size_t lane_count() {
    std::lock_guard<runtime::mutex> hold(map_->mu);
    return map_->lanes.size();
  }

 private:
  std::map<std::uint64_t, detail::lane_entry<runtime, item>>::iterator open_lane(std::uint64_t key) {
    auto [tx, rx] = runtime::channel<item>::unbounded(rt_);
    auto state = std::make_shared<state_t>(rt_);
    if (cfg_.observer) cfg_.observer->lane_created();
    const std::uint32_t core = cfg_.place ? cfg_.place(key) % rt_.cores() : rt_.current_core();
    auto task = std::make_unique<task_t>(rt_, key, std::move(rx), state, std::weak_ptr<map_t>(map_), consumer_,
                                         cfg_.idle_ttl_ns, cfg_.observer);
    rt_.spawn_on(core, "lane", [task = std::move(task)] { task->run(); });
    return map_->lanes.emplace(key, detail::lane_entry<runtime, item>{std::move(tx), std::move(state)}).first;
  }

  runtime& rt_;
  std::shared_ptr<map_t> map_;
  std::shared_ptr<const consumer_fn> consumer_;
  config_t cfg_;
};

struct settings {
  std::uint64_t keys, producers, items, idle_ttl_ns, capacity, handler_ns, gap_ns;
  bool drop_router_early, canary;
};

/// The oracles' bookkeeping, fed by producers, consumer and lane observer.
/// Checks that would run inside a destructor (lane_closed comes from a lane's
/// exit guard) are deferred to `deferred` and reported by the main fiber.
struct oracle final : lane_observer {
  enum class fate : std::uint8_t { unrouted, admitted, refused, finished };

  explicit oracle(const settings& s)
      : fates(s.producers * s.items, fate::unrouted), handled(s.producers * s.items, 0), cfg(s) {}

  // An item counts as admitted from whichever comes first: route() returning
  // ok or the consumer seeing it; both follow the router's own admission, and
  // "finished" precedes the router's decrement, so the count never overstates.
  void admit(const item& it) {
    if (fates[it.id] != fate::unrouted) return;
    fates[it.id] = fate::admitted;
    const std::uint64_t now = ++outstanding[it.key];
    sim::check(cfg.capacity == 0 || now <= cfg.capacity, "capacity never exceeded",
               "key " + str(it.key) + " holds " + str(now) + " unfinished items, capacity " + str(cfg.capacity));
  }

  void routed(const item& it, const route_result<item>& r) {
    if (r.ok()) {
      sim::check(cfg.capacity == 0 || r.depth < cfg.capacity, "capacity never exceeded",
                 "item " + str(it.id) + " admitted at depth " + str(r.depth));
      admit(it);
      return;
    }
    sim::check(cfg.capacity != 0, "an uncapped route never refuses", "item " + str(it.id) + " refused");
    sim::check(fates[it.id] == fate::unrouted, "refused items are never handled",
               "item " + str(it.id) + " was refused but reached the consumer");
    sim::check(r.returned && r.returned->id == it.id, "a refusal hands the very item back",
               "item " + str(it.id));
    fates[it.id] = fate::refused;
  }

  void consume_begin(const item& it, sim::fiber_id lane) {
    admit(it);
    sim::check(++handled[it.id] == 1, "every admitted item handled exactly once",
               "item " + str(it.id) + " handled twice");
    sim::check(++in_consumer[it.key] == 1, "at most one lane per key holding work",
               "two lanes of key " + str(it.key) + " in the consumer at once");
    const auto g = generation.try_emplace(lane, generation.size()).first->second;
    const auto [newest, first] = newest_generation.try_emplace(it.key, g);
    sim::check(first || g >= newest->second, "at most one lane per key holding work",
               "key " + str(it.key) + " went back to an older lane");
    newest->second = g;
    const auto [last, none] = last_seq.try_emplace({it.key, it.producer}, it.seq);
    sim::check(none || last->second < it.seq, "strict per-key order",
               "key " + str(it.key) + " producer " + str(it.producer) + ": seq " + str(it.seq) + " after " +
                   str(last->second));
    last->second = it.seq;
  }

  void consume_end(const item& it) {
    --in_consumer[it.key];
    fates[it.id] = fate::finished;
    --outstanding[it.key];
  }

  void lane_created() override { ++created; }
  void lane_closed() override {
    // With one key, the last live lane is the only one that can hold its work.
    if (cfg.keys == 1 && created - closed == 1 && outstanding[0] > 0 && deferred.empty()) {
      deferred = "the key's only lane closed with " + str(outstanding[0]) + " unfinished items";
    }
    ++closed;
  }

  [[nodiscard]] bool all_settled() const {
    for (fate f : fates)
      if (f == fate::admitted) return false;
    return true;
  }

  std::vector<fate> fates;
  std::vector<int> handled;
  settings cfg;
  std::map<std::uint64_t, std::uint64_t> outstanding, in_consumer, newest_generation;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> last_seq;
  std::map<sim::fiber_id, std::uint64_t> generation;
  std::uint64_t created = 0, closed = 0;
  std::string deferred;
};

template <class Pred>
bool poll(runtime& rt, Pred pred, std::int64_t step_ns, std::uint64_t limit) {
  for (std::uint64_t i = 0; i < limit && !pred(); ++i) rt.sleep_for(step_ns);
  return pred();
}

template <class Router>
void drive(runtime& rt, const settings& s) {
  auto o = std::make_shared<oracle>(s);
  config_t c;
  if (s.idle_ttl_ns != 0) c.idle_ttl_ns = static_cast<std::int64_t>(s.idle_ttl_ns);
  c.observer = o;
  c.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key + 1); };
  const std::optional<std::size_t> capacity =
      s.capacity == 0 ? std::nullopt : std::optional<std::size_t>(s.capacity);
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
  for (std::size_t id = 0; id < o->fates.size(); ++id) {
    const bool refused = o->fates[id] == oracle::fate::refused;
    sim::check(o->handled[id] == (refused ? 0 : 1), "every admitted item handled exactly once",
               "item " + str(id) + (refused ? " (refused)" : "") + " handled " + std::to_string(o->handled[id]) +
                   " times");
  }
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
