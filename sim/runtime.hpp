// The simulator as a lockstep::Runtime: the facade engine code is written
// against (see engine/runtime.hpp for the contract), over one executor.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "../engine/runtime.hpp"
#include "atomic.hpp"
#include "cancellation_token.hpp"
#include "channel.hpp"
#include "executor.hpp"
#include "mutex.hpp"
#include "notify.hpp"
#include "oneshot.hpp"
#include "task.hpp"
#include "watch.hpp"

namespace lockstep::sim {

class runtime {
 public:
  using task = sim::task;
  using mutex = sim::mutex;
  using notify = sim::notify;
  using cancellation_token = sim::cancellation_token;
  template <class T>
  using atomic = sim::atomic<T>;
  template <class T>
  using channel = sim::channel<T>;
  template <class T>
  using watch = sim::watch<T>;
  template <class T>
  using oneshot = sim::oneshot<T>;

  explicit runtime(executor& ex) : ex_(ex) {}
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  [[nodiscard]] std::int64_t now() const { return ex_.now(); }
  [[nodiscard]] std::uint32_t cores() const { return ex_.cores(); }
  [[nodiscard]] std::uint32_t current_core() const {
    return ex_.in_fiber() ? ex_.current().core : 0;
  }

  template <class F>
  task spawn(std::string name, F&& body) {
    return spawn_on(current_core(), std::move(name), std::forward<F>(body));
  }
  template <class F>
  task spawn_on(std::uint32_t core, std::string name, F&& body) {
    if (ex_.in_fiber()) ex_.schedule_point();
    return task(&ex_, ex_.spawn(core, std::move(name), unique_function(std::forward<F>(body))));
  }

  void sleep_until(std::int64_t t) {
    ex_.schedule_point();
    while (ex_.now() < t) ex_.block("sleep", 0, nullptr, t, true);
  }
  void sleep_for(std::int64_t d) { sleep_until(deadline_after(ex_.now(), d)); }
  // Through the thread's running executor, which in a fiber is ex_ (see
  // executor::yield_running). Like every await point, only on a fiber of a run.
  LOCKSTEP_ALWAYS_INLINE void yield_now() { executor::yield_running(); }
  std::uint64_t random() { return ex_.random(); }
  /// Requests cancellation of fiber `id` (a no-op once it has ended), as
  /// task::cancel() does for a fiber whose handle the caller does not hold —
  /// tokio's JoinHandle::abort on a task spawned inside a component.
  void cancel_fiber(std::uint64_t id) { ex_.cancel(static_cast<fiber_id>(id)); }
  /// Fibers ended by a lockstep::task_panic so far (engine/runtime.hpp).
  [[nodiscard]] std::uint64_t contained_task_panics() const { return ex_.contained_task_panics(); }
  [[noreturn]] void abort(std::string_view why) { throw run_aborted{std::string(why)}; }
  /// A coverage probe (engine/probes.hpp): traced and recorded for the run.
  void probe(std::uint16_t index) { ex_.probe(index); }
  /// Probes are recorded here, and one thread runs every fiber: engine code
  /// may read its own plain state to refine a probe (see single_flight::join).
  static constexpr bool probes_enabled = true;
  static constexpr bool single_threaded = true;

  /// A labelled event in the trace (caller adds fields, then end()); only
  /// when tracing is on.
  [[nodiscard]] bool tracing() const { return ex_.tracer().on(); }
  trace& note(std::string_view event) { return ex_.note(event); }

  [[nodiscard]] executor& exec() { return ex_; }
  [[nodiscard]] const executor& exec() const { return ex_; }

 private:
  executor& ex_;
};

static_assert(lockstep::Runtime<runtime>);

/// An oracle inside a simulated program: when `holds` is false the run fails
/// with failure_kind::oracle, naming the oracle and saying what went wrong.
/// The message is a view, so a check that holds builds no string (one of
/// more than 15 characters was an allocation on every run).
inline void check(bool holds, std::string_view oracle, std::string_view message) {
  if (!holds) throw oracle_failed{std::string(oracle), std::string(message)};
}

/// A liveness oracle: when `holds` is false the run fails with
/// failure_kind::liveness (the system did not settle within its budget).
inline void check_liveness(bool holds, std::string_view oracle, std::string_view message) {
  if (!holds) throw liveness_failed{std::string(oracle), std::string(message)};
}

/// Runs `program(rt)` as the main fiber of an executor in its initial state
/// (this thread's, reset: see executor_lease).
template <class Program>
run_result run(const run_config& config, Program&& program) {
  executor_lease ex(config);
  runtime rt(*ex);
  return ex->run([&rt, &program] { program(rt); });
}

}  // namespace lockstep::sim
