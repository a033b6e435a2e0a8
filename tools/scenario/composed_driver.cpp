#include "tools/scenario/composed_driver.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/scenario/composed_events.hpp"
#include "tools/scenario/composed_oracles.hpp"
#include "tools/scenario/flight_oracles.hpp"
#include "tools/scenario/flight_parts.hpp"
#include "tools/scenario/lane_oracles.hpp"
#include "tools/scenario/lane_parts.hpp"
#include "tools/scenario/shard_oracles.hpp"
#include "tools/scenario/shard_parts.hpp"

namespace lockstep::scenario {
namespace {

using sim::runtime;
using lane_item = lane_parts::item;
using flight_t = flight_parts::real_flight;

/// What the consumer shares beyond the components' own states.
struct composition {
  explicit composition(runtime& rt) : log(rt) {}
  composed_event_log log;
  std::uint64_t next_shard_item = 0;
  std::map<std::uint64_t, std::uint64_t> forwarded_per_key;  // key -> shard items forwarded (their seq)
};

/// Closes every log however drive ends: what teardown does is not the scenario's.
struct logs_closer {
  lane_parts::shared_state& lanes;
  flight_parts::shared_state& flights;
  shard_parts::shared_state& shards;
  composition& comp;
  ~logs_closer() {
    lanes.log.close();
    flights.log.close();
    shards.log.close();
    comp.log.close();
  }
};

/// Sleeps in slices until done() or the budget is spent; returns done().
template <class Done>
bool settle(runtime& rt, std::int64_t budget_ns, Done done) {
  const std::int64_t deadline = rt.now() + budget_ns;
  const std::int64_t quantum = std::max<std::int64_t>(1, budget_ns / 64);
  while (!done() && rt.now() < deadline) rt.sleep_for(std::min(quantum, deadline - rt.now()));
  return done();
}

template <class Router>
void drive(runtime& rt, const scenario& s) {
  const lanes_system& lanes = *s.lanes;
  const wiring_spec& wiring = *s.wiring;
  auto lst = std::make_shared<lane_parts::shared_state>(rt);
  auto fst = std::make_shared<flight_parts::shared_state>(rt);
  auto sst = std::make_shared<shard_parts::shared_state>(rt);
  auto comp = std::make_shared<composition>(rt);
  const logs_closer closer{*lst, *fst, *sst, *comp};

  // Built in the order the items flow back: the shards first, then the table,
  // then the lanes whose consumer uses both.
  std::optional<shard_parts::shard_set> shards;
  if (s.shards) shards.emplace(shard_parts::start_shards(rt, s, sst));
  std::unique_ptr<flight_t> table;
  if (s.single_flight) {
    table = std::make_unique<flight_t>(rt, [fst](const std::uint64_t& key, std::uint64_t id, lockstep::flight_event e) {
      if (e == lockstep::flight_event::cancelled) {
        fst->log.record(flight_parts::about(flight_event_kind::cancelled, key, id));
      }
      if (e == lockstep::flight_event::retired) {
        fst->log.record(flight_parts::about(flight_event_kind::retired, key, id));
      }
    });
  }

  lane_router_config<std::uint64_t> cfg;
  cfg.idle_ttl_ns = lanes.idle_ttl_ns;
  cfg.observer = std::make_shared<lane_parts::observer>(rt, lst);
  if (lanes.place_by_key) cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key); };

  auto consumer = [&rt, &s, &wiring, &shards, &table, lst, fst, sst, comp](lane_item it) {
    const sim::fiber_id lane = rt.exec().current().id;
    lst->lane_key.try_emplace(lane, it.key);
    lst->log.record({lane_event_kind::handle_begin, 0, it.key, it.id, it.producer, it.seq, lane, 0});
    const std::uint64_t ns = draw(rt, s.consumer_duration);
    if (ns > 0) {
      rt.sleep_for(static_cast<std::int64_t>(ns));
    } else {
      rt.yield_now();  // a scheduling point even for an instant consumer
    }
    std::optional<flight_event> read;
    if (table) {
      const std::uint64_t flight_key = wiring.lookup_key_mod != 0 ? it.key % wiring.lookup_key_mod : it.key;
      const std::uint64_t number = ++fst->waiters;
      read = flight_parts::waiter_body<flight_t>(rt, s, fst, *table, flight_key, number, rt.exec().current().core);
      composed_event e{composed_event_kind::looked_up};
      e.item = it.id;
      e.key = it.key;
      e.waiter = number;
      e.flight = read->flight;
      e.answer = read->answer;
      e.value = read->value;
      comp->log.record(e);
    }
    if (shards) {
      composed_event e{composed_event_kind::kept};
      e.item = it.id;
      e.key = it.key;
      if (read && read->answer != flight_answer::ok) {
        e.answer = read->answer;
        comp->log.record(e);
      } else {
        shard_parts::shard_item si;
        si.uid = ++comp->next_shard_item;
        si.k = it.key;
        si.c = wiring.forward_class;
        si.ttl = wiring.forward_ttl_ns;
        // The key's lane is its one sender (one consumer call per key at a
        // time), so the shards' oracles see one actor per key, in its order.
        si.actor = it.key;
        si.seq = comp->forwarded_per_key[it.key]++;
        e.kind = composed_event_kind::forwarded;
        e.shard_item = si.uid;
        e.value = read ? read->value : it.id;
        const std::shared_ptr<shard_parts::router_t> h = shards->handle;  // alive for the call, whoever drops it
        e.sent = shard_parts::submit_logged(rt, *sst, *shards, h, si, wiring.forward_via_try);
        comp->log.record(e);
      }
    }
    ++lst->handled;
    lst->log.record({lane_event_kind::handled, 0, it.key, it.id, it.producer, it.seq, lane, 0});
  };
  // The scenario's handle on the lanes (route_logged copies it per call).
  std::shared_ptr<Router> router = std::make_shared<Router>(rt, consumer, cfg);
  bool dropped = false;
  auto drop = [&] {
    if (dropped) return;
    dropped = true;
    router.reset();
    lst->log.record({lane_event_kind::router_dropped});
  };

