// engine/shard_stats.hpp — a shard's counters and gauges, as it publishes them.
//
// The reactor keeps its counters in a plain shard_counters that only it
// touches (the seed's ShardHot), and copies them, with the scheduler's gauges,
// into shard_stats on every tick, before an abort, and when it exits. Readers
// (tests after the run, a monitoring fiber during it, on any core) take a
// consistent copy with read(). The copy is guarded by an R::mutex held for the
// copy only, so it is sound on the threads backend as well; in the sim each
// publish/read is one scheduling point.
//
// Counter identities once a shard has exited (see test_shard_races.cpp):
//   started   == completed + expired          (every admitted item ends once)
//   delivered == started + coalesced          (every item taken from the mailbox)
//   completed counts failed ones; failed >= in_doubt; in_doubt >= panicked.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "runtime.hpp"
#include "scheduler.hpp"

namespace lockstep {

/// Monotonic counters, owned by the reactor.
struct shard_counters {
    std::uint64_t started = 0;       ///< items admitted into the scheduler
    std::uint64_t completed = 0;     ///< dispatched items whose outcome was harvested
    std::uint64_t failed = 0;        ///< completed with an error or a panic
    std::uint64_t in_doubt = 0;      ///< failed with fallout::in_doubt (panics included)
    std::uint64_t panicked = 0;      ///< process() threw
    std::uint64_t coalesced = 0;     ///< suppressed as a retry of an outstanding request id
    std::uint64_t expired = 0;       ///< shed at dispatch, past their deadline
    std::uint64_t evicted = 0;       ///< states handed to on_evict (idle sweep and shutdown)
    std::int64_t queue_wait_ns = 0;  ///< sum over dispatches of (dispatch - enqueue)
    std::int64_t busy_ns = 0;        ///< time the reactor spent admitting and harvesting

    bool operator==(const shard_counters&) const = default;
};

/// One publication: counters plus the scheduler's gauges at that moment.
struct shard_stats_snapshot {
    shard_counters counters;
    /// pending, inflight per class, resident, flushing.
    scheduler_snapshot gauges;
    /// How many times the shard has published (0: never yet).
    std::uint64_t publications = 0;
};

template <Runtime R>
class shard_stats {
public:
    explicit shard_stats(R& rt) : mutex_(rt) {}
    shard_stats(const shard_stats&) = delete;
    shard_stats& operator=(const shard_stats&) = delete;

    /// Replaces the published copy; takes the mutex briefly (never an await point).
    void publish(const shard_counters& counters, const scheduler_snapshot& gauges) {
        std::lock_guard<typename R::mutex> hold(mutex_);
        published_.counters = counters;
        published_.gauges = gauges;
        ++published_.publications;
    }

    /// A consistent copy of the last publication.
    shard_stats_snapshot read() {
        std::lock_guard<typename R::mutex> hold(mutex_);
        return published_;
    }

private:
    typename R::mutex mutex_;
    shard_stats_snapshot published_;
};

}  // namespace lockstep
