// tools/scenario/counter_oracles.hpp — the `counters` oracle: what each
// component counts about itself agrees with what its event log says
// happened, at the end of every run, under every strategy (before, counts
// were compared only where a fifo file pinned them with `expect`).
//
// Shards (grommet's ShardStats, engine/shard_stats.hpp), per shard, from the
// stats it publishes as it exits, against the log's events on that shard:
//   completed   every process() outcome harvested: one per `completed`;
//   failed      those that returned an error or panicked (the seed's
//               `fallout` is set for both);
//   in_doubt    those whose fallout is in doubt: in-doubt errors and panics
//               ("a panic tells us nothing about what the work managed to
//               do first": Fallout::InDoubt);
//   panicked    those that panicked;
//   coalesced   one per on_coalesced; expired one per on_expired;
//   evicted     one per on_evict (idle sweeps and the final flush);
//   started     every admitted item ends once: completed + expired; and
//               every item sent to the shard was admitted or coalesced:
//               submitted - coalesced;
//   queue_wait_ns  at most the sum over dispatches of (process() began -
//               submit() was called): the engine measures from the router's
//               stamp to its dispatch, both inside that window;
//   gauges      nothing pending, in flight, resident or flushing once the
//               shard has exited; and it published at least once.
// Lanes (velo's lane_count), once the liveness phase settled: the lanes in
//   the router's map are those the log saw created and not closed (a lane
//   leaves the map before its lane_closed: the exit guard or the reap).
// Single flight (probation's table), once every waiter and worker ended:
//   no flight is left in the table (each resolution retires its slot), and
//   the table's count of abandoned resolutions is the log's.
//
// busy_ns is not judged: it is the reactor's own time, which no event shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/shard_stats.hpp"
#include "tools/scenario/flight_events.hpp"
#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/shard_events.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

/// `finals[i]`: shard i's last publication, read after every shard exited.
std::optional<violation> check_shard_counters(const std::vector<shard_event>& log,
                                              const std::vector<shard_stats_snapshot>& finals);

/// `lane_count`: the router's lane_count() once the liveness phase settled.
std::optional<violation> check_lane_counters(const std::vector<lane_event>& log, std::size_t lane_count);

/// `in_flight`: the table's in_flight() once every waiter and worker ended;
/// `abandoned`: its abandoned_total(), where the table keeps one.
std::optional<violation> check_flight_counters(const std::vector<flight_event>& log, std::size_t in_flight,
                                               std::optional<std::uint64_t> abandoned);

}  // namespace lockstep::scenario
