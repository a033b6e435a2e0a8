// lockstep::threads::runtime: the real backend of the seam (engine/runtime.hpp).
//
// One OS thread per core, each pinned to one CPU with pthread_setaffinity_np
// (core i to the i-th CPU the process may use, wrapping around when there are
// more cores than CPUs) and each running its own fiber scheduler
// (scheduler.hpp). If the kernel refuses to pin, one line says so on stderr
// and the threads run unpinned. A fiber never leaves the core it was spawned
// on.
//
//   threads::runtime rt(2);          // 0 cores: std::thread::hardware_concurrency()
//   rt.run([&] { ... });             // main, as a fiber on core 0
//
// run() starts the threads, runs `main` on core 0 and waits for it to return.
// Fibers still alive then are cancelled, all at once: each throws
// fiber_cancelled from its next (or current) await point and unwinds,
// running every destructor (which may block: a destructor's waits do not
// throw again). A fiber spawned after that is born cancelled, its body
// dropped unrun. run() returns once every fiber has ended, then stops the
// threads. So a fiber that never reaches an await point again (a busy loop)
// or swallows fiber_cancelled keeps run() from returning; and, as in the
// simulator, a fiber must not borrow from main's frame past main's return.
//
// An exception other than fiber_cancelled that escapes a fiber ends that
// fiber only; run() rethrows the first one after the teardown — except a
// lockstep::task_panic, which is only counted (contained_task_panics()), as
// a panic ends only its own task under tokio. rt.abort(why)
// prints why on stderr and calls std::abort() (the seed's PanicPolicy::Abort).
//
// now() is steady_clock in ns; random() a per-thread xoshiro256** seeded
// from std::random_device. Waits must be called on the runtime's fibers;
// off them they throw std::logic_error (mutex::lock spins instead).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../probes.hpp"
#include "../runtime.hpp"
#include "atomic.hpp"
#include "cancellation_token.hpp"
#include "channel.hpp"
#include "fiber.hpp"
#include "mutex.hpp"
#include "notify.hpp"
#include "oneshot.hpp"
#include "scheduler.hpp"
#include "task.hpp"
#include "unique_function.hpp"
#include "watch.hpp"

