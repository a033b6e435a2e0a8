// engine/tests/shard_race_model.hpp — the model processor behind the shard
// reactor (engine/shard.hpp) and the oracles over what it saw, for the shard
// race tests (engine/tests/test_shard_races.cpp), which generate and pace
// the items. (Scenario files check the shards' event log instead:
// tools/scenario/shard_oracles.hpp.)
//
// Oracles, checked as things happen (processor callbacks, sends) or after
// shutdown (check_after_shutdown): per-key order; at most one item of a key in
// flight, never while it is flushing; class budgets per shard; process() sees
// exactly the latest state kept for its key; deadlines (nothing processed
// late, nothing shed early); every delivered item processed, expired or
// coalesced exactly once, and work handed back by try_submit never seen;
// every resident state flushed exactly once with its latest value; each
// shard's counters consistent with what its processor saw, gauges back to 0.
//
// Failure reporting: every broken rule goes to world::on_violation(oracle,
// message); the tests record the problem and keep going. Invariant: the model draws randomness
// only through world::rt in a fixed order, so a run's bytes depend on the
// seed and the options alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "sim/runtime.hpp"

namespace lockstep::models::grommet {

enum class act : std::uint8_t { keep, drop, fail_clean, fail_in_doubt, panic, gate };

/// One unit of work; its fate (`does`) is fixed before it is sent.
struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t uid = 0;  // unique per run, never 0
  std::uint64_t k = 0;
  class_id c = 0;
  std::optional<std::int64_t> ttl;
  std::optional<std::uint64_t> id;
  std::uint64_t seq = 0;  // submission order within the key, from 1
  act does = act::keep;
  std::int64_t gap_ns = 0;  // a scripted pause before sending (users that pace by rule leave it 0)
  bool use_try = false;
  std::int64_t submitted_ns = 0;

  key_type key() const { return k; }
  class_id cls() const { return c; }
  std::optional<std::int64_t> ttl_ns() const { return ttl; }
  std::optional<id_type> request_id() const { return id; }
};

struct fault {
  lockstep::fallout how;
  lockstep::fallout fallout() const { return how; }
};

/// What one shard's processor saw; compared with the shard's counters at the end.
struct shard_tally {
  std::uint64_t delivered = 0, processed = 0, panics = 0, errors = 0, in_doubt_errors = 0;
  std::uint64_t flushes = 0, coalesced = 0, expired = 0;
};

inline std::string str(std::uint64_t n) { return std::to_string(n); }

/// Everything the oracles track. Plain fields: the simulator is one OS thread.
struct world {
  sim::runtime* rt = nullptr;
  std::vector<std::size_t> budgets;  // max in flight per class, on every shard
  std::vector<shard_tally> shards;
  /// Receives every broken rule; may throw (sim::check) or record and return.
  std::function<void(std::string_view oracle, const std::string& message)> on_violation;
  /// Draws the length of a sleeping piece of work (called after the 4-way draw).
  std::function<std::int64_t(sim::runtime&)> sleep_ns;
  const char* panic_message = "deliberate processor panic";
  bool detach = false;                            // canary: process() returns before its work ends
  sim::runtime::cancellation_token* gate = nullptr;  // act::gate items wait on it
  std::map<std::uint64_t, int> busy_key, flushing_key;
  std::map<std::pair<std::size_t, class_id>, std::size_t> busy_class;  // (shard, class)
  std::map<std::uint64_t, std::uint64_t> last_seq;
  std::map<std::uint64_t, std::optional<std::uint64_t>> resident;  // latest kept state per key
  std::map<std::uint64_t, std::vector<std::optional<std::uint64_t>>> seen_states;
  std::map<std::uint64_t, int> outcomes;    // uid -> times it left
  std::map<std::uint64_t, bool> returned;   // uid -> process() has returned
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> ids_sent;  // (key, id) -> items sent with it
  std::vector<std::uint64_t> delivered, handed_back;

