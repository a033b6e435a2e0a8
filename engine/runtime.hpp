// The runtime seam: everything engine code may use to run, wait and share.
//
// Engine components are templates over a type `R` that satisfies `Runtime`.
// Two backends provide one: `lockstep::sim::runtime` (one OS thread, a virtual
// clock, seeded fibers) and the real pinned-thread backend. Engine code never
// touches raw OS threads, locks, atomics, clocks or C randomness directly;
// that rule is what makes the same code simulable (held by
// tools/check_determinism_rules.sh).
//
// The runtime is passed explicitly (`R& rt`), never found through a global, so
// two simulations can live in one process.
//
// Vocabulary used below:
//   suspends     — may park the calling fiber; other fibers run meanwhile.
//   await point  — a suspension that a cancelled fiber leaves by throwing
//                  `fiber_cancelled` (like a Rust future dropped where it
//                  stands). A catch-all in engine code rethrows it (and
//                  run_aborted) before containing anything else. Mutex::lock suspends but is NOT an await point:
//                  it mirrors a std::sync::Mutex and may be taken in
//                  destructors.
//   scheduling point — the simulator may switch to a fiber on another core
//                  here; every primitive operation is one.
//
// Operations, by type (T is the value type; all times are integer ns):
//
//   rt.now() -> std::int64_t              /// current time; never suspends
//   rt.spawn(name, fn) -> R::task         /// run fn on a new fiber on the caller's core
//   rt.spawn_on(core, name, fn) -> task   /// ... on a given core (0 ≤ core < rt.cores())
//   rt.cores() -> std::uint32_t           /// how many cores fibers may be spread over
//   rt.current_core() -> std::uint32_t    /// the core the calling fiber runs on
//   rt.sleep_until(t)                     /// await point until now() >= t
//   rt.sleep_for(d)                       /// await point for d ns (deadline_after(now(), d))
//   rt.yield_now()                        /// await point: let other ready fibers run first
//   rt.random() -> std::uint64_t          /// seeded (sim) or real randomness
//   rt.abort(why)                         /// [[noreturn]] end the whole run/process now
//                                         /// (the sim throws run_aborted: never contain it)
//   rt.probe(i)                           /// coverage probe i of engine/probes.hpp was reached
//                                         /// (use LOCKSTEP_PROBE); never suspends, never a
//                                         /// scheduling point; the sim traces it, threads
//                                         /// compiles it out (LOCKSTEP_PROBES_ON_THREADS)
//   R::probes_enabled, R::single_threaded /// constexpr bools: whether probe() records
//                                         /// anything; whether one OS thread runs every fiber
//
//   R::task            join() (await point until the fiber ends), cancel()
//                      (its next await point throws fiber_cancelled),
//                      finished(). Destroying a task handle detaches it.
//   R::mutex           lock() (suspends, not an await point), unlock(),
//                      try_lock(): usable with std::lock_guard/unique_lock.
//                      Hold it for short critical sections only: the real
//                      backend may block an OS thread on it.
//   R::atomic<T>       load, store, exchange, compare_exchange, fetch_add,
//                      fetch_sub, each with an optional std::memory_order
//                      (seq_cst by default): the threads backend runs with it,
//                      the simulator models it (sim/memory_model.hpp), so an
//                      order too weak is found in simulation.
//   R::channel<T>      factory: bounded(rt, cap) / unbounded(rt) return
//                      {sender, receiver}. MPSC; sender is copyable, the
//                      receiver move-only.
//     sender.send(v)       await point while full; send_status::closed (v
//                          handed back) once the receiver is gone or closed.
//     sender.try_send(v)   never suspends; full or closed hand v back.
//     receiver.recv()      await point; nullopt once every sender is gone (or
//                          the receiver closed) and the queue is drained.
//     receiver.try_recv(), receiver.recv_until(deadline) -> recv_outcome.
//     receiver.recv_for(ttl) -> recv_outcome: recv_until(deadline_after(now(),
//                          ttl)), except that the real backend reads the clock
//                          only if it has to wait (the ttl then runs from there).
//     receiver.close()     refuse further sends; queued items still drain.
//     receiver.attach(n)   signal notify n on every arrival and when the
//                          channel ends, so one fiber can wait on several
//                          sources (a select): try_recv each, then n.notified().
//   R::watch<T>        latest value with a version: send_replace(v) always
//                      stores; subscribe() gives a receiver that reads the
//                      current value even if it subscribes late;
//                      receiver.changed() is an await point that returns
//                      false once the watch (the sender) is destroyed.
//   R::oneshot<T>      factory: make(rt) -> {sender, receiver}; receiver.recv()
//                      is an await point; nullopt if the sender is destroyed.
//   R::notify          notify_one() (stores one permit if nobody waits),
//                      notify_waiters() (wakes the current waiters only),
//                      notified() await point, notified_until(t) -> bool.
//   R::cancellation_token  copies share one flag: cancel(), is_cancelled(),
//                      cancelled() await point until cancelled.
#pragma once