namespace lockstep::threads {

namespace detail {
#ifdef LOCKSTEP_PROBES_ON_THREADS
/// Hits of each probe on the calling OS thread (LOCKSTEP_PROBES_ON_THREADS only).
inline thread_local std::uint64_t probe_hits_this_thread[probes::count] = {};
#endif
}  // namespace detail

struct runtime_config {
  std::uint32_t cores = 0;  ///< 0: std::thread::hardware_concurrency()
  bool pin = true;          ///< pin core i's thread to one CPU
  /// The CPUs to pin to (core i on cpus[i % size]); empty: those the process may use.
  std::vector<int> cpus;
  std::size_t stack_bytes = 256 * 1024;
  /// The most fiber stacks one core maps (0: as many as the kernel gives).
  /// Stacks are reused, so this caps how many of a core's fibers may have
  /// started and not ended. A fiber that gets no stack, at this limit or when
  /// the kernel refuses one, is dropped unrun (its captures destroyed on a
  /// spare stack, so they may still block) and run() throws, naming it, once
  /// main and the teardown are done: the run fails, the process does not.
  std::size_t max_stacks_per_core = 0;
  /// How long a core that has run out of fibers waits before it takes wakes
  /// that a thread outside the runtime pushed onto it (0: it does not wait).
  /// A producer thread outside the runtime (the lane router's, an I/O
  /// thread) then hands over a batch per wake instead of an item: its wakes
  /// find the fiber already woken, and the fiber drains what piled up. While
  /// such wakes are pending, a core takes its inbox once a round (when it has
  /// run every runnable fiber, or after 64 of them) and then waits this long,
  /// so they may wait that much more, and wakes from other cores that share
  /// the inbox with them too. A core whose wakes all come from other cores
  /// of the runtime takes them at once (scheduler.cpp, gather()).
  /// At most a second; more is refused (std::invalid_argument), as a
  /// negative value is.
  std::int64_t foreign_wake_gather_ns = 30'000;
  /// Timers fire on ticks this far apart (0: each at its own deadline). A
  /// wait with a deadline ends at the first tick at or after it, so up to a
  /// tick late, never early; waits due within one tick still end in deadline
  /// order. 1 ms, as tokio's timer wheel: a timeout or idle ttl means what it
  /// means there, and the timers of a tick fire together. Set 0 where a
  /// wait's length in microseconds matters (lockstep run --backend threads
  /// does: scenario durations are scaled to tens of microseconds). At most a
  /// second; more is refused, as a negative value is.
  std::int64_t timer_resolution_ns = 1'000'000;
  /// The stall watchdog, off at 0. While run() waits (for main, then for the
  /// teardown), a run in which no fiber is resumed on any core for this
  /// long, with no timed wait pending, has stalled: a lost wake-up, a
  /// deadlock, or a fiber that runs without reaching an await point. A core
  /// that runs one fiber for this long without switching out has stalled
  /// too, whatever the other cores do (a busy loop beside a periodic
  /// timer). Each core then lists its live fibers and what each waits in (a
  /// core that does not answer within a second is running such a fiber,
  /// named by its id), and on_stall gets that report. A run that only waits
  /// for a timer, or whose fibers keep yielding, has not stalled. When this is 0 the environment's LOCKSTEP_STALL_LIMIT_S (seconds,
  /// a decimal number above 0) sets it: a test binary is watched without a
  /// change to its code. Negative, or past an hour, is refused.
  std::int64_t stall_limit_ns = 0;
  /// Gets the stall report. Empty: print it on stderr and end the process
  /// with lockstep's liveness exit code, 3 (tools/exit_codes.hpp), so a test
  /// binary never hangs. Called on run()'s thread; when it returns the
  /// watchdog goes on watching (a handler may end the stall, e.g. by
  /// delivering the wake that was lost), and reports again after another limit.
  std::function<void(const std::string& report)> on_stall;
};

class runtime {
 public:
  using task = threads::task;
  using mutex = threads::mutex;
  using notify = threads::notify;
  using cancellation_token = threads::cancellation_token;
  template <class T>
  using atomic = threads::atomic<T>;
  template <class T>
  using channel = threads::channel<T>;
  template <class T>
  using watch = threads::watch<T>;
  template <class T>
  using oneshot = threads::oneshot<T>;

  explicit runtime(std::uint32_t cores = 0) : runtime(with_cores(cores)) {}
  explicit runtime(const runtime_config& config);
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Runs `main` on core 0 (see the header comment for what happens after).
  template <class F>
  void run(F&& main) {
    run_main(detail::unique_function(std::forward<F>(main)));
  }

  [[nodiscard]] std::int64_t now() const { return detail::steady_now(); }
  [[nodiscard]] std::uint32_t cores() const { return static_cast<std::uint32_t>(schedulers_.size()); }
  /// True once the kernel refused to pin a thread (it then ran unpinned).
  [[nodiscard]] bool pinning_refused() const { return pin_warned_.load(); }
  /// How often the cores' idle spins and gather windows have yielded their
  /// CPUs, all told. They yield only while a thread that may share their CPU
  /// (one outside the runtime, or a sibling when not every core has a CPU of
  /// its own) may be the one that brings their work (scheduler.cpp); for tests.
  [[nodiscard]] std::uint64_t idle_yields() const;
  /// How often the cores have waited out a gather window before taking wakes
  /// from outside the runtime (runtime_config::foreign_wake_gather_ns), all
  /// told; for tests.
  [[nodiscard]] std::uint64_t foreign_gathers() const;
  /// The core of the calling fiber; 0 off this runtime's threads.
  [[nodiscard]] std::uint32_t current_core() const;
  /// The calling fiber's id (from 1, in spawn order, never reused within a
  /// run; not a pointer, so it can name a fiber in output); 0 off a fiber.
  [[nodiscard]] std::uint64_t current_fiber_id() const;

