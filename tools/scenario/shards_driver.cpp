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
#include "tools/scenario/crash.hpp"
#include "tools/scenario/draws.hpp"
#include "tools/scenario/run_board.hpp"
#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/shard_oracles.hpp"
#include "tools/scenario/shard_parts.hpp"

namespace lockstep::scenario {
namespace {

using shard_parts::shard_item;
using shard_parts::shared_state;

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
    std::vector<processed_entry> want = *x.processed;
    const bool any = x.unordered("processed");
    const bool same = same_list(any, want, processed);
    check(rt, same, "expect",
          list_label("processed", any) + ": expected " + show_processed(want) + ", got " + show_processed(processed));
  }
  if (x.flushed) {
    std::vector<flushed_entry> want = *x.flushed;
    const bool any = x.unordered("flushed");
    const bool same = same_list(any, want, flushed);
    check(rt, same, "expect",
          list_label("flushed", any) + ": expected " + show_flushed(want) + ", got " + show_flushed(flushed));
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

/// One published counter or gauge of a snapshot (shard_stat_names()).
std::uint64_t stat_of(const shard_stats_snapshot& snap, const std::string& name) {
  const shard_counters& c = snap.counters;
  const scheduler_snapshot& g = snap.gauges;
  if (name == "started") return c.started;
  if (name == "completed") return c.completed;
  if (name == "failed") return c.failed;
  if (name == "in_doubt") return c.in_doubt;
  if (name == "panicked") return c.panicked;
  if (name == "coalesced") return c.coalesced;
  if (name == "expired") return c.expired;
  if (name == "evicted") return c.evicted;
  if (name == "pending") return g.pending;
  if (name == "resident") return g.resident;
  if (name == "flushing") return g.flushing;
  if (name == "publications") return snap.publications;
  std::uint64_t inflight = 0;  // "inflight": the reader admits only the names above and this one
  for (const std::size_t n : g.inflight) inflight += n;
  return inflight;
}

/// The step's stat as the shards last published it: one shard's, or summed.
template <class Rt>
std::uint64_t read_stat(shard_parts::shard_set<Rt>& shards, const step& stp) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < shards.stats.size(); ++i) {
    if (stp.stat_shard && *stp.stat_shard != i) continue;
    sum += stat_of(shards.stats[i]->read(), stp.stat);
  }
  return sum;
}

/// "stat S of shard I" or "stat S summed over the shards", for a report.
std::string stat_label(const step& stp) {
  return "stat " + stp.stat + (stp.stat_shard ? " of shard " + std::to_string(*stp.stat_shard) : " summed over the shards");
}

}  // namespace

template <class Rt>
void run_shards_scenario(Rt& rt, const scenario& s) {
  using runtime = Rt;
  const shards_system& sys = *s.shards;
  auto st = std::make_shared<shared_state<Rt>>(rt);
  const shard_parts::log_closer<Rt> closer{*st};
  shard_parts::shard_set<Rt> shards(rt, s, st);

  std::vector<typename runtime::task> actors;
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    actors.push_back(rt.spawn_on(s.actors[a].core, "actor." + s.actors[a].name, [&, a] {
      std::uint64_t seq = 0;
      const board_actor_done finished{rt, a};
      const std::vector<step>& steps = s.actors[a].steps;
      for (std::size_t n = 0; n < steps.size(); ++n) {
        const step& stp = steps[n];
        board_step(rt, a, n, stp);
        switch (stp.what) {
          case step::kind::sleep:
            rt.sleep_for(static_cast<std::int64_t>(stp.sleep_ns));
            break;
          case step::kind::shutdown:
            shards.drop(*st);
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
              // Held to the end of the iteration, through the gap: the router
              // lives while an actor is between two of its submits.
              const auto h = shards.get();
              shard_parts::submit_logged(*st, shards, h, it, via_try);
              if (i + 1 < stp.count && stp.gap_ns > 0) rt.sleep_for(static_cast<std::int64_t>(stp.gap_ns));
            }
            break;
          }
          case step::kind::wait_until: {
            // The reader admits only shard stats here: the last values the shards published (each tick).
            const std::uint64_t got =
                poll_until(rt, s.liveness_ns, stp.poll_ns, stp.observed, [&] { return read_stat(shards, stp); });
            check_liveness(rt, got == stp.observed, "liveness",
                           "actor " + s.actors[a].name + " step " + std::to_string(n) + ": wait_until " +
                               stat_label(stp) + " " + std::to_string(stp.observed) + " still " + std::to_string(got) +
                               " after " + std::to_string(s.liveness_ns) + "ns");
            break;
          }
          case step::kind::observe: {
            const std::uint64_t got = read_stat(shards, stp);
            check(rt, got == stp.observed, "observe",
                  "actor " + s.actors[a].name + " step " + std::to_string(n) + ": " + stat_label(stp) + " is " +
                      std::to_string(got) + " at t=" + std::to_string(st->log.now()) + "ns (as last published), " +
                      "the file expects " + std::to_string(stp.observed));
            break;
          }
          case step::kind::route:
          case step::kind::drop_router:
          case step::kind::join:
          case step::kind::leave:
          case step::kind::cancel_worker:
          case step::kind::cancel_lane:
            break;  // the reader refuses other components' steps
        }
      }
    }));
  }
  board_phase(rt, "workload");
  for (auto& t : actors) t.join();

  // Liveness: with the workload over, the router goes and every shard must
  // drain its queues, flush its resident state and exit within the budget.
  board_phase(rt, "liveness: the router dropped, every shard draining, flushing and exiting");
  shards.drop(*st);
  const bool settled = shard_parts::wait_for_exit(rt, s, *st);
  spec_verdict verdict;
  verdict.add(shard_parts::shard_violations(s, *st, settled));
  verdict.add(shard_parts::counter_violation(s, *st, shards, settled));
  verdict.deliver(rt);
  check_liveness(rt, settled, "liveness",
                      std::to_string(sys.count - st->exited) + " of " + std::to_string(sys.count) +
                          " shards still running " + std::to_string(s.liveness_ns) +
                          "ns after the workload and the router's drop (queued work or flushes left)");
  for (auto& t : shards.tasks) t.join();

  if (s.expect) {
    std::vector<shard_stats_snapshot> snaps;
    for (auto& stat : shards.stats) snaps.push_back(stat->read());
    check_expectations(rt, s, st->log.events(), snaps);
  }
}

template void run_shards_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_shards_scenario<threads::runtime>(threads::runtime&, const scenario&);

}  // namespace lockstep::scenario