  /// Reports `message` under `oracle` unless `holds`.
  void expect(bool holds, std::string_view oracle, const std::string& message) {
    if (!holds) on_violation(oracle, message);
  }
  void leave(const job& j, const char* how) {
    expect(++outcomes[j.uid] == 1, "every admitted item leaves exactly once",
           "item " + str(j.uid) + " of key " + str(j.k) + " left twice (last: " + how + ")");
  }
  void check_order(const job& j) {
    expect(j.seq > last_seq[j.k], "per-key order",
           "key " + str(j.k) + ": item seq " + str(j.seq) + " left after seq " + str(last_seq[j.k]));
    last_seq[j.k] = j.seq;
  }
  /// Work takes no time, a yield, or a virtual-time sleep drawn by sleep_ns.
  void work_a_little() {
    switch (rt->random() % 4) {
      case 0:
        break;
      case 1:
        rt->yield_now();
        break;
      default:
        rt->sleep_for(sleep_ns(*rt));
        break;
    }
  }
};

/// Holds a key's and a (shard, class)'s in-flight marks while the work lasts.
struct busy_mark {
  world& w;
  std::uint64_t key;
  std::pair<std::size_t, class_id> cls;
  busy_mark(world& wr, std::size_t shard, std::uint64_t k, class_id c) : w(wr), key(k), cls(shard, c) {
    w.expect(w.busy_key[key] == 0, "at most one item of a key in flight", "two items of key " + str(key));
    w.expect(w.flushing_key[key] == 0, "no processing while flushing", "key " + str(key) + " is flushing");
    w.expect(w.busy_class[cls] < w.budgets[c], "class budgets",
             "shard " + str(shard) + " class " + str(c) + " already has " + str(w.busy_class[cls]) +
                 " items in process(), budget " + str(w.budgets[c]));
    ++w.busy_key[key];
    ++w.busy_class[cls];
  }
  ~busy_mark() {
    --w.busy_key[key];
    --w.busy_class[cls];
  }
  busy_mark(const busy_mark&) = delete;
  busy_mark& operator=(const busy_mark&) = delete;
};

/// The shard's processor: does what each job says and checks what it is handed.
struct processor {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = fault;
  world* w;
  std::size_t shard = 0;

  process_result<std::uint64_t, fault> process(const std::uint64_t& key, std::optional<std::uint64_t> state,
                                               job j) {
    world& wr = *w;
    shard_tally& t = wr.shards[shard];
    ++t.processed;
    wr.leave(j, "processed");
    wr.check_order(j);
    wr.expect(!j.ttl || wr.rt->now() < j.submitted_ns + *j.ttl, "deadlines",
              "item " + str(j.uid) + " processed past its deadline");
    const std::optional<std::uint64_t> latest = wr.resident[key];
    wr.expect(state == latest, "process() sees the latest kept state",
              "key " + str(key) + " saw " + (state ? str(*state) : "none") + ", latest kept is " +
                  (latest ? str(*latest) : "none"));
    wr.seen_states[key].push_back(state);
    if (wr.detach) {
      (void)wr.rt->spawn("detached", [&wr, s = shard, key, c = j.c] {
        busy_mark mark(wr, s, key, c);
        wr.work_a_little();
      });
      wr.resident[key] = j.uid;
      wr.returned[j.uid] = true;
      return disposition<std::uint64_t>::keep(j.uid);
    }
    {
      busy_mark mark(wr, shard, key, j.c);
      wr.work_a_little();
      if (j.does == act::gate) wr.gate->cancelled();
    }
    wr.returned[j.uid] = true;
    switch (j.does) {
      case act::drop:
        wr.resident[key].reset();
        return disposition<std::uint64_t>::drop();
      case act::fail_clean:
      case act::fail_in_doubt:
        wr.resident[key].reset();
        ++t.errors;
        t.in_doubt_errors += j.does == act::fail_in_doubt ? 1 : 0;
        return fault{j.does == act::fail_clean ? fallout::clean : fallout::in_doubt};
      case act::panic:
        wr.resident[key].reset();
        ++t.panics;
        throw std::runtime_error(wr.panic_message);
      default:
        wr.resident[key] = j.uid;
        return disposition<std::uint64_t>::keep(j.uid);
    }
  }
  void on_error(const std::uint64_t&, const fault&) {}
  void on_evict(const std::uint64_t& key, std::uint64_t state) {
    world& wr = *w;
    ++wr.shards[shard].flushes;
    wr.expect(wr.busy_key[key] == 0, "no flush while in flight", "key " + str(key));
    const std::optional<std::uint64_t> latest = wr.resident[key];
    wr.expect(latest == state, "every resident state flushed once with its latest value",
              "key " + str(key) + " flushed " + str(state) + ", latest kept is " +
                  (latest ? str(*latest) : "none (a second flush?)"));
    wr.resident[key].reset();
    ++wr.flushing_key[key];
    wr.work_a_little();
    --wr.flushing_key[key];
  }
  void on_coalesced(const std::uint64_t& key, job j) {
    ++w->shards[shard].coalesced;
    w->leave(j, "coalesced");
    w->expect(j.id && w->ids_sent[{key, *j.id}] >= 2, "coalesced only with a live duplicate",
              "item " + str(j.uid) + " coalesced with nothing");
  }
  void on_expired(const std::uint64_t&, job j) {
    ++w->shards[shard].expired;
    w->leave(j, "expired");
    w->check_order(j);
    w->expect(j.ttl && w->rt->now() >= j.submitted_ns + *j.ttl, "deadlines",
              "item " + str(j.uid) + " expired early");
  }
};

