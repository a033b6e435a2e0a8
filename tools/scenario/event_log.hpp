// tools/scenario/event_log.hpp — what the scenario drivers need from a
// backend beyond the engine's Runtime seam: an event log the oracles read,
// a lock and counters for the drivers' own bookkeeping, a fiber's identity,
// and the way a violated oracle ends the run. One driver source serves both
// backends through these.
//
//   sim::runtime      every event is one trace line as it happens (so it is
//                     part of the trace hash), kept in order in one vector;
//                     the lock is a no-op and the counters plain integers
//                     (every fiber runs on one OS thread, and a real lock or
//                     atomic would change nothing but the cost); a violation
//                     throws sim::oracle_failed / sim::liveness_failed and
//                     the run fails as a simulated run does.
//   threads::runtime  each core's thread appends to its own buffer (its lock
//                     is contended only when the log is read), every event
//                     stamped from one atomic sequence; reading the log
//                     merges the buffers by that sequence, so the oracles
//                     read one log in the order the events were stamped. A
//                     violation prints the verdict and ends the process with
//                     its exit code (see threads_verdict below).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/threads/runtime.hpp"
#include "sim/runtime.hpp"

namespace lockstep::scenario {

template <class Rt>
inline constexpr bool is_sim = std::is_same_v<Rt, sim::runtime>;

/// The sim's lock: no fiber can run between two statements without an await.
struct no_lock {
  void lock() {}
  void unlock() {}
};

/// Guards the drivers' shared bookkeeping; never held across an await point.
template <class Rt>
using state_lock = std::conditional_t<is_sim<Rt>, no_lock, std::mutex>;

/// A count read by the main fiber while other threads change it.
template <class Rt, class T = std::uint64_t>
using counter = std::conditional_t<is_sim<Rt>, T, std::atomic<T>>;

/// The calling fiber's identity, as the event logs name lanes.
inline std::uint64_t current_fiber(sim::runtime& rt) { return rt.exec().current().id; }
inline std::uint64_t current_fiber(threads::runtime& rt) { return rt.current_fiber_id(); }

/// A violated oracle on the threads backend: prints the verdict (the oracle's
/// name and message, and that a threads run has no record to replay) and
/// ends the process with exit 1 (3 for liveness). The process ends from the
/// fiber that found the violation rather than unwinding: the scenario's
/// other fibers are running on other threads against objects on that
/// fiber's frame, and a stuck fiber (what a liveness failure reports) would
/// keep the runtime's teardown from finishing.
[[noreturn]] void threads_verdict(std::string_view oracle, const std::string& message, bool liveness);

inline void check(sim::runtime&, bool holds, std::string_view oracle, const std::string& message) {
  sim::check(holds, oracle, message);
}
inline void check_liveness(sim::runtime&, bool holds, std::string_view oracle, const std::string& message) {
  sim::check_liveness(holds, oracle, message);
}
inline void check(threads::runtime&, bool holds, std::string_view oracle, const std::string& message) {
  if (!holds) threads_verdict(oracle, message, false);
}
inline void check_liveness(threads::runtime&, bool holds, std::string_view oracle, const std::string& message) {
  if (!holds) threads_verdict(oracle, message, true);
}

/// What the liveness phase's wait (settle) sleeps on: the counts it watches
/// call changed() after each change, so the wait ends as soon as its
/// condition holds instead of at the next poll. A notify keeps one permit, so
/// a change made between settle's check and its wait is not lost. changed()
/// is signal(), never a scheduling point: the simulator's schedules stay
/// those of the components, and observers may call it under their locks.
template <class Rt>
class progress {
 public:
  explicit progress(Rt& rt) : n_(rt) {}
  void changed() { n_.signal(); }
  /// Await point until changed() (true) or `deadline` (false).
  bool wait_until(std::int64_t deadline) { return n_.notified_until(deadline); }