#include <atomic>  // determinism-rules: allow (std::memory_order, which R::atomic<T> takes)
#include <concepts>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace lockstep {

/// Thrown at an await point of a fiber whose cancellation was requested. Let
/// it propagate: the fiber's entry catches it, after every destructor ran.
struct fiber_cancelled {};

/// An exception that, escaping a fiber, ends only that fiber — as a panic
/// ends only its own task under tokio — instead of failing the run (the
/// simulator, which writes a "task_panic" trace line) or being rethrown from
/// run() (the threads backend). Both count it (contained_task_panics()).
/// Throw a type derived from it only where the code under test has tokio's
/// contract: the lane router relies on it (a lane whose consumer panics ends,
/// its exit guard takes it out of the map, and the key is served again).
/// Any other exception that escapes a fiber is still a failure.
struct task_panic : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Thrown by rt.abort() where the backend unwinds instead of ending the
/// process (the simulator: it fails the run and tears every fiber down).
/// Like fiber_cancelled, engine code must let it through every catch-all:
///   catch (const fiber_cancelled&) { throw; } catch (const run_aborted&) { throw; }
struct run_aborted {
  std::string why;
};

/// What a send did with its value.
enum class send_status : std::uint8_t { sent, full, closed };

/// A send's outcome; `returned` holds the value whenever it was not sent.
template <class T>
struct send_outcome {
  send_status status;
  std::optional<T> returned;
  [[nodiscard]] bool ok() const { return status == send_status::sent; }
};

/// `now + d` clamped to the int64 range, so that a deadline a huge ttl away
/// stays in the future instead of wrapping into the past.
constexpr std::int64_t deadline_after(std::int64_t now, std::int64_t d) noexcept {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(now, d, &sum)) return sum;
  return d > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

/// What a non-blocking or deadline receive found.
enum class recv_status : std::uint8_t { item, empty, closed, timed_out };

template <class T>
struct recv_outcome {
  recv_status status;
  std::optional<T> item;  // set exactly when status == item
};

// clang-format off
template <class R>
concept Runtime = requires(R& rt, const R& crt, std::int64_t t, std::uint32_t core) {
  { crt.now() } -> std::same_as<std::int64_t>;
  { rt.spawn(std::string{}, [] {}) } -> std::same_as<typename R::task>;
  { rt.spawn_on(core, std::string{}, [] {}) } -> std::same_as<typename R::task>;
  { crt.cores() } -> std::same_as<std::uint32_t>;
  { crt.current_core() } -> std::same_as<std::uint32_t>;
  { rt.sleep_until(t) } -> std::same_as<void>;
  { rt.sleep_for(t) } -> std::same_as<void>;
  { rt.yield_now() } -> std::same_as<void>;
  { rt.random() } -> std::same_as<std::uint64_t>;
  { rt.abort(std::string_view{}) };
  { rt.probe(std::uint16_t{0}) } -> std::same_as<void>;
  { std::bool_constant<R::probes_enabled>{} };
  { std::bool_constant<R::single_threaded>{} };
  typename R::task;
  typename R::mutex;
  typename R::notify;
  typename R::cancellation_token;
  typename R::template atomic<int>;
  typename R::template channel<int>;
  typename R::template watch<int>;
  typename R::template oneshot<int>;
  requires std::constructible_from<typename R::mutex, R&>;
  requires std::constructible_from<typename R::notify, R&>;
  requires std::constructible_from<typename R::cancellation_token, R&>;
  requires std::constructible_from<typename R::template atomic<int>, R&, int>;
  requires requires(typename R::template atomic<int>& a, int v) {
    { a.load(std::memory_order_acquire) } -> std::same_as<int>;
    a.store(v, std::memory_order_release);
    { a.fetch_add(v, std::memory_order_relaxed) } -> std::same_as<int>;
    { a.compare_exchange(v, v, std::memory_order_acq_rel) } -> std::same_as<bool>;
  };
  requires std::constructible_from<typename R::template watch<int>, R&, int>;
  { R::template channel<int>::bounded(rt, std::size_t{1}) };
  { R::template channel<int>::unbounded(rt) };
  { R::template oneshot<int>::make(rt) };
};
// clang-format on

}  // namespace lockstep
