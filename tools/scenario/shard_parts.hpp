// tools/scenario/shard_parts.hpp — the one copy of a shard scenario's
// setup, for every driver that has shards (shards_driver.cpp alone,
// composed_driver.cpp behind the lanes), on either backend: the work item,
// the processor that does what behaviour.processor says and logs each call,
// the engine config a shards_system asks for, the running shards (one fiber
// per shard, each logging its exit) behind the scenario's router handle, a
// submit that logs what the router returned, the liveness wait and the shard
// oracles' verdict.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "tools/scenario/crash.hpp"
#include "tools/scenario/counter_oracles.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/shard_oracles.hpp"
#include "tools/scenario/spec_verdict.hpp"

namespace lockstep::scenario::shard_parts {

/// One unit of work; its identity travels with it so every event names it.
struct shard_item {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t uid = 0;  // run-wide, from 1, in the order items are created
  std::uint64_t k = 0;
  class_id c = 0;
  std::optional<std::int64_t> ttl;
  std::optional<std::uint64_t> id;
  std::uint64_t actor = 0;
  std::uint64_t seq = 0;  // index among its actor's items
  std::int64_t sent_ns = 0;  // when submit() was called: the deadline is no earlier than sent_ns + ttl

  key_type key() const { return k; }
  class_id cls() const { return c; }
  std::optional<std::int64_t> ttl_ns() const { return ttl; }
  std::optional<id_type> request_id() const { return id; }
};

struct fault {
  lockstep::fallout how;
  lockstep::fallout fallout() const { return how; }
};

/// What the actors, the processors and the shard fibers share; on threads
/// the counts are atomic (event_log.hpp), in the sim plain.
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt), moved(rt) {}
  shard_event_log<Rt> log;
  progress<Rt> moved;  // after each change of exited
  counter<Rt> calls{0};                // process() calls so far, for nth_call rules
  counter<Rt, std::size_t> exited{0};  // shard fibers whose run() returned
  counter<Rt> next_uid{0};             // run-wide item ids, from 1
};

/// Closes the log however a drive ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

inline shard_event about(shard_event_kind kind, const shard_item& it, std::uint64_t shard) {
  shard_event e;
  e.kind = kind;
  e.key = it.k;
  e.item = it.uid;
  e.actor = it.actor;
  e.seq = it.seq;
  e.shard = shard;
  e.cls = it.c;
  e.request_id = it.id;
  e.sent_ns = it.sent_ns;
  e.ttl_ns = it.ttl;
  return e;
}

/// Does what behaviour.processor says, and logs each call.
template <class Rt>
struct processor {
  using work_type = shard_item;
  using state_type = std::uint64_t;
  using error_type = fault;
  Rt* rt;
  std::shared_ptr<shared_state<Rt>> st;
  const processor_behaviour* behaviour;
  std::uint64_t shard;

  process_result<std::uint64_t, fault> process(const std::uint64_t& key, std::optional<std::uint64_t> state,
                                               shard_item it) {
    shard_event seen = about(shard_event_kind::dispatched, it, shard);
    seen.has_value = state.has_value();
    seen.value = state.value_or(0);
    st->log.record(seen);
    const outcome_kind outcome = decide(key);
    const std::uint64_t ns = draw(*rt, behaviour->duration_ns);
    if (ns > 0) {
      rt->sleep_for(static_cast<std::int64_t>(ns));
    } else {
      rt->yield_now();  // a scheduling point even for an instant processor
    }
    shard_event done = about(shard_event_kind::completed, it, shard);
    auto finish = [&](shard_disposition d) {
      done.detail = static_cast<std::uint8_t>(d);
      st->log.record(done);
    };
    switch (outcome) {
      case outcome_kind::error_clean:
        finish(shard_disposition::error_clean);
        return fault{fallout::clean};
      case outcome_kind::error_in_doubt:
        finish(shard_disposition::error_in_doubt);
        return fault{fallout::in_doubt};
      case outcome_kind::panic:
        finish(shard_disposition::panic);
        throw std::runtime_error("deliberate processor panic (behaviour.processor.outcomes)");
      case outcome_kind::crash_segv:
      case outcome_kind::crash_abort:
      case outcome_kind::crash_overflow:
        crash(outcome);
      case outcome_kind::ok:
      case outcome_kind::drop:
        break;
    }
    if (behaviour->state == state_model::drop || outcome == outcome_kind::drop) {
      finish(shard_disposition::drop);
      return disposition<std::uint64_t>::drop();
    }
    done.has_value = true;
    done.value = behaviour->state == state_model::accumulate ? state.value_or(0) + 1 : it.uid;
    finish(shard_disposition::keep);
    return disposition<std::uint64_t>::keep(done.value);
  }