  std::uint64_t next_id = 0;
  std::vector<runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    actors.push_back(rt.spawn_on(s.actors[a].core, "actor." + s.actors[a].name, [&, a] {
      std::uint64_t seq = 0;
      for (const step& stp : s.actors[a].steps) {
        if (stp.what == step::kind::sleep) {
          rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
        } else if (stp.what == step::kind::drop_router) {
          drop();
        } else if (stp.what == step::kind::route) {
          for (std::uint64_t i = 0; i < stp.count; ++i) {
            const lane_item it{draw(rt, stp.key), a, seq++, next_id++};
            lane_parts::route_logged(rt, *lst, router, it, lanes.capacity, stp.route_capacity);
            if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
          }
        }
        // The reader admits only the lanes' steps in a composed system.
      }
    }));
  }
  for (auto& t : actors) t.join();

  // Liveness, in the order the items flow: the lanes drain (and close, when
  // they reap or were dropped), then close once dropped; the lookups'
  // waiters and workers end; the shards drain, flush and exit.
  const bool must_close = dropped || lanes.idle_ttl_ns.has_value();
  const bool lanes_settled = settle(rt, s.liveness_ns, [&] {
    return lst->admitted == lst->handled && (!must_close || lst->created == lst->closed);
  });
  const std::uint64_t open_before_drop = lst->created - lst->closed;
  drop();
  settle(rt, s.liveness_ns, [&] { return lst->created == lst->closed; });
  const bool flights_settled = settle(rt, s.liveness_ns, [&] { return fst->live == 0; });
  bool shards_settled = true;
  if (shards) {
    shards->drop(*sst);
    shards_settled = shard_parts::wait_for_exit(rt, s, *sst);
  }

  lane_oracle_settings lo;
  lo.capacity = lanes.capacity;
  lo.enabled = s.oracles;
  lo.any_route_capacity = s.any_route_capacity();
  if (const auto v = check_lane_log(lst->log.events(), lo)) {
    if (v->oracle == "liveness") sim::check_liveness(false, v->oracle, v->message);
    sim::check(false, v->oracle, v->message);
  }
  if (table) {
    flight_oracle_settings fo;
    fo.enabled = s.oracles;
    if (const auto v = check_flight_log(fst->log.events(), fo)) sim::check(false, v->oracle, v->message);
  }
  if (shards) {
    const shards_system& sys = *s.shards;
    shard_oracle_settings so;
    so.max_inflight = sys.max_inflight;
    so.max_pending = sys.max_pending;
    so.mailbox_capacity = sys.mailbox_capacity;
    so.coalesce_duplicates = sys.coalesce_duplicates;
    so.enabled = s.oracles;
    so.end_of_run = shards_settled;
    if (const auto v = check_shard_log(sst->log.events(), so)) sim::check(false, v->oracle, v->message);
  }
  composed_oracle_settings co;
  co.lookup = table != nullptr;
  co.forward = shards.has_value();
  co.enabled = s.oracles;
  co.end_of_run = lanes_settled && flights_settled && shards_settled;
  const composed_logs logs{&lst->log.events(), table ? &fst->log.events() : nullptr,
                           shards ? &sst->log.events() : nullptr, &comp->log.events()};
  if (const auto v = check_composed_logs(logs, co)) sim::check(false, v->oracle, v->message);

  sim::check_liveness(lanes_settled || !must_close, "liveness",
                      std::to_string(open_before_drop) + " lanes still open " + std::to_string(s.liveness_ns) +
                          "ns after the workload, with idle_ttl_ns set or the router dropped");
  sim::check_liveness(lst->admitted == lst->handled, "liveness",
                      std::to_string(lst->admitted - lst->handled) + " admitted items still unhandled " +
                          std::to_string(s.liveness_ns) + "ns after the workload");
  sim::check_liveness(flights_settled, "liveness",
                      std::to_string(fst->live) + " lookup waiter or worker fibers still running " +
                          std::to_string(s.liveness_ns) + "ns after the lanes closed");
  if (shards) {
    sim::check_liveness(shards_settled, "liveness",
                        std::to_string(s.shards->count - sst->exited) + " of " + std::to_string(s.shards->count) +
                            " shards still running " + std::to_string(s.liveness_ns) +
                            "ns after the lanes closed and the shards' router was dropped");
    for (auto& t : shards->tasks) t.join();
  }
  for (std::size_t i = 0; i < fst->tasks.size(); ++i) fst->tasks[i].join();
}

}  // namespace

void run_composed_scenario(runtime& rt, const scenario& s) {
  // Flight canaries are planted only in a single-flight system (the reader
  // refuses them here): one instantiation per lane router, not per pair.
  switch (s.lanes->canary) {
    case lanes_canary::none: drive<lane_router<runtime, std::uint64_t, lane_item>>(rt, s); break;
    case lanes_canary::send_after_unlock: drive<models::velo::canary_router<lane_item, true, false>>(rt, s); break;
    case lanes_canary::decrement_at_dequeue: drive<models::velo::canary_router<lane_item, false, true>>(rt, s); break;
    case lanes_canary::replace_lane_on_route:
      drive<models::velo::canary_router<lane_item, false, false, true>>(rt, s);
      break;
  }
}

}  // namespace lockstep::scenario