  template <class F>
  task spawn(std::string name, F&& body) {
    return spawn_on(current_core(), std::move(name), std::forward<F>(body));
  }
  /// Throws std::out_of_range for a core >= cores(), std::logic_error outside run().
  template <class F>
  task spawn_on(std::uint32_t core, std::string name, F&& body) {
    return task(start(core, std::move(name), detail::unique_function(std::forward<F>(body)), false));
  }

  void sleep_until(std::int64_t t);
  void sleep_for(std::int64_t d) { sleep_until(deadline_after(now(), d)); }
  void yield_now();
  std::uint64_t random();
  [[noreturn]] void abort(std::string_view why);
  /// Fibers ended by a lockstep::task_panic so far (engine/runtime.hpp).
  [[nodiscard]] std::uint64_t contained_task_panics() const { return task_panics_.load(); }
  /// A coverage probe (engine/probes.hpp). Compiled out unless
  /// LOCKSTEP_PROBES_ON_THREADS is defined: then it counts hits per thread
  /// (no shared cache line), only so the cost of a live probe can be measured.
#ifdef LOCKSTEP_PROBES_ON_THREADS
  static constexpr bool probes_enabled = true;
  static void probe(std::uint16_t index) noexcept { ++detail::probe_hits_this_thread[index]; }
#else
  static constexpr bool probes_enabled = false;
  static void probe(std::uint16_t /*index*/) noexcept {}
#endif
  static constexpr bool single_threaded = false;

  // --- for the schedulers -----------------------------------------------------
  void fiber_ended(detail::fiber& f);
  /// True from the moment run() starts cancelling what main left behind.
  [[nodiscard]] bool tearing_down() const { return tearing_down_.load(); }
  void record_escape(const std::string& fiber_name, std::exception_ptr e);
  void record_task_panic() { task_panics_.fetch_add(1); }
  /// A fiber got no stack and is dropped unrun: run() will throw this.
  void record_start_failure(const std::string& fiber_name, const char* why);
  void pinning_refused(std::uint32_t core, int cpu, int error);

 private:
  static runtime_config with_cores(std::uint32_t cores) {
    runtime_config c;
    c.cores = cores;
    return c;
  }
  std::shared_ptr<detail::fiber> start(std::uint32_t core, std::string name, detail::unique_function body,
                                       bool is_main);
  void run_main(detail::unique_function main);
  /// run()'s waits: for `done` (under mu_), watched for stalls when the
  /// watchdog is on (runtime_config::stall_limit_ns).
  void wait_watched(std::unique_lock<std::mutex>& hold, const std::function<bool()>& done);
  /// Collects every core's live fibers under `head`, then on_stall (or stderr and exit 3).
  void report_stall(const char* head);

  runtime_config config_;
  std::vector<std::unique_ptr<detail::scheduler>> schedulers_;
  std::vector<int> cpus_;  // the CPUs this process may run on, in order

  // Fibers spawned and not yet ended. Each scheduler lists its own fibers
  // (scheduler::adopt), touched by its thread only, so a spawn and an end
  // share no lock: one list here, under mu_, had the two cores queue on that
  // lock (a futex sleep and wake) with 64,000 single-flight waiters spawned
  // from one core and ending on both. The count has a line of its own: both
  // cores write it at every spawn and end, and the flags below, read as
  // often, would otherwise miss with it.
  alignas(64) std::atomic<std::size_t> live_count_{0};
  alignas(64) std::atomic<bool> running_{false};
  std::atomic<bool> tearing_down_{false};
  // Main's record: set before main is enqueued; atomic, as a thread outside
  // the runtime may spawn a fiber that ends before main is set.
  std::atomic<detail::fiber*> main_{nullptr};

  // Off the flags' line (they are read at every spawn, start and end).
  alignas(64) std::mutex mu_;  // guards what is below; run() waits on changed_ for main's end and the last fiber's
  std::condition_variable changed_;
  bool main_done_ = false;
  std::exception_ptr escaped_;
  std::atomic<bool> pin_warned_{false};
  std::atomic<std::uint64_t> last_fiber_id_{0};
  std::atomic<std::uint64_t> task_panics_{0};
};

static_assert(lockstep::Runtime<runtime>);

}  // namespace lockstep::threads