 private:
  typename Rt::notify n_;
};

/// The liveness phase's wait: until done() or the budget is spent, woken by
/// `p` whenever something done() reads may have changed; returns done().
template <class Rt, class Done>
bool settle(Rt& rt, progress<Rt>& p, std::int64_t budget_ns, Done&& done) {
  const std::int64_t deadline = deadline_after(rt.now(), budget_ns);
  while (!done() && rt.now() < deadline) p.wait_until(deadline);
  return done();
}

/// A wait_until step's wait: reads read() every poll_ns until it returns
/// `want` or `budget_ns` has passed, as the seeds' wait_for polls; returns
/// the last value read.
template <class Rt, class Read>
std::uint64_t poll_until(Rt& rt, std::int64_t budget_ns, std::uint64_t poll_ns, std::uint64_t want, Read&& read) {
  const std::int64_t deadline = deadline_after(rt.now(), budget_ns);
  std::uint64_t got = read();
  while (got != want && rt.now() < deadline) {
    rt.sleep_for(static_cast<std::int64_t>(poll_ns));
    got = read();
  }
  return got;
}

template <class Rt, class Event>
class event_log;

/// The simulator's log: each event a trace line ("n" is its index), in order.
/// Event provides `kind`, `t`, name_of(kind) and write_fields(trace&, event).
/// The log is one object to partial-order reduction (dfs --dpor): every
/// record is executor::harness_access(), so two steps that log are not
/// reordered as if they commuted (the oracles read the log in order).
template <class Event>
class event_log<sim::runtime, Event> {
 public:
  explicit event_log(sim::runtime& rt) : rt_(rt) {}

  /// The clock events are stamped with.
  [[nodiscard]] std::int64_t now() const { return rt_.now(); }

  void record(Event e) {
    if (!open_) return;
    rt_.exec().harness_access();
    e.t = rt_.now();
    auto& line = rt_.note(name_of(e.kind)).field_u("n", events_.size());
    write_fields(line, e);
    line.end();
    events_.push_back(e);
  }

  /// After this, nothing is recorded: the run's main fiber has ended and what
  /// the executor's teardown does to leftover fibers is not the scenario's.
  void close() { open_ = false; }
  [[nodiscard]] bool is_open() const { return open_; }
  [[nodiscard]] std::uint64_t size() const { return events_.size(); }
  [[nodiscard]] const std::vector<Event>& events() const { return events_; }

 private:
  sim::runtime& rt_;
  std::vector<Event> events_;
  bool open_ = true;
};

/// The threads backend's log: per-core buffers, one global sequence.
template <class Event>
class event_log<threads::runtime, Event> {
 public:
  explicit event_log(threads::runtime& rt) : rt_(rt), start_(rt.now()), buffers_(rt.cores()) {}

  /// The clock events are stamped with: ns since the log began.
  [[nodiscard]] std::int64_t now() const { return rt_.now() - start_; }

  /// Never suspends: observers call it under the components' locks.
  void record(Event e) {
    if (!open_.load(std::memory_order_acquire)) return;
    buffer& b = buffers_[rt_.current_core()];
    const std::lock_guard<std::mutex> hold(b.mu);
    // Stamped under the buffer's lock, so a reader holding every lock sees
    // each sequence number taken so far: the merged log has no gaps.
    e.t = now();  // ns since the log began: the steady clock's epoch means nothing
    b.events.emplace_back(next_.fetch_add(1, std::memory_order_acq_rel), e);
  }

  void close() { open_.store(false, std::memory_order_release); }
  [[nodiscard]] bool is_open() const { return open_.load(std::memory_order_acquire); }
  /// Events stamped so far: the index the next one will have in the merged log.
  [[nodiscard]] std::uint64_t size() const { return next_.load(std::memory_order_acquire); }

  /// Every event recorded so far, merged by sequence (the main fiber only).
  [[nodiscard]] const std::vector<Event>& events() {
    std::vector<std::pair<std::uint64_t, Event>> all;
    {
      std::vector<std::unique_lock<std::mutex>> held;
      for (buffer& b : buffers_) held.emplace_back(b.mu);  // always in core order
      for (const buffer& b : buffers_) all.insert(all.end(), b.events.begin(), b.events.end());
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    merged_.clear();
    for (auto& [n, e] : all) merged_.push_back(e);
    return merged_;
  }

 private:
  struct buffer {
    std::mutex mu;
    std::vector<std::pair<std::uint64_t, Event>> events;
  };
  threads::runtime& rt_;
  std::int64_t start_;
  std::vector<buffer> buffers_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<bool> open_{true};
  std::vector<Event> merged_;
};

}  // namespace lockstep::scenario
