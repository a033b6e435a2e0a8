#include "tools/scenario/counter_oracles.hpp"

#include <string>

namespace lockstep::scenario {
namespace {

std::string str(std::uint64_t n) { return std::to_string(n); }

struct shard_tally {
  std::uint64_t submitted = 0, completed = 0, failed = 0, in_doubt = 0, panicked = 0;
  std::uint64_t coalesced = 0, expired = 0, flushed = 0;
  std::int64_t wait_bound = 0;
};

}  // namespace

std::optional<violation> check_shard_counters(const std::vector<shard_event>& log,
                                              const std::vector<shard_stats_snapshot>& finals) {
  std::vector<shard_tally> tally(finals.size());
  for (const shard_event& e : log) {
    if (e.shard >= tally.size()) continue;
    shard_tally& t = tally[e.shard];
    switch (e.kind) {
      case shard_event_kind::submitted: ++t.submitted; break;
      case shard_event_kind::dispatched: t.wait_bound += e.t > e.sent_ns ? e.t - e.sent_ns : 0; break;
      case shard_event_kind::completed: {
        ++t.completed;
        const auto d = static_cast<shard_disposition>(e.detail);
        const bool failed = d == shard_disposition::error_clean || d == shard_disposition::error_in_doubt ||
                            d == shard_disposition::panic;
        t.failed += failed ? 1 : 0;
        t.in_doubt += d == shard_disposition::error_in_doubt || d == shard_disposition::panic ? 1 : 0;
        t.panicked += d == shard_disposition::panic ? 1 : 0;
        break;
      }
      case shard_event_kind::coalesced: ++t.coalesced; break;
      case shard_event_kind::expired: ++t.expired; break;
      case shard_event_kind::flushed: ++t.flushed; break;
      case shard_event_kind::handed_back:
      case shard_event_kind::flush_chosen:
      case shard_event_kind::flush_done:
      case shard_event_kind::shutdown:
      case shard_event_kind::shard_exited:
        break;
    }
  }
  // First, on every shard: one that never published shows zeros for every
  // count, and the missing publication, not any one count, is what went wrong.
  for (std::size_t i = 0; i < finals.size(); ++i) {
    if (finals[i].publications == 0) {
      return violation{"counters", "shard " + str(i) + " at exit: it never published its stats (a reader sees 0 for every count)"};
    }
  }
  for (std::size_t i = 0; i < finals.size(); ++i) {
    const shard_counters& c = finals[i].counters;
    const shard_tally& t = tally[i];
    const std::string at = "shard " + str(i) + " at exit: ";
    auto differs = [&](const char* counter, std::uint64_t engine, std::uint64_t logged, const char* what) {
      return violation{"counters", at + counter + " is " + str(engine) + ", but the log shows " + str(logged) + " " +
                                       what};
    };
    if (c.completed != t.completed) return differs("completed", c.completed, t.completed, "process() calls returned");
    if (c.failed != t.failed) return differs("failed", c.failed, t.failed, "errors and panics");
    if (c.in_doubt != t.in_doubt) return differs("in_doubt", c.in_doubt, t.in_doubt, "in-doubt errors and panics");
    if (c.panicked != t.panicked) return differs("panicked", c.panicked, t.panicked, "panics");
    if (c.coalesced != t.coalesced) return differs("coalesced", c.coalesced, t.coalesced, "on_coalesced calls");
    if (c.expired != t.expired) return differs("expired", c.expired, t.expired, "on_expired calls");
    if (c.evicted != t.flushed) return differs("evicted", c.evicted, t.flushed, "on_evict calls");
    if (c.started != t.completed + t.expired) {
      return differs("started", c.started, t.completed + t.expired, "items completed or expired");
    }
    if (c.started + t.coalesced != t.submitted) {
      return differs("started + coalesced", c.started + t.coalesced, t.submitted, "items submitted to the shard");
    }
    if (c.queue_wait_ns < 0 || c.queue_wait_ns > t.wait_bound) {
      return violation{"counters", at + "queue_wait_ns is " + std::to_string(c.queue_wait_ns) +
                                       ", outside 0.." + std::to_string(t.wait_bound) +
                                       " (the sum over dispatches of the time from submit() to process())"};
    }
    const scheduler_snapshot& g = finals[i].gauges;
    std::uint64_t inflight = 0;
    for (const std::size_t n : g.inflight) inflight += n;
    if (g.pending != 0 || inflight != 0 || g.resident != 0 || g.flushing != 0) {
      return violation{"counters", at + "gauges pending " + str(g.pending) + ", in flight " + str(inflight) +
                                       ", resident " + str(g.resident) + ", flushing " + str(g.flushing) +
                                       " (an exited shard holds nothing)"};
    }
  }
  return std::nullopt;
}

std::optional<violation> check_lane_counters(const std::vector<lane_event>& log, std::size_t lane_count) {
  std::uint64_t created = 0, closed = 0;
  for (const lane_event& e : log) {
    created += e.kind == lane_event_kind::lane_created ? 1 : 0;
    closed += e.kind == lane_event_kind::lane_closed ? 1 : 0;
  }
  const std::uint64_t open = created >= closed ? created - closed : 0;
  if (lane_count == open) return std::nullopt;
  return violation{"counters", "lane_count() is " + str(lane_count) + " once the run settled, but the log shows " +
                                   str(created) + " lanes created and " + str(closed) + " closed"};
}

std::optional<violation> check_flight_counters(const std::vector<flight_event>& log, std::size_t in_flight,
                                               std::optional<std::uint64_t> abandoned) {
  if (in_flight != 0) {
    return violation{"counters", "in_flight() is " + str(in_flight) +
                                     " once every waiter and worker ended: a resolved flight was left in the table"};
  }
  if (abandoned) {
    std::uint64_t logged = 0;
    for (const flight_event& e : log) logged += e.kind == flight_event_kind::abandoned ? 1 : 0;
    if (*abandoned != logged) {
      return violation{"counters", "abandoned_total() is " + str(*abandoned) + ", but the log shows " + str(logged) +
                                       " abandoned resolutions"};
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::scenario