  // The first rule that matches wins; a percent rule draws only when reached,
  // so the draws a run makes depend on the schedule and the seed alone.
  outcome_kind decide(std::uint64_t key) {
    const std::uint64_t call = ++st->calls;
    for (const outcome_rule& r : behaviour->outcomes) {
      bool match = false;
      switch (r.on) {
        case outcome_rule::when::key: match = key == r.value; break;
        case outcome_rule::when::nth_call: match = call == r.value; break;
        case outcome_rule::when::percent: match = rt->random() % 100 < r.value; break;
      }
      if (match) return r.outcome;
    }
    return outcome_kind::ok;
  }

  void on_error(const std::uint64_t&, const fault&) {}

  void on_evict(const std::uint64_t& key, std::uint64_t state) {
    shard_event e;
    e.kind = shard_event_kind::flushed;
    e.key = key;
    e.shard = shard;
    e.value = state;
    st->log.record(e);
    rt->yield_now();  // a write-back takes a scheduling point: dispatches may try to race it
    e.kind = shard_event_kind::flush_done;
    st->log.record(e);
  }
  // The reactor took the key's state to flush: an idle sweep, or the final flush.
  void on_flush_chosen(const std::uint64_t& key, bool final) {
    shard_event e;
    e.kind = shard_event_kind::flush_chosen;
    e.key = key;
    e.shard = shard;
    e.value = final ? 1 : 0;
    st->log.record(e);
  }
  void on_coalesced(const std::uint64_t&, shard_item it) {
    st->log.record(about(shard_event_kind::coalesced, it, shard));
  }
  void on_expired(const std::uint64_t&, shard_item it) { st->log.record(about(shard_event_kind::expired, it, shard)); }
};

static_assert(Processor<processor<sim::runtime>>);
static_assert(Processor<processor<threads::runtime>>);

inline shard_config config_of(const shards_system& sys) {
  shard_config cfg = shard_config::with_budgets(sys.max_inflight);
  cfg.scheduler.max_pending = sys.max_pending;
  cfg.scheduler.evict_after_ns = sys.evict_after_ns;
  cfg.admit_batch = sys.admit_batch;
  cfg.tick_ns = sys.tick_ns;
  cfg.on_panic = sys.panic_abort ? panic_policy::abort : panic_policy::contain;
  cfg.coalesce_duplicates = sys.coalesce_duplicates;
  cfg.check_invariants = false;
  return cfg;
}

/// The running shards, as launch_shards builds them, but each fiber logs its
/// exit so the liveness phase can wait for it with a budget instead of a
/// join. The scenario's handle on the router: a submit takes its own copy of
/// the pointer for the call (get), so a shutdown by another actor never
/// frees the router under a submit in progress (a dropped Arc, as in the
/// seed); after the drop, submits go through a closed copy and the engine
/// itself hands their work back. On threads, actors copy and reset the
/// handle concurrently: under `mu`.
template <class Rt>
struct shard_set {
  using router_t = router<Rt, shard_item>;
  using shard_t = shard<Rt, processor<Rt>>;

  shard_set(Rt& rt, const scenario& s, const std::shared_ptr<shared_state<Rt>>& st) {
    const shards_system& sys = *s.shards;
    const shard_config cfg = config_of(sys);
    std::vector<typename router_t::sender> senders;
    for (std::size_t i = 0; i < sys.count; ++i) {
      auto channel = shard_t::mailbox::bounded(rt, sys.mailbox_capacity);
      senders.push_back(std::move(channel.first));
      stats.push_back(std::make_shared<shard_stats<Rt>>(rt));
      processor<Rt> p{&rt, st, &s.processor, i};
      tasks.push_back(rt.spawn_on(
          static_cast<std::uint32_t>(i % rt.cores()), "shard." + std::to_string(i),
          [&rt, rx = std::move(channel.second), p, stat = stats.back(), cfg, st, i]() mutable {
            run_shard<Rt, processor<Rt>>(rt, std::move(rx), std::move(p), stat, cfg);
            shard_event e;
            e.kind = shard_event_kind::shard_exited;
            e.shard = i;
            st->log.record(e);
            // Counted once logged: the liveness phase waits on the count, then judges the log.
            ++st->exited;
            st->moved.changed();
          }));
    }
    handle = std::make_shared<router_t>(rt, std::move(senders));
    closed.emplace(*handle);
    closed->close();
  }

