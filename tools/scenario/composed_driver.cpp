#include "tools/scenario/composed_driver.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/scenario/composed_events.hpp"
#include "tools/scenario/composed_oracles.hpp"
#include "tools/scenario/flight_oracles.hpp"
#include "tools/scenario/flight_parts.hpp"
#include "tools/scenario/lane_parts.hpp"
#include "tools/scenario/run_board.hpp"
#include "tools/scenario/shard_parts.hpp"

namespace lockstep::scenario {
namespace {

using lane_item = lane_parts::item;

/// What the consumer shares beyond the components' own states; the shard
/// item numbering and the per-key counts are guarded by `mu` (a no-op in the
/// sim): on threads, lanes of different keys run their consumers at once.
template <class Rt>
struct composition {
  explicit composition(Rt& rt) : log(rt) {}
  composed_event_log<Rt> log;
  state_lock<Rt> mu;
  std::uint64_t next_shard_item = 0;
  std::map<std::uint64_t, std::uint64_t> forwarded_per_key;  // key -> shard items forwarded (their seq)
};

/// Closes every log however drive ends: what teardown does is not the scenario's.
template <class Rt>
struct logs_closer {
  lane_parts::shared_state<Rt>& lanes;
  flight_parts::shared_state<Rt>& flights;
  shard_parts::shared_state<Rt>& shards;
  composition<Rt>& comp;
  ~logs_closer() {
    lanes.log.close();
    flights.log.close();
    shards.log.close();
    comp.log.close();
  }
};

template <class Rt, class Router>
void drive(Rt& rt, const scenario& s) {
  using flight_t = flight_parts::real_flight<Rt>;
  const lanes_system& lanes = *s.lanes;
  const wiring_spec& wiring = *s.wiring;
  auto lst = std::make_shared<lane_parts::shared_state<Rt>>(rt);
  auto fst = std::make_shared<flight_parts::shared_state<Rt>>(rt);
  auto sst = std::make_shared<shard_parts::shared_state<Rt>>(rt);
  auto comp = std::make_shared<composition<Rt>>(rt);
  const logs_closer<Rt> closer{*lst, *fst, *sst, *comp};

  // Built in the order the items flow back: the shards first, then the table,
  // then the lanes whose consumer uses both.
  std::optional<shard_parts::shard_set<Rt>> shards;
  if (s.shards) shards.emplace(rt, s, sst);
  std::unique_ptr<flight_t> table;
  if (s.single_flight) table = std::make_unique<flight_t>(rt, flight_parts::table_observer(fst));

  // What the consumer does with an item whose call goes ok (lane_parts::consume_logged).
  auto body = [&rt, &s, &wiring, &shards, &table, fst, sst, comp](const lane_item& it) {
    std::optional<flight_event> read;
    if (table) {
      const std::uint64_t flight_key = wiring.lookup_key_mod != 0 ? it.key % wiring.lookup_key_mod : it.key;
      const std::uint64_t number = ++fst->waiters;
      const flight_parts::live_token<Rt> counted(fst);  // the lookup runs on this consumer's fiber
      read = flight_parts::waiter_body<Rt, flight_t>(rt, s, fst, *table, flight_key, number, rt.current_core());
      composed_event e{composed_event_kind::looked_up};
      e.item = it.id;
      e.key = it.key;
      e.waiter = number;
      e.flight = read->flight;
      e.answer = read->answer;
      e.value = read->value;
      comp->log.record(e);
    }
    if (!shards) return;
    composed_event e{composed_event_kind::kept};
    e.item = it.id;
    e.key = it.key;
    if (read && read->answer != flight_answer::ok) {
      e.answer = read->answer;
      comp->log.record(e);
      return;
    }
    shard_parts::shard_item si;
    {
      const std::lock_guard hold(comp->mu);
      si.uid = ++comp->next_shard_item;
      // The key's lane is its one sender (one consumer call per key at a
      // time), so the shards' oracles see one actor per key, in its order.
      si.seq = comp->forwarded_per_key[it.key]++;
    }
    si.k = it.key;
    si.c = wiring.forward_class;
    si.ttl = wiring.forward_ttl_ns;
    si.actor = it.key;
    e.kind = composed_event_kind::forwarded;
    e.shard_item = si.uid;
    e.value = read ? read->value : it.id;
    const auto h = shards->get();  // alive for the call and its event, whoever drops the router meanwhile
    e.sent = shard_parts::submit_logged(*sst, *shards, h, si, wiring.forward_via_try);
    comp->log.record(e);
  };
  lane_parts::router_handle<Rt, Router> router{
      std::make_shared<Router>(rt, lane_parts::make_consumer(rt, s, lst, body), lane_parts::config_of(rt, lanes, lst))};

  std::vector<typename Rt::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    actors.push_back(rt.spawn_on(s.actors[a].core, "actor." + s.actors[a].name, [&, a] {
      std::uint64_t seq = 0;
      const board_actor_done finished{rt, a};
      const std::vector<step>& steps = s.actors[a].steps;
      for (std::size_t n = 0; n < steps.size(); ++n) {
        const step& stp = steps[n];
        board_step(rt, a, n, stp);
        if (stp.what == step::kind::sleep) {
          rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
        } else if (stp.what == step::kind::drop_router) {
          router.drop(*lst);
        } else if (stp.what == step::kind::route) {
          for (std::uint64_t i = 0; i < stp.count; ++i) {
            const std::uint64_t key = draw(rt, stp.key);
            std::uint64_t id = 0;
            {
              const std::lock_guard hold(lst->mu);
              id = lst->next_id++;
            }
            lane_parts::route_logged(rt, *lst, router.get(*lst), lane_item{{key, a, seq++, id}, nullptr}, lanes.capacity,
                                     stp.route_capacity);
            if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
          }
        }
        // The reader admits only the lanes' steps in a composed system.
      }
    }));
  }
  board_phase(rt, "workload");
  for (auto& t : actors) t.join();

