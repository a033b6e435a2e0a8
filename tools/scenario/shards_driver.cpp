#include "tools/scenario/shards_driver.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/shard_oracles.hpp"

namespace lockstep::scenario {
namespace {

/// One unit of work; its identity travels with it so every event names it.
struct shard_item {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t uid = 0;  // run-wide, from 1, in the order actors create items
  std::uint64_t k = 0;
  class_id c = 0;
  std::optional<std::int64_t> ttl;
  std::optional<std::uint64_t> id;
  std::uint64_t actor = 0;
  std::uint64_t seq = 0;  // index among its actor's items
  std::int64_t sent_ns = 0;  // when the actor called submit(): the deadline is no earlier than sent_ns + ttl

  key_type key() const { return k; }
  class_id cls() const { return c; }
  std::optional<std::int64_t> ttl_ns() const { return ttl; }
  std::optional<id_type> request_id() const { return id; }
};

struct fault {
  lockstep::fallout how;
  lockstep::fallout fallout() const { return how; }
};

// A real crash of the process (behaviour outcomes crash_*), to test that the
// harness still reports the seed, the reason and the rerun command.
// Deep enough to run off any fiber stack into its guard page; the bound only
// keeps the compiler from calling it infinite recursion.
[[gnu::noinline]] std::uint64_t descend(std::uint64_t depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == UINT64_MAX) return 0;
  return descend(depth + 1) + static_cast<std::uint64_t>(frame[0]);
}

// no_sanitize: UBSan would stop at the null store first, and gcc's UBSan
// runtime does not run ASan's death callback (the crash report), while a real
// SIGSEGV goes through ASan's handler, which does.
[[noreturn]] __attribute__((no_sanitize("undefined"))) void crash(outcome_kind how) {
  if (how == outcome_kind::crash_abort) std::abort();
  if (how == outcome_kind::crash_overflow) (void)descend(0);
  // Both volatile: the compiler may neither assume the pointer is null nor
  // drop the store before abort(), so the kernel answers it with SIGSEGV.
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
  std::abort();  // not reached
}

/// What the actors, the processors and the shard fibers share; on threads
/// the counts are atomic (event_log.hpp), in the sim plain.
template <class Rt>
struct shared_state {
  explicit shared_state(Rt& rt) : log(rt) {}
  shard_event_log<Rt> log;
  counter<Rt> calls{0};                // process() calls so far, for nth_call rules
  counter<Rt, std::size_t> exited{0};  // shard fibers whose run() returned
  counter<Rt> next_uid{0};             // run-wide item ids, from 1
};

/// Closes the log however drive ends: what teardown does is not the scenario's.
template <class Rt>
struct log_closer {
  shared_state<Rt>& st;
  ~log_closer() { st.log.close(); }
};

shard_event about(shard_event_kind kind, const shard_item& it, std::uint64_t shard) {
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
struct scenario_processor {
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
        break;
    }
    if (behaviour->state == state_model::drop) {
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
  void on_coalesced(const std::uint64_t&, shard_item it) {
    st->log.record(about(shard_event_kind::coalesced, it, shard));
  }
  void on_expired(const std::uint64_t&, shard_item it) { st->log.record(about(shard_event_kind::expired, it, shard)); }
};

static_assert(Processor<scenario_processor<sim::runtime>>);
static_assert(Processor<scenario_processor<threads::runtime>>);

shard_config config_of(const shards_system& sys) {
  shard_config cfg = shard_config::with_budgets(sys.max_inflight);
  cfg.scheduler.max_pending = sys.max_pending;
  cfg.scheduler.evict_after_ns = sys.evict_after_ns;
  cfg.admit_batch = sys.admit_batch;
  cfg.tick_ns = sys.tick_ns;
  cfg.on_panic = sys.panic_abort ? panic_policy::abort : panic_policy::contain;
  cfg.coalesce_duplicates = sys.coalesce_duplicates;
  cfg.check_invariants = false;
  switch (sys.canary) {
    case shards_canary::none: break;
    case shards_canary::skip_final_flush: cfg.canary.skip_final_flush = true; break;
    case shards_canary::keep_expired_request_ids: cfg.canary.keep_expired_request_ids = true; break;
    case shards_canary::lose_expired: cfg.canary.lose_expired = true; break;
    case shards_canary::ignore_pending_cap: cfg.canary.ignore_pending_cap = true; break;
    case shards_canary::lifo_per_key: cfg.canary.scheduler.lifo_per_key = true; break;
    case shards_canary::ignore_budget: cfg.canary.scheduler.ignore_budget = true; break;
    case shards_canary::refile_to_front: cfg.canary.scheduler.refile_to_front = true; break;
    case shards_canary::complete_before_process: cfg.canary.complete_before_process = true; break;
  }
  return cfg;
}

template <class Rt>
void check_expectations(Rt& rt, const scenario& s, const std::vector<shard_event>& log,
                        const std::vector<shard_stats_snapshot>& stats) {
  const expectations& x = *s.expect;
  std::vector<processed_entry> processed;
  std::vector<flushed_entry> flushed;
  std::uint64_t handed_back = 0;
  for (const shard_event& e : log) {
    if (e.kind == shard_event_kind::dispatched) {
      processed.push_back({e.key, e.has_value ? std::optional<std::uint64_t>(e.value) : std::nullopt});
    }
    if (e.kind == shard_event_kind::flushed) flushed.push_back({e.key, e.value});
    handed_back += e.kind == shard_event_kind::handed_back ? 1 : 0;
  }
  auto show_processed = [](const std::vector<processed_entry>& v) {
    std::string out;
    for (const auto& p : v) {
      out += (out.empty() ? "" : " ") + std::string("(") + std::to_string(p.key) + "," +
             (p.state ? std::to_string(*p.state) : "none") + ")";
    }
    return "[" + out + "]";
  };
  auto show_flushed = [](const std::vector<flushed_entry>& v) {
    std::string out;
    for (const auto& p : v) {
      out += (out.empty() ? "" : " ") + std::string("(") + std::to_string(p.key) + "," + std::to_string(p.value) + ")";
    }
    return "[" + out + "]";
  };
  if (x.processed) {
    check(rt, *x.processed == processed, "expect",
               "processed: expected " + show_processed(*x.processed) + ", got " + show_processed(processed));
  }
  if (x.flushed) {
    check(rt, *x.flushed == flushed, "expect",
               "flushed: expected " + show_flushed(*x.flushed) + ", got " + show_flushed(flushed));
  }
  shard_counters sum;
  for (const auto& st : stats) {
    const shard_counters& c = st.counters;
    sum.started += c.started;
    sum.completed += c.completed;
    sum.failed += c.failed;
    sum.in_doubt += c.in_doubt;
    sum.panicked += c.panicked;
    sum.coalesced += c.coalesced;
    sum.expired += c.expired;
    sum.evicted += c.evicted;
  }
  auto expect = [&rt](const char* what, const std::optional<std::uint64_t>& want, std::uint64_t got) {
    if (want) {
      check(rt, *want == got, "expect",
                 std::string(what) + ": expected " + std::to_string(*want) + ", got " + std::to_string(got));
    }
  };
  expect("started", x.started, sum.started);
  expect("completed", x.completed, sum.completed);
  expect("failed", x.failed, sum.failed);
  expect("in_doubt", x.in_doubt, sum.in_doubt);
  expect("panicked", x.panicked, sum.panicked);
  expect("coalesced", x.coalesced, sum.coalesced);
  expect("expired", x.expired, sum.expired);
  expect("evicted", x.evicted, sum.evicted);
  expect("handed_back", x.handed_back, handed_back);
}

}  // namespace

template <class Rt>
void run_shards_scenario(Rt& rt, const scenario& s) {
  using runtime = Rt;
  using processor = scenario_processor<Rt>;
  using router_t = router<runtime, shard_item>;
  using shard_t = shard<runtime, processor>;
  const shards_system& sys = *s.shards;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const log_closer<Rt> closer{*st};
  const shard_config cfg = config_of(sys);

  // The shards, as launch_shards builds them, but each fiber logs its exit so
  // the liveness phase can wait for it with a budget instead of a join.
  std::vector<typename router_t::sender> senders;
  std::vector<typename runtime::task> shard_tasks;
  std::vector<std::shared_ptr<shard_stats<runtime>>> stats;
  for (std::size_t i = 0; i < sys.count; ++i) {
    auto channel = shard_t::mailbox::bounded(rt, sys.mailbox_capacity);
    senders.push_back(std::move(channel.first));
    stats.push_back(std::make_shared<shard_stats<runtime>>(rt));
    processor p{&rt, st, &s.processor, i};
    shard_tasks.push_back(rt.spawn_on(
        static_cast<std::uint32_t>(i % rt.cores()), "shard." + std::to_string(i),
        [&rt, rx = std::move(channel.second), p, stat = stats.back(), cfg, st, i]() mutable {
          run_shard<runtime, processor>(rt, std::move(rx), std::move(p), stat, cfg);
          ++st->exited;
          shard_event e;
          e.kind = shard_event_kind::shard_exited;
          e.shard = i;
          st->log.record(e);
        }));
  }
  // The scenario's handle on the router. A submit holds its own copy of the
  // pointer for the call, so a shutdown by another actor never frees the
  // router under a submit in progress (a dropped Arc, as in the seed). After
  // the shutdown, steps use a closed copy: the engine itself hands work back.
  auto handle = std::make_shared<router_t>(rt, std::move(senders));
  router_t closed = *handle;
  closed.close();
  state_lock<Rt> handle_mu;  // on threads, actors copy and reset `handle` concurrently
  bool dropped = false;
  auto drop = [&] {
    std::shared_ptr<router_t> last;  // released outside the lock: it may be the router's last handle
    {
      const std::lock_guard hold(handle_mu);
      if (dropped) return;
      dropped = true;
      last = std::move(handle);
    }
    last.reset();
    shard_event e;
    e.kind = shard_event_kind::shutdown;
    st->log.record(e);
  };

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    actors.push_back(rt.spawn_on(s.actors[a].core, "actor." + s.actors[a].name, [&, a] {
      std::uint64_t seq = 0;
      for (const step& stp : s.actors[a].steps) {
        switch (stp.what) {
          case step::kind::sleep:
            rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
            break;
          case step::kind::shutdown:
            drop();
            break;
          case step::kind::submit:
          case step::kind::try_submit: {
            const bool via_try = stp.what == step::kind::try_submit;
            for (std::uint64_t i = 0; i < stp.count; ++i) {
              shard_item it;
              it.uid = ++st->next_uid;
              it.k = draw(rt, stp.key);
              it.c = stp.cls;
              it.ttl = stp.ttl_ns;
              if (stp.request_id) {
                const key_spec& r = *stp.request_id;
                it.id = draw(rt, r);
              }
              it.actor = a;
              it.seq = seq++;
              std::shared_ptr<router_t> h;
              {
                const std::lock_guard hold(handle_mu);
                h = handle;
              }
              router_t& route = h ? *h : closed;
              const std::uint64_t shard = route.shard_of(it.k);
              it.sent_ns = st->log.now();  // the log's clock: the deadlines oracle compares it with event times
              const shard_item copy = it;
              send_outcome<shard_item> out = via_try ? route.try_submit(std::move(it)) : route.submit(std::move(it));
              shard_event e = about(out.ok() ? shard_event_kind::submitted : shard_event_kind::handed_back, copy, shard);
              e.via_try = via_try;
              if (!out.ok()) {
                e.detail = static_cast<std::uint8_t>(out.status == send_status::full ? hand_back_reason::full
                                                                                      : hand_back_reason::closed);
                e.value = out.returned ? out.returned->uid : 0;
              }
              st->log.record(e);
              if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
            }
            break;
          }
          case step::kind::route:
          case step::kind::drop_router:
          case step::kind::join:
            break;  // the reader refuses other components' steps
        }
      }
    }));
  }
  for (auto& t : actors) t.join();

