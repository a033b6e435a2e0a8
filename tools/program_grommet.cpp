// tools/program_grommet.cpp — the `grommet` program: N shard reactors
// (engine/shard.hpp) behind their router (engine/router.hpp), fed by
// producers on several cores, then shut down (router closed, shards joined).
//
// Every item's fate is fixed by its index, so a seed changes only the
// schedule and the random draws of the pauses: item u panics when
// panic_every divides u + 1, fails (clean or in doubt) when fail_every does,
// carries a deadline (0 or ttl_ns) every ttl_every items, retries its key's
// previous request id every retry_every items of that key, and goes through
// try_submit every try_every items. Key k has one sender, producer
// k % producers, so its submission order is well defined.
//
// Oracles (sim::check, at the moment a rule breaks, or after shutdown):
// per-key order; at most one item of a key in flight, never while it is
// flushing; class budgets per shard; the state process() sees is the latest
// kept for the key; deadlines (nothing processed late, nothing shed early);
// every admitted item processed, expired or coalesced exactly once, and work
// handed back by try_submit never seen; every resident state flushed exactly
// once with its latest value; every shard's counters consistent with what
// its processor saw, and its gauges back to 0. canary=true runs the reactor
// with shard_canary::skip_final_flush: it exits without its write-back.
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
#include "tools/program_options.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

using sim::runtime;

enum class act : std::uint8_t { keep, fail_clean, fail_in_doubt, panic };

struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t uid = 0;
  std::uint64_t k = 0;
  class_id c = 0;
  std::optional<std::int64_t> ttl;
  std::optional<std::uint64_t> id;
  std::uint64_t seq = 0;  // submission order within the key, from 1
  act does = act::keep;
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

struct settings {
  std::uint64_t shards, keys, producers, items, mailbox, max_pending;
  std::vector<std::size_t> budgets;
  std::uint64_t ttl_every, ttl_ns, panic_every, fail_every, retry_every, try_every;
  std::uint64_t work_ns, gap_ns, evict_after_ns, tick_ns;
  bool coalesce, canary;
};

settings settings_of(const nlohmann::json& o) {
  settings s{};
  s.shards = o["shards"];
  s.keys = o["keys"];
  s.producers = o["producers"];
  s.items = o["items"];
  s.mailbox = o["mailbox"];
  s.max_pending = o["max_pending"];
  for (const auto& b : o["budgets"]) s.budgets.push_back(b.get<std::size_t>());
  s.ttl_every = o["ttl_every"];
  s.ttl_ns = o["ttl_ns"];
  s.panic_every = o["panic_every"];
  s.fail_every = o["fail_every"];
  s.retry_every = o["retry_every"];
  s.try_every = o["try_every"];
  s.work_ns = o["work_ns"];
  s.gap_ns = o["gap_ns"];
  s.evict_after_ns = o["evict_after_ns"];
  s.tick_ns = o["tick_ns"];
  s.coalesce = o["coalesce"];
  s.canary = o["canary"];
  return s;
}

/// What one shard's processor saw; compared with the shard's counters at the end.
struct shard_tally {
  std::uint64_t delivered = 0, processed = 0, panics = 0, errors = 0, in_doubt_errors = 0;
  std::uint64_t flushes = 0, coalesced = 0, expired = 0;
};

std::string str(std::uint64_t n) { return std::to_string(n); }

/// Everything the oracles track. Plain fields: the simulator is one OS thread.
struct world {
  runtime* rt = nullptr;
  settings cfg;
  std::vector<shard_tally> shards;
  std::map<std::uint64_t, int> busy_key, flushing_key;
  std::map<std::pair<std::size_t, class_id>, std::size_t> busy_class;  // (shard, class)
  std::map<std::uint64_t, std::uint64_t> last_seq;
  std::map<std::uint64_t, std::optional<std::uint64_t>> resident;  // latest kept state per key
  std::map<std::uint64_t, int> outcomes;                           // uid -> times it left
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> ids_sent;  // (key, id) -> items sent with it
  std::vector<std::uint64_t> delivered, handed_back;