  // Liveness, in the order the items flow: the lanes drain (and close, when
  // they reap or were dropped), then close once dropped; the lookups'
  // waiters and workers end; the shards drain, flush and exit.
  const bool must_close = router.was_dropped(*lst) || lanes.idle_ttl_ns.has_value();
  board_phase(rt, "liveness: every admitted item handled (and, reaping or dropped, every lane closed)");
  const bool lanes_settled = settle(rt, lst->moved, s.liveness_ns, [&] {
    return lst->admitted == lst->handled && (!must_close || lst->created == lst->closed);
  });
  const std::uint64_t unhandled = lst->admitted - lst->handled;
  const auto lane_count = lane_parts::settled_lane_count(s, *lst, router, lanes_settled);
  const std::uint64_t open_before_drop = lst->created - lst->closed;
  board_phase(rt, "liveness: the router dropped, every lane closing");
  router.drop(*lst);
  settle(rt, lst->moved, s.liveness_ns, [&] { return lst->created == lst->closed; });
  board_phase(rt, "liveness: every lookup answered, every worker done");
  const bool flights_settled = settle(rt, fst->moved, s.liveness_ns, [&] { return fst->live == 0; });
  bool shards_settled = true;
  if (shards) {
    board_phase(rt, "liveness: the shards' router dropped, every shard draining, flushing and exiting");
    shards->drop(*sst);
    shards_settled = shard_parts::wait_for_exit(rt, s, *sst);
  }

  // Every component's rules and counters, then the composition's own: the
  // run fails with the first violation and names every other rule it breaks.
  spec_verdict verdict;
  verdict.add(lane_parts::lane_violations(s, *lst));
  verdict.add(lane_parts::lane_count_violation(*lst, lane_count));
  if (table) {
    verdict.add(flight_parts::flight_violations(s, *fst));
    verdict.add(flight_parts::counter_violation(s, *fst, *table, flights_settled));
  }
  if (shards) {
    verdict.add(shard_parts::shard_violations(s, *sst, shards_settled));
    verdict.add(shard_parts::counter_violation(s, *sst, *shards, shards_settled));
  }
  composed_oracle_settings co;
  co.lookup = table != nullptr;
  co.forward = shards.has_value();
  co.enabled = s.oracles;
  co.end_of_run = lanes_settled && flights_settled && shards_settled;
  const composed_logs logs{&lst->log.events(), table ? &fst->log.events() : nullptr,
                           shards ? &sst->log.events() : nullptr, &comp->log.events()};
  verdict.add(check_composed_logs(logs, co));
  verdict.deliver(rt);

  // Judged as the budget ran out, not after the drop's settle.
  check_liveness(rt, unhandled == 0, "liveness",
                 std::to_string(unhandled) + " admitted items still unhandled (no consumer call returned) " +
                     std::to_string(s.liveness_ns) + "ns after the workload");
  check_liveness(rt, lanes_settled, "liveness",
                 std::to_string(open_before_drop) + " lanes still open " + std::to_string(s.liveness_ns) +
                     "ns after the workload, with idle_ttl_ns set or the router dropped");
  check_liveness(rt, flights_settled, "liveness",
                 std::to_string(fst->live) + " lookup waiter or worker fibers still running " +
                     std::to_string(s.liveness_ns) + "ns after the lanes closed");
  if (shards) {
    check_liveness(rt, shards_settled, "liveness",
                   std::to_string(s.shards->count - sst->exited) + " of " + std::to_string(s.shards->count) +
                       " shards still running " + std::to_string(s.liveness_ns) +
                       "ns after the lanes closed and the shards' router was dropped");
    for (auto& t : shards->tasks) t.join();
  }
  fst->join_all();
}

}  // namespace

template <class Rt>
void run_composed_scenario(Rt& rt, const scenario& s) {
  // Flight canaries are planted only in a single-flight system (the reader
  // refuses them here): one instantiation per lane router, not per pair.
  lane_parts::with_router<Rt>(s, [&]<class Router>() { drive<Rt, Router>(rt, s); });
}

template void run_composed_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_composed_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
