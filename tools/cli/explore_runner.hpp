// tools/cli/explore_runner.hpp — runs one shard's seeds on N OS threads, each
// with its own executor (and its own stack pool: stack_pool::shared is per
// thread), and hands the outcomes to the calling thread in seed order, so
// everything printed or written is the same whatever N.
//
// Seeds go out in chunks; a stop (a failure budget, --time, a signal) lets
// each worker finish the run it is in and no more. The caller then sees the
// longest prefix of the slice whose every run finished: a stopped explore
// reports exactly what `--seeds FIRST..LAST_DONE` would.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/cli/options.hpp"
#include "tools/cli/prepared.hpp"

namespace lockstep::cli {

/// The seeds s in [first, last] with (s - first) mod count == index.
struct seed_slice {
  std::uint64_t first = 1;
  std::uint64_t last = 1;
  std::uint64_t index = 0;
  std::uint64_t count = 1;

  [[nodiscard]] bool empty() const { return last - first < index; }
  /// The slice's last position (positions 0..last_position()); only when !empty().
  [[nodiscard]] std::uint64_t last_position() const { return (last - first - index) / count; }
  [[nodiscard]] std::uint64_t seed_at(std::uint64_t position) const { return first + index + position * count; }
};

/// A failing run, with the configuration it ran under (PCT's k filled in).
struct failed_run {
  sim::run_config config;
  sim::run_result result;
};

struct seed_outcome {
  std::uint64_t seed = 0;
  std::uint64_t trace_hash = 0;
  std::uint64_t schedule_hash = 0;  ///< schedule_hash_of (prepared.hpp)
  bool probed = false;  ///< PCT's k was measured by a random run of this seed first
  std::uint64_t probe_hits = 0;    ///< sim::run_result::probe_hits: the coverage probes it reached
  std::uint32_t probe_orders = 0;  ///< sim::run_result::probe_orders: race-pair orders it saw
  std::unique_ptr<failed_run> failure;
};

class explore_runner {
 public:
  /// Starts `jobs` workers at once; `p` and `o` must outlive the runner.
  explore_runner(const prepared& p, const run_options& o, seed_slice slice, unsigned jobs);
  /// Stops and joins: runs in flight finish, their outcomes are dropped.
  ~explore_runner();
  explore_runner(const explore_runner&) = delete;
  /// The worker threads running (fewer than asked where the system refused more).
  [[nodiscard]] unsigned jobs_started() const { return static_cast<unsigned>(workers_.size()); }
  /// Why the system refused the first thread it did not start ("": none refused).
  [[nodiscard]] const std::string& refused() const { return refused_; }
  explore_runner& operator=(const explore_runner&) = delete;

  enum class poll { outcome, timeout, end };
  /// The next outcome in seed order, waiting at most `wait`; `end` when the
  /// slice is done or, after stop(), the finished prefix is. Rethrows a
  /// worker's exception (not a run's failure: those are outcomes).
  poll next(seed_outcome& out, std::chrono::milliseconds wait);
  /// No further runs start; safe to call more than once.
  void stop();
  /// Whether every seed of the slice was handed out by next().
  [[nodiscard]] bool exhausted() const { return exhausted_; }

 private:
  struct chunk {
    std::vector<seed_outcome> outcomes;
    bool partial = false;  ///< a stop came before its last seed
  };
  void work();
  seed_outcome run_seed(std::uint64_t seed) const;

  const prepared& p_;
  const run_options& o_;
  seed_slice slice_;
  std::uint64_t last_chunk_ = 0;
  bool empty_ = false;
  std::uint64_t window_ = 0;  // chunks that may be done ahead of the consumer (bounds memory)

  std::mutex m_;
  std::condition_variable produced_;
  std::condition_variable consumed_;
  std::uint64_t next_chunk_ = 0;  // the next chunk a worker takes
  std::uint64_t consume_chunk_ = 0;
  std::size_t consume_pos_ = 0;
  std::map<std::uint64_t, chunk> done_;
  unsigned live_ = 0;
  std::uint64_t chunk_seeds_ = 16;  // seeds per chunk: fewer for a range too small to give every job 16
  std::string refused_;
  std::atomic<bool> stopping_{false};  // set under m_ (for the waits), read without it between runs
  bool exhausted_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> workers_;
};

}  // namespace lockstep::cli
