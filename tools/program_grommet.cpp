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
// The model processor and these oracles live in tools/models/grommet_model.hpp,
// shared with engine/tests/test_shard_races.cpp; a broken rule goes to sim::check.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "tools/models/grommet_model.hpp"
#include "tools/program_options.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

using sim::runtime;

using models::grommet::act;
using models::grommet::job;
using models::grommet::router_t;
using models::grommet::str;

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

/// Sends after a random pause of up to gap_ns (half the time).
void send(models::grommet::world& w, const settings& s, router_t& route, job j) {
  runtime& rt = *w.rt;
  if (s.gap_ns > 0 && rt.random() % 2 == 0) {
    rt.sleep_for(static_cast<std::int64_t>(rt.random() % (s.gap_ns + 1)));
  }
  models::grommet::submit(w, route, std::move(j));
}

void run_grommet(runtime& rt, const nlohmann::json& options) {
  const settings s = settings_of(options);
  models::grommet::world w;
  w.rt = &rt;
  w.budgets = s.budgets;
  w.shards.assign(s.shards, models::grommet::shard_tally{});
  w.on_violation = [](std::string_view oracle, const std::string& message) { sim::check(false, oracle, message); };
  // Work takes no time, a yield, or a virtual-time sleep of up to work_ns.
  w.sleep_ns = [work_ns = s.work_ns](runtime& r) { return static_cast<std::int64_t>(r.random() % (work_ns + 1)); };
  w.panic_message = "deliberate processor panic (panic_every)";

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

  using models::grommet::processor;
  auto group = launch_shards<runtime, processor>(
      rt, s.shards, [&w](std::size_t i) { return processor{&w, i}; }, cfg, s.mailbox);
  std::vector<runtime::task> producers;
  for (std::uint64_t p = 0; p < s.producers; ++p) {
    producers.push_back(rt.spawn_on(static_cast<std::uint32_t>(p % rt.cores()), "producer." + str(p), [&, p] {
      for (job& j : plans[p]) send(w, s, group.route, j);
    }));
  }
  for (auto& t : producers) t.join();
  group.shutdown();
  std::vector<shard_stats_snapshot> stats;
  for (auto& st : group.stats) stats.push_back(st->read());
  models::grommet::check_after_shutdown(w, stats);
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
           "at least as many keys as producers (each key has one sender), found keys " + shown(o["keys"]) +
               " and producers " + shown(o["producers"]));
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
