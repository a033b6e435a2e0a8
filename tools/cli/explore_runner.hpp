// tools/cli/explore_runner.hpp — runs the seeds of one or more targets (a
// scenario file's slice of seeds each) on one pool of N OS threads, each with
// its own executor (and its own stack pool: stack_pool::shared is per
// thread), and hands the outcomes to the calling thread target by target, in
// seed order, so everything printed or written is the same whatever N.
//
// The targets' seeds form one sequence of chunks: a worker takes the next
// chunk whatever target it belongs to, so a file's last chunks run beside the
// next file's first ones and no worker waits for a file to end. Workers run
// at most a window of chunks ahead of the caller, which bounds memory.
//
// A stop (--time, a signal: stop()) lets each worker finish the run it is in
// and no more; a target's own stop (--stop-after: drop_target()) ends only
// that target. The caller then sees, for each target, the longest prefix of
// its slice whose every run finished: a stopped explore reports exactly what
// `--seeds FIRST..LAST_DONE` would.
#pragma once

#include <atomic>
#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

/// What one target runs: a prepared scenario under options, over a slice.
/// `p` and `o` must outlive the runner.
struct explore_target {
  const prepared* p = nullptr;
  const run_options* o = nullptr;
  seed_slice slice;
};

class explore_runner {
 public:
  /// Polled by the workers between runs (and by the caller): the reason to
  /// stop everything ("time", "SIGINT", ...), or "" to go on.
  using stop_check = std::function<std::string()>;

  /// Starts `jobs` workers at once.
  explore_runner(std::vector<explore_target> targets, unsigned jobs, stop_check should_stop = {});
  /// One target: `p` and `o` must outlive the runner.
  explore_runner(const prepared& p, const run_options& o, seed_slice slice, unsigned jobs)
      : explore_runner({explore_target{&p, &o, slice}}, jobs) {}
  /// Stops and joins: runs in flight finish, their outcomes are dropped.
  ~explore_runner();
  explore_runner(const explore_runner&) = delete;
  explore_runner& operator=(const explore_runner&) = delete;
  /// The worker threads started (fewer than asked where the system refused more).
  [[nodiscard]] unsigned jobs_started() const { return refused_.empty() ? jobs_running() : started_; }
  /// Those that go on running: after a refusal, three in four of those
  /// started, and at most one per hardware thread.
  [[nodiscard]] unsigned jobs_running() const { return static_cast<unsigned>(workers_.size()); }
  /// Why the system refused the first thread it did not start ("": none refused).
  [[nodiscard]] const std::string& refused() const { return refused_; }

  /// Counting permits; a release wakes one waiter. (std::counting_semaphore,
  /// taken per run, made an explore at --jobs 1024 1.65x as slow as no permits.)
  class run_permits {
   public:
    explicit run_permits(unsigned count) : free_(static_cast<long>(count)) {}
    void acquire();
    void release();
    /// From now on acquire() returns at once (a stop: the waiters must end).
    void open_all();

   private:
    std::mutex m_;
    std::condition_variable freed_;
    long free_;
    bool open_all_ = false;
  };

  enum class poll { outcome, timeout, end };
  /// The current target's next outcome in seed order, waiting at most
  /// `wait`; `end` when its slice is done or, after a stop, its finished
  /// prefix is. Rethrows a worker's exception (not a run's failure: those
  /// are outcomes).
  poll next(seed_outcome& out, std::chrono::milliseconds wait);
  /// No further runs of the current target start (--stop-after); the others go on.
  void drop_target();
  /// Moves the caller to the next target, dropping what is left of the
  /// current one; false when there is none.
  bool next_target();
  /// No further runs of any target start; the first reason given is kept.
  void stop(const std::string& reason);
  /// Evaluates the stop check here (the caller's turn); true once stopped.
  bool poll_stop();
  /// Why everything stopped ("": it did not).
  [[nodiscard]] std::string stop_reason() const;
  /// Whether every seed of the current target was handed out by next().
  [[nodiscard]] bool exhausted() const;

 private:
  struct chunk {
    std::vector<seed_outcome> outcomes;
    bool partial = false;  ///< a stop came before its last seed
  };
  struct target_state {
    explore_target t;
    std::uint64_t base = 0;         // its first chunk in the one sequence
    std::uint64_t chunks = 0;       // how many (0: an empty slice)
    std::uint64_t chunk_seeds = 1;  // seeds per chunk: fewer for a range too small to give every job a full chunk
    std::atomic<bool> dropped{false};  // the caller left it or asked for no more of it
    bool exhausted = false;            // every seed handed out (the caller's)
    bool ended = false;                // next() said end (the caller's)
  };
  void work(unsigned index);
  /// Moves the workers' position past targets with nothing left to take (under m_).
  void skip_finished_targets();
  void request_stop(const std::string& reason);
  [[nodiscard]] std::size_t target_of(std::uint64_t chunk_index) const;
  seed_outcome run_seed(const explore_target& t, std::uint64_t seed) const;

  std::vector<std::unique_ptr<target_state>> targets_;
  std::uint64_t window_ = 0;  // chunks taken and not yet consumed, at most (bounds memory)
  stop_check should_stop_;

  mutable std::mutex m_;
  std::condition_variable produced_;
  std::condition_variable consumed_;
  std::size_t take_target_ = 0;  // the next chunk a worker takes: its target,
  std::uint64_t take_chunk_ = 0;  // and its index there
  std::uint64_t outstanding_ = 0;  // chunks taken and not yet consumed or dropped
  std::size_t current_ = 0;        // the target the caller is on
  std::uint64_t consume_chunk_ = 0;
  std::size_t consume_pos_ = 0;
  std::map<std::pair<std::size_t, std::uint64_t>, chunk> done_;  // (target, chunk) -> outcomes
  unsigned live_ = 0;
  bool gate_open_ = false;  // every worker started: runs may begin
  std::string refused_;
  unsigned started_ = 0;  // threads started before the refusal
  // The first stop's reason, set before stopping_ under a lock of its own: a
  // worker that sees the flag and ends its chunk short may hand that chunk to
  // the caller, who then asks the reason; it must be there already (it was
  // set after the flag, under m_, and a caller could read it empty: a SIGINT
  // once summarised as no stop at all).
  mutable std::mutex reason_m_;
  std::string stop_reason_;
  std::atomic<bool> stopping_{false};  // read without a lock between runs
  std::atomic<unsigned> allowed_{UINT_MAX};  // workers with a smaller index go on (after a refused thread)
  std::exception_ptr error_;
  std::unique_ptr<run_permits> run_permits_;  // more jobs than hardware threads: one run per hardware thread at a time
  std::vector<std::thread> workers_;
};

}  // namespace lockstep::cli