  // Liveness: with the workload over, the router goes and every shard must
  // drain its queues, flush its resident state and exit within the budget.
  drop();
  const std::int64_t deadline = rt.now() + s.liveness_ns;
  const std::int64_t quantum = std::max<std::int64_t>(1, s.liveness_ns / 64);
  while (st->exited < sys.count && rt.now() < deadline) rt.sleep_for(std::min(quantum, deadline - rt.now()));
  const bool settled = st->exited == sys.count;

  shard_oracle_settings os;
  os.max_inflight = sys.max_inflight;
  os.max_pending = sys.max_pending;
  os.mailbox_capacity = sys.mailbox_capacity;
  os.coalesce_duplicates = sys.coalesce_duplicates;
  os.enabled = s.oracles;
  if constexpr (std::is_same_v<Rt, threads::runtime>) {
    // On a real clock the engine's deadline check and the processor's call
    // (or the expiry's report) are two instants apart: a dispatch just in
    // time would read as late. The simulator's clock stands still between them.
    std::erase(os.enabled, std::string("deadlines"));
  }
  os.end_of_run = settled;
  if (const auto v = check_shard_log(st->log.events(), os)) check(rt, false, v->oracle, v->message);
  check_liveness(rt, settled, "liveness",
                      std::to_string(sys.count - st->exited) + " of " + std::to_string(sys.count) +
                          " shards still running " + std::to_string(s.liveness_ns) +
                          "ns after the workload and the router's drop (queued work or flushes left)");
  for (auto& t : shard_tasks) t.join();

  if (s.expect) {
    std::vector<shard_stats_snapshot> snaps;
    for (auto& stat : stats) snaps.push_back(stat->read());
    check_expectations(rt, s, st->log.events(), snaps);
  }
}

template void run_shards_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_shards_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