  std::shared_ptr<router_t> get() {
    const std::lock_guard hold(mu);
    return handle;
  }

  /// Drops the scenario's router (once): the shards drain, flush and exit.
  /// The `shutdown` event is logged as the drop begins, under `mu`: every
  /// submit that finds the router gone (and so hands its work back closed)
  /// is logged after it, and every flush logged before it is an idle sweep's.
  void drop(shared_state<Rt>& st) {
    std::shared_ptr<router_t> last;  // released outside the lock: it may be the router's last handle
    {
      const std::lock_guard hold(mu);
      if (dropped) return;
      shard_event e;
      e.kind = shard_event_kind::shutdown;
      st.log.record(e);
      dropped = true;
      last = std::move(handle);
    }
    last.reset();
  }

  std::shared_ptr<router_t> handle;
  std::optional<router_t> closed;
  std::vector<typename Rt::task> tasks;
  std::vector<std::shared_ptr<shard_stats<Rt>>> stats;
  state_lock<Rt> mu;
  bool dropped = false;
};

/// Sends `it` through submit() or try_submit() of `h` (the caller's copy of
/// the handle, shard_set::get) or, once the router was dropped, of the closed
/// copy; logs what came back; true when it was sent.
template <class Rt>
bool submit_logged(shared_state<Rt>& st, shard_set<Rt>& set, const std::shared_ptr<typename shard_set<Rt>::router_t>& h,
                   shard_item it, bool via_try) {
  typename shard_set<Rt>::router_t& route = h ? *h : *set.closed;
  const std::uint64_t shard = route.shard_of(it.k);
  it.sent_ns = st.log.now();  // the log's clock: the deadlines oracle compares it with event times
  const shard_item copy = it;
  send_outcome<shard_item> out = via_try ? route.try_submit(std::move(it)) : route.submit(std::move(it));
  shard_event e = about(out.ok() ? shard_event_kind::submitted : shard_event_kind::handed_back, copy, shard);
  e.via_try = via_try;
  if (!out.ok()) {
    e.detail = static_cast<std::uint8_t>(out.status == send_status::full ? hand_back_reason::full
                                                                          : hand_back_reason::closed);
    e.value = out.returned ? out.returned->uid : 0;
  }
  st.log.record(e);
  return out.ok();
}

/// Waits up to liveness_ns for every shard to exit; true when they all did.
template <class Rt>
bool wait_for_exit(Rt& rt, const scenario& s, shared_state<Rt>& st) {
  return settle(rt, st.moved, s.liveness_ns, [&] { return st.exited == s.shards->count; });
}

/// The shard rules' violations over the log (`settled`: every shard exited,
/// so what must hold at the end is checked too), first in log order.
template <class Rt>
std::vector<violation> shard_violations(const scenario& s, shared_state<Rt>& st, bool settled) {
  const shards_system& sys = *s.shards;
  shard_oracle_settings os;
  os.max_inflight = sys.max_inflight;
  os.max_pending = sys.max_pending;
  os.mailbox_capacity = sys.mailbox_capacity;
  os.coalesce_duplicates = sys.coalesce_duplicates;
  os.evict_after_ns = sys.evict_after_ns;
  os.enabled = s.oracles;
  if constexpr (!is_sim<Rt>) {
    // On a real clock the engine's deadline check and the processor's call
    // (or the expiry's report) are two instants apart: a dispatch just in
    // time would read as late. The simulator's clock stands still between them.
    std::erase(os.enabled, std::string("deadlines"));
  }
  os.end_of_run = settled;
  return every_rule_broken(os, [&st](const shard_oracle_settings& o) { return check_shard_log(st.log.events(), o); });
}

/// The `counters` oracle (counter_oracles.hpp): once every shard has exited,
/// each shard's last published stats against the log.
template <class Rt>
std::optional<violation> counter_violation(const scenario& s, shared_state<Rt>& st, shard_set<Rt>& set, bool settled) {
  if (!settled || !s.checks("counters")) return std::nullopt;
  std::vector<shard_stats_snapshot> finals;
  for (const auto& stat : set.stats) finals.push_back(stat->read());
  return check_shard_counters(st.log.events(), finals);
}

}  // namespace lockstep::scenario::shard_parts