static_assert(Processor<processor>);

using router_t = router<sim::runtime, job>;

/// Submits `j` now (any pause is the caller's) and records where it went.
inline void submit(world& w, router_t& route, job j) {
  j.submitted_ns = w.rt->now();
  const std::uint64_t uid = j.uid, key = j.k;
  const std::optional<std::uint64_t> id = j.id;
  const bool use_try = j.use_try;
  const std::size_t shard = route.shard_of(key);
  if (id) ++w.ids_sent[{key, *id}];
  send_outcome<job> sent = use_try ? route.try_submit(std::move(j)) : route.submit(std::move(j));
  if (sent.ok()) {
    w.delivered.push_back(uid);
    ++w.shards[shard].delivered;
    return;
  }
  w.expect(use_try, "submit accepts while the router is open", "submit refused item " + str(uid));
  w.expect(sent.returned && sent.returned->uid == uid, "try_submit hands back the very work",
           "item " + str(uid) + " was refused and other work handed back");
  w.handed_back.push_back(uid);
  if (id) --w.ids_sent[{key, *id}];
}

/// The oracles over the whole run, once every shard has exited.
inline void check_after_shutdown(world& w, const std::vector<shard_stats_snapshot>& stats) {
  for (std::uint64_t uid : w.delivered) {
    w.expect(w.outcomes[uid] == 1, "every admitted item processed, expired or coalesced exactly once",
             "item " + str(uid) + " left " + std::to_string(w.outcomes[uid]) + " times");
  }
  for (std::uint64_t uid : w.handed_back) {
    w.expect(w.outcomes[uid] == 0, "handed-back work never reaches a shard", "item " + str(uid));
  }
  for (const auto& [key, state] : w.resident) {
    w.expect(!state, "every resident state flushed exactly once at shutdown",
             "key " + str(key) + " ended with state " + (state ? str(*state) : "") + " never flushed");
  }
  for (std::size_t s = 0; s < stats.size(); ++s) {
    const shard_counters& c = stats[s].counters;
    const shard_tally& t = w.shards[s];
    auto expect = [&](bool ok, const std::string& identity) {
      w.expect(ok, "counters consistent", "shard " + str(s) + ": " + identity);
    };
    expect(c.started == c.completed + c.expired, "started == completed + expired");
    expect(c.started + c.coalesced == t.delivered, "started + coalesced == delivered");
    expect(c.completed == t.processed, "completed == process() calls");
    expect(c.panicked == t.panics, "panicked == panics");
    expect(c.failed == t.errors + t.panics, "failed == errors + panics");
    expect(c.in_doubt == t.in_doubt_errors + t.panics, "in_doubt == in-doubt errors + panics");
    expect(c.coalesced == t.coalesced, "coalesced == on_coalesced calls");
    expect(c.expired == t.expired, "expired == on_expired calls");
    expect(c.evicted == t.flushes, "evicted == on_evict calls");
    expect(c.queue_wait_ns >= 0, "queue_wait_ns >= 0");
    const scheduler_snapshot& g = stats[s].gauges;
    expect(g.pending == 0 && g.resident == 0 && g.flushing == 0, "gauges pending/resident/flushing back to 0");
    expect(g.inflight == std::vector<std::size_t>(w.budgets.size(), 0), "in-flight gauges back to 0");
  }
}

}  // namespace lockstep::models::grommet