  void leave(const job& j, const char* how) {
    sim::check(++outcomes[j.uid] == 1, "every admitted item leaves exactly once",
               "item " + str(j.uid) + " of key " + str(j.k) + " left twice (last: " + how + ")");
  }
  void check_order(const job& j) {
    sim::check(j.seq > last_seq[j.k], "per-key order",
               "key " + str(j.k) + ": item seq " + str(j.seq) + " left after seq " + str(last_seq[j.k]));
    last_seq[j.k] = j.seq;
  }
  /// Work takes no time, a yield, or a virtual-time sleep of up to work_ns.
  void work_a_little() {
    switch (rt->random() % 4) {
      case 0:
        break;
      case 1:
        rt->yield_now();
        break;
      default:
        rt->sleep_for(static_cast<std::int64_t>(rt->random() % (cfg.work_ns + 1)));
        break;
    }
  }
};

/// Holds a key's and a (shard, class)'s in-flight marks while process() works.
struct busy_mark {
  world& w;
  std::uint64_t key;
  std::pair<std::size_t, class_id> cls;
  busy_mark(world& wr, std::size_t shard, std::uint64_t k, class_id c) : w(wr), key(k), cls(shard, c) {
    sim::check(w.busy_key[key] == 0, "at most one item of a key in flight", "two items of key " + str(key));
    sim::check(w.flushing_key[key] == 0, "no processing while flushing", "key " + str(key) + " is flushing");
    sim::check(w.busy_class[cls] < w.cfg.budgets[c], "class budgets",
               "shard " + str(shard) + " class " + str(c) + " already has " + str(w.busy_class[cls]) +
                   " items in process(), budget " + str(w.cfg.budgets[c]));
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

struct model_processor {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = fault;
  world* w;
  std::size_t shard;

  process_result<std::uint64_t, fault> process(const std::uint64_t& key, std::optional<std::uint64_t> state,
                                               job j) {
    world& wr = *w;
    shard_tally& t = wr.shards[shard];
    ++t.processed;
    wr.leave(j, "processed");
    wr.check_order(j);
    sim::check(!j.ttl || wr.rt->now() < j.submitted_ns + *j.ttl, "deadlines",
               "item " + str(j.uid) + " processed past its deadline");
    const std::optional<std::uint64_t> latest = wr.resident[key];
    sim::check(state == latest, "process() sees the latest kept state",
               "key " + str(key) + " saw " + (state ? str(*state) : "none") + ", latest kept is " +
                   (latest ? str(*latest) : "none"));
    {
      busy_mark mark(wr, shard, key, j.c);
      wr.work_a_little();
    }
    switch (j.does) {
      case act::fail_clean:
      case act::fail_in_doubt:
        wr.resident[key].reset();
        ++t.errors;
        t.in_doubt_errors += j.does == act::fail_in_doubt ? 1 : 0;
        return fault{j.does == act::fail_clean ? fallout::clean : fallout::in_doubt};
      case act::panic:
        wr.resident[key].reset();
        ++t.panics;
        throw std::runtime_error("deliberate processor panic (panic_every)");
      default:
        wr.resident[key] = j.uid;
        return disposition<std::uint64_t>::keep(j.uid);
    }
  }
  void on_error(const std::uint64_t&, const fault&) {}
  void on_evict(const std::uint64_t& key, std::uint64_t state) {
    world& wr = *w;
    ++wr.shards[shard].flushes;
    sim::check(wr.busy_key[key] == 0, "no flush while in flight", "key " + str(key));
    const std::optional<std::uint64_t> latest = wr.resident[key];
    sim::check(latest == state, "every resident state flushed once with its latest value",
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
    sim::check(j.id && w->ids_sent[{key, *j.id}] >= 2, "coalesced only with a live duplicate",
               "item " + str(j.uid) + " coalesced with nothing");
  }
  void on_expired(const std::uint64_t&, job j) {
    ++w->shards[shard].expired;
    w->leave(j, "expired");
    w->check_order(j);
    sim::check(j.ttl && w->rt->now() >= j.submitted_ns + *j.ttl, "deadlines",
               "item " + str(j.uid) + " expired early");
  }
};

static_assert(Processor<model_processor>);

using router_t = router<runtime, job>;

/// The items producer p sends, fixed by index (see the file comment).
std::vector<job> generate(runtime& rt, const settings& s, std::uint64_t producer,
                          std::map<std::uint64_t, std::uint64_t>& seqs,
                          std::map<std::uint64_t, std::uint64_t>& last_id) {
  std::vector<std::uint64_t> owned;
  for (std::uint64_t k = producer; k < s.keys; k += s.producers) owned.push_back(k);
  std::vector<job> out;
  for (std::uint64_t i = 0; i < s.items; ++i) {
    job j;
    j.uid = producer * s.items + i + 1;
    j.k = owned[rt.random() % owned.size()];
    j.c = static_cast<class_id>(j.uid % s.budgets.size());
    j.seq = ++seqs[j.k];
    if (s.ttl_every != 0 && j.uid % s.ttl_every == 0) {
      j.ttl = (j.uid / s.ttl_every) % 2 == 0 ? 0 : static_cast<std::int64_t>(s.ttl_ns);
    }
    const bool retry = s.retry_every != 0 && j.seq % s.retry_every == 0 && last_id.count(j.k) != 0;
    j.id = retry ? last_id[j.k] : j.uid;
    last_id[j.k] = *j.id;
    if (s.panic_every != 0 && j.uid % s.panic_every == 0) {
      j.does = act::panic;
    } else if (s.fail_every != 0 && j.uid % s.fail_every == 0) {
      j.does = j.uid % 2 == 0 ? act::fail_clean : act::fail_in_doubt;
    }
    j.use_try = s.try_every != 0 && j.uid % s.try_every == 0;
    out.push_back(j);
  }
  return out;
}

void send(world& w, router_t& route, job j) {
  runtime& rt = *w.rt;
  if (w.cfg.gap_ns > 0 && rt.random() % 2 == 0) {
    rt.sleep_for(static_cast<std::int64_t>(rt.random() % (w.cfg.gap_ns + 1)));
  }
  j.submitted_ns = rt.now();
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
  sim::check(use_try, "submit accepts while the router is open", "submit refused item " + str(uid));
  sim::check(sent.returned && sent.returned->uid == uid, "try_submit hands back the very work",
             "item " + str(uid) + " was refused and other work handed back");
  w.handed_back.push_back(uid);
  if (id) --w.ids_sent[{key, *id}];
}

void check_after_shutdown(world& w, const std::vector<shard_stats_snapshot>& stats) {
  for (std::uint64_t uid : w.delivered) {
    sim::check(w.outcomes[uid] == 1, "every admitted item processed, expired or coalesced exactly once",
               "item " + str(uid) + " left " + std::to_string(w.outcomes[uid]) + " times");
  }
  for (std::uint64_t uid : w.handed_back) {
    sim::check(w.outcomes[uid] == 0, "handed-back work never reaches a shard", "item " + str(uid));
  }
  for (const auto& [key, state] : w.resident) {
    sim::check(!state, "every resident state flushed exactly once at shutdown",
               "key " + str(key) + " ended with state " + (state ? str(*state) : "") + " never flushed");
  }
  for (std::size_t s = 0; s < stats.size(); ++s) {
    const shard_counters& c = stats[s].counters;
    const shard_tally& t = w.shards[s];
    auto expect = [&](bool ok, const std::string& identity) {
      sim::check(ok, "counters consistent", "shard " + str(s) + ": " + identity);
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
    const scheduler_snapshot& g = stats[s].gauges;
    expect(g.pending == 0 && g.resident == 0 && g.flushing == 0, "gauges pending/resident/flushing back to 0");
    expect(g.inflight == std::vector<std::size_t>(w.cfg.budgets.size(), 0), "in-flight gauges back to 0");
  }
}

void run_grommet(runtime& rt, const nlohmann::json& options) {
  world w;
  w.rt = &rt;
  w.cfg = settings_of(options);
  const settings& s = w.cfg;
  w.shards.assign(s.shards, shard_tally{});

  shard_config cfg = shard_config::with_budgets(s.budgets);
  cfg.scheduler.max_pending = s.max_pending;
  cfg.scheduler.evict_after_ns = static_cast<std::int64_t>(s.evict_after_ns);
  cfg.tick_ns = static_cast<std::int64_t>(s.tick_ns);
  cfg.admit_batch = 2;
  cfg.coalesce_duplicates = s.coalesce;
  cfg.check_invariants = true;
  cfg.canary.skip_final_flush = s.canary;

  std::map<std::uint64_t, std::uint64_t> seqs, last_id;
  std::vector<std::vector<job>> plans;
  for (std::uint64_t p = 0; p < s.producers; ++p) plans.push_back(generate(rt, s, p, seqs, last_id));

  auto group = launch_shards<runtime, model_processor>(
      rt, s.shards, [&w](std::size_t i) { return model_processor{&w, i}; }, cfg, s.mailbox);
  std::vector<runtime::task> producers;
  for (std::uint64_t p = 0; p < s.producers; ++p) {
    producers.push_back(rt.spawn_on(static_cast<std::uint32_t>(p % rt.cores()), "producer." + str(p), [&, p] {
      for (job& j : plans[p]) send(w, group.route, j);
    }));
  }
  for (auto& t : producers) t.join();
  group.shutdown();
  std::vector<shard_stats_snapshot> stats;
  for (auto& st : group.stats) stats.push_back(st->read());
  check_after_shutdown(w, stats);
}

nlohmann::json normalise_grommet(const json_reader& r) {
  const nlohmann::json& given = options_object(r);
  reject_unknown_options(r, given,
                         {"shards", "keys", "producers", "items", "budgets", "mailbox", "max_pending", "ttl_every",
                          "ttl_ns", "panic_every", "fail_every", "retry_every", "try_every", "coalesce",
                          "work_ns", "gap_ns", "evict_after_ns", "tick_ns", "canary"});
  constexpr std::uint64_t second = 1'000'000'000;
  nlohmann::json o;
  o["shards"] = option_u64(r, given, "shards", 2, 1, 8);
  o["keys"] = option_u64(r, given, "keys", 6, 1, 1024);
  o["producers"] = option_u64(r, given, "producers", 2, 1, 8);
  if (o["keys"].get<std::uint64_t>() < o["producers"].get<std::uint64_t>()) {
    // Each key has exactly one sender, so every producer needs a key of its own.
    r.fail(given.contains("keys") ? "/keys" : "/producers",
           "at least as many keys as producers (each key has one sender), found keys " + o["keys"].dump() +
               " and producers " + o["producers"].dump());
  }
  o["items"] = option_u64(r, given, "items", 10, 1, 100'000);
  o["budgets"] = option_u64_list(r, given, "budgets", {1, 2}, 1, 4, 1, 64);
  o["mailbox"] = option_u64(r, given, "mailbox", 2, 1, 1 << 16);
  o["max_pending"] = option_u64(r, given, "max_pending", 3, 1, 1 << 16);
  o["ttl_every"] = option_u64(r, given, "ttl_every", 4, 0, 1'000'000);
  o["ttl_ns"] = option_u64(r, given, "ttl_ns", 1'000'000, 0, 3600 * second);
  o["panic_every"] = option_u64(r, given, "panic_every", 7, 0, 1'000'000);
  o["fail_every"] = option_u64(r, given, "fail_every", 5, 0, 1'000'000);
  o["retry_every"] = option_u64(r, given, "retry_every", 3, 0, 1'000'000);
  o["try_every"] = option_u64(r, given, "try_every", 3, 0, 1'000'000);
  o["coalesce"] = option_bool(r, given, "coalesce", true);
  o["work_ns"] = option_u64(r, given, "work_ns", 750'000, 0, 3600 * second);
  o["gap_ns"] = option_u64(r, given, "gap_ns", 2'000'000, 0, 3600 * second);
  o["evict_after_ns"] = option_u64(r, given, "evict_after_ns", 500'000, 0, 3600 * second);
  o["tick_ns"] = option_u64(r, given, "tick_ns", 1'000'000, 1, 3600 * second);
  o["canary"] = option_bool(r, given, "canary", false);
  return o;
}

}  // namespace

program grommet_program() {
  program p;
  p.description =
      "shard reactors behind their router, producers on several cores, then shutdown; oracles: per-key order, "
      "one item per key in flight, class budgets, latest state, deadlines, every item once, every resident "
      "state flushed once, counters (canary=true skips the final flush)";
  p.normalise = normalise_grommet;
  p.run = run_grommet;
  return p;
}

}  // namespace lockstep::cli
