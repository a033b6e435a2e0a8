// The deterministic fiber executor: one OS thread, a virtual clock, seeded
// scheduling. Every interleaving it produces is a pure function of (program,
// seed, strategy, cores).
//
// Model. Fibers belong to simulated cores. A core runs one fiber at a time;
// that fiber keeps the core until it blocks, yields or ends (cooperative, like
// one pinned thread). At every scheduling point (each primitive operation) the
// executor may switch to a fiber of *another* core, which models true
// parallelism between cores. Time advances only when nothing can run: the
// clock jumps to the earliest timer (tokio's paused time does the same).
//
// Teardown. However a run stops (main returned, an oracle, an exception, an
// abort, a budget, a deadlock, a divergence, a resource limit), every fiber
// still alive is ended by unwinding before run() returns, under these rules:
//  * every live fiber is cancelled; blocked ones wake and throw
//    fiber_cancelled from their await point, running every destructor;
//  * the youngest fiber that can make progress goes first: when the youngest
//    live fiber can run, it runs; when it waits on a timer, the clock jumps;
//    only when it waits on another fiber (a mutex, a channel it drains in a
//    destructor) does the youngest fiber that can run go instead. Children
//    are younger than their parent and may borrow from its frame, so a frame
//    is never left while a fiber that may point into it still runs. Cores
//    are ignored here: a fiber stopped at a scheduling point does not keep
//    its core from younger fibers;
//  * every scheduling point returns to the teardown loop, so an older fiber
//    that wakes a younger one (an unlock, a send) yields to it at once;
//  * a fiber that never started, or is spawned during teardown, is born
//    cancelled: its body never runs, and its captured objects are destroyed
//    on its own stack (destructors may block there);
//  * a fiber stopped at a scheduling point (not an await point) cannot be
//    unwound where it stands (it may be inside a destructor, where a throw
//    terminates the process): it runs on to its next await point and unwinds
//    there. An await point never throws while an exception is already in
//    flight in that fiber;
//  * the run reports its first failure; a failure during teardown is
//    reported only when the run had none;
//  * a fiber that still cannot finish (a destructor waiting forever) is left
//    to the teardown step budget and then to Boost's forced unwind, youngest
//    first: the last resort.
//
// Invariants (check_invariants): a fiber is in exactly one of the states
// below; a core's `active` fiber is `running` or `preempted` and no other
// fiber of that core is; ready fibers sit in their core's ready list and
// nowhere else; a blocked fiber is in at most one wait queue; `busy_cores`
// counts the cores with an active fiber or a non-empty ready list.
#pragma once

#include <array>
#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <iosfwd>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "../engine/probes.hpp"
#include "../engine/runtime.hpp"
#include "code_site.hpp"
#include "happens_before.hpp"
#include "memory_model.hpp"
#include "prng.hpp"
#include "sanitizer.hpp"
#include "stack_pool.hpp"
#include "strategy.hpp"
#include "trace.hpp"
#include "unique_function.hpp"

namespace lockstep::sim {

using fiber_id = std::uint32_t;
inline constexpr fiber_id no_fiber = 0xffffffffu;

enum class fiber_state : std::uint8_t {
  ready,      ///< runnable, waiting for its core
  running,    ///< executing now (at most one fiber in the whole executor)
  preempted,  ///< stopped at a scheduling point; still holds its core
  blocked,    ///< waiting on a queue and/or a timer
  finished,
};

enum class wake_reason : std::uint8_t { none, notified, timed_out, cancelled };

class executor;
struct fiber;

/// An intrusive FIFO of blocked fibers. A fiber is in at most one; waking a
/// fiber (by notify, timer or cancellation) unlinks it.
class wait_queue {
 public:
  wait_queue() = default;
  wait_queue(const wait_queue&) = delete;
  wait_queue& operator=(const wait_queue&) = delete;
  ~wait_queue() {
    if (head_ != nullptr) [[unlikely]] detach_all();  // inline: most primitives die with no waiter
  }
  [[nodiscard]] bool empty() const { return head_ == nullptr; }
  [[nodiscard]] fiber* front() const { return head_; }
  [[nodiscard]] std::size_t size() const;

 private:
  friend class executor;
  void push_back(fiber& f);
  void unlink(fiber& f);
  [[gnu::noinline]] void detach_all();
  fiber* head_ = nullptr;
  fiber* tail_ = nullptr;
};

/// Why a run stopped early. Each kind is reported with the seed.
enum class failure_kind : std::uint8_t {
  deadlock,            ///< fibers blocked, nothing runnable, no timer pending
  step_budget,         ///< more steps than allowed: a livelock, or a budget too small
  time_budget,         ///< virtual time passed its budget: a hang in time
  uncaught_exception,  ///< an exception escaped a fiber's body (a lockstep::task_panic ends only its fiber)
  abort,               ///< the program called rt.abort(), or an assertion failed
  replay_divergence,   ///< the replayed decision list no longer fits the run
  oracle,              ///< a property the program checks (an oracle) did not hold
  resource_exhausted,  ///< spawn could not get a stack or memory: a limit, named in the message
  liveness,            ///< the program's liveness oracle: no quiescence within its budget
  data_race,           ///< two accesses to a lockstep::var, one a write, that nothing orders
};
/// How many kinds there are (for code that lists them all); keep it the last one + 1.
inline constexpr int failure_kind_count = static_cast<int>(failure_kind::data_race) + 1;

std::string_view to_string(failure_kind kind);
std::ostream& operator<<(std::ostream& os, failure_kind kind);

struct failure {
  failure_kind kind;
  std::string message;
  std::uint64_t step = 0;  ///< the step it happened at (teardown steps come after it)
  /// The program's line that failed, when an oracle said (LOCKSTEP_ASSERT
  /// does): test frameworks report the failure there. Not recorded in files.
  code_site site{nullptr, 0};
};

struct run_config {
  std::uint64_t seed = 0;
  std::string strategy = "random";
  strategy_options options;
  std::uint32_t cores = 1;
  std::uint64_t max_steps = 50'000'000;
  std::int64_t max_time_ns = 24LL * 3600 * 1'000'000'000;  // a virtual day
  trace_mode trace = trace_mode::full;
  /// Record the decision list (needed for replay; off only to measure its cost).
  bool record_decisions = true;
  std::size_t stack_bytes = 256 * 1024;
  /// Fibers alive at once. A run that needs more fails as resource_exhausted,
  /// the same way on every machine (the kernel's own limits are not).
  std::size_t max_live_fibers = 1'000'000;
  /// Atomics (sim_std's and the seam's sim::atomic) as sequentially
  /// consistent: every load reads the newest store, whatever its
  /// memory_order says (what lockstep did before it modelled C++'s memory
  /// model, and cheaper). Off: memory_model.hpp.
  bool seq_cst_only = false;
  /// Timer ties as decisions: when two or more timers are due at one virtual
  /// instant, the strategy chooses whether they all fire together (their
  /// fibers then interleave as the strategy picks) or one of them fires
  /// alone first, the rest staying due until nothing can run (as if it were
  /// an instant earlier). Recorded like any choice; off: they fire together.
  bool timer_ties = false;
  /// Bounded jitter on virtual delays: a timed wait whose deadline is still
  /// ahead ends up to this many ns later, by a recorded choice of one of 17
  /// evenly spaced lateness values from 0 (at most timer_jitter_ns + 1
  /// values), so a strategy can move a timer across a neighbour's deadline.
  /// Never earlier: a sleep still sleeps at least its duration. 0: off.
  std::int64_t timer_jitter_ns = 0;
};

struct run_result {
  std::uint64_t seed = 0;
  std::string strategy;
  std::uint32_t cores = 1;
  std::vector<std::uint32_t> decisions;
  std::uint64_t trace_hash = trace::empty_hash;
  std::uint64_t steps = 0;
  std::int64_t end_time_ns = 0;
  std::optional<failure> failed;
  std::string trace_text;  ///< the JSON Lines, when the trace mode was full
  std::uint64_t probe_hits = 0;    ///< bit i: probe i (engine/probes.hpp) fired at least once
  std::uint32_t probe_orders = 0;  ///< probes::order_ab(p) / order_ba(p): pair p's orders seen
  [[nodiscard]] bool ok() const { return !failed.has_value(); }
};

/// Thrown by rt.abort(): unwinds the calling fiber and fails the run.
using lockstep::run_aborted;

/// Thrown by a program's oracle (see sim::check): unwinds the fiber and fails
/// the run with failure_kind::oracle, naming the oracle. A run_aborted, so
/// engine code that contains panics lets it through.
struct oracle_failed : run_aborted {
  oracle_failed(std::string name, std::string what, code_site at = code_site{nullptr, 0})
      : run_aborted{name + ": " + what}, oracle(std::move(name)), message(std::move(what)), where(at) {}
  std::string oracle;
  std::string message;
  code_site where;  ///< the program's line, when known
};

/// An oracle that is a liveness property (the system did not settle within
/// its budget): fails the run with failure_kind::liveness, which the CLI
/// reports with the liveness exit code, like a deadlock.
struct liveness_failed : oracle_failed {
  using oracle_failed::oracle_failed;
};

// Aligned so that the hot fields below share one cache line: malloc's 16-byte
// alignment split them over two lines in three records out of four.
struct alignas(64) fiber {
  // Hot: touched on every step this fiber takes, so kept within one cache
  // line (at 1,024 fibers a step's cost is mostly cache misses).
  fiber_id id = no_fiber;
  std::uint32_t core = 0;
  fiber_state state = fiber_state::ready;
  bool cancel_requested = false;  ///< see engine/runtime.hpp: only await points throw
  bool unwinding = false;
  bool done = false;
  std::uint32_t cancel_shield = 0;
  std::uint64_t ready_seq = 0;
  boost::context::fiber cont;  ///< resumes this fiber (held while it is suspended)
  // Per-fiber C++ exception-handling globals (caught stack, uncaught count):
  // the ABI keeps them per thread, so they are swapped on every switch.
  void* eh_caught = nullptr;
  unsigned int eh_uncaught = 0;
  // The body, run in place (fiber_main): the next line after the hot one,
  // fetched beside it on every switch to this fiber (transfer), because a
  // body that loops on a scheduling point reads its captures there again
  // after every switch. On the fiber's stack they were one more cache miss
  // in a row per step once many fibers no longer fit in L1.
  alignas(64) unique_function body;
  // Cold.
  bool started = false;  ///< its entry has run (ASan bookkeeping for a forced destroy)
  wake_reason reason = wake_reason::none;
  bool cancellable_wait = false;
  bool timed = false;  ///< its current wait has a deadline (teardown lets the clock move it)
  void* wait_record = nullptr;  ///< a primitive's record of the current wait (notify's waiter)
  /// While preempted: the object its next operation touches (schedule_point's
  /// `next`; 0 when not said). Meaningless in any other state.
  std::uint64_t pending = 0;
  std::string name;                 ///< its name, unless fixed_name is set
  const char* fixed_name = nullptr;  ///< a literal given at spawn, not copied (see name_text)
  /// The name reports and traces show.
  [[nodiscard]] const char* name_text() const { return fixed_name != nullptr ? fixed_name : name.c_str(); }
  // Where the program's own code stands, for reports only (never traced: an
  // edit that moves a line must not change a trace). Set by sim_std.
  /// Its last sim_std operations, for race and deadlock reports (Relacy's
  /// history): a ring, op_count of them made so far.
  /// Trivial, so a recycled record does not clear its ring (only the first
  /// op_count entries are ever read).
  struct operation {
    const char* name;  ///< "mutex.lock"
    const char* file;
    std::uint32_t line;
    [[nodiscard]] code_site where() const { return code_site{file, line}; }
  };
  static constexpr std::uint32_t history_length = 8;
  std::array<operation, history_length> history;
  std::uint32_t op_count = 0;
  /// Its last sim_std operation; null before its first.
  [[nodiscard]] const operation* last_operation() const {
    return op_count == 0 ? nullptr : &history[(op_count - 1) % history_length];
  }
  void record_operation(const char* op, code_site where) {
    history[op_count % history_length] = operation{op, where.file, where.line};
    ++op_count;
  }
  boost::context::stack_context stack{};
  // Waiting.
  wait_queue* queue = nullptr;
  fiber* q_prev = nullptr;
  fiber* q_next = nullptr;
  const char* waiting_on = "";
  std::uint64_t waiting_object = 0;
  std::uint64_t wait_generation = 0;  ///< bumps on every wake: stale timers are ignored
  wait_queue joiners;
  // Sanitizer state.
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
  // The executor running it: read by its context on every (re)start, as a
  // parked context (below) may next run for another executor of the thread.
  executor* owner = nullptr;
  // The pool `stack` came from. After its body ends a fiber may park: its
  // context stays alive in `cont`, on its stack, and the next spawn that takes
  // this record runs its body there (executor::spawn), with no new context,
  // no stack allocation and no exit path.
  stack_pool* pool = nullptr;

  /// Makes a finished fiber's record what a new one is, keeping a parked
  /// context with its stack and pool (see executor::retire) and its name's
  /// storage: cheaper than destroying and building the record again (about
  /// 2% of a small run's instructions). Sets every member above that has
  /// state: a member added there is added here.
  void recycle() noexcept {
    id = no_fiber;
    core = 0;
    state = fiber_state::ready;
    cancel_requested = false;
    unwinding = false;
    done = false;
    cancel_shield = 0;
    ready_seq = 0;
    eh_caught = nullptr;
    eh_uncaught = 0;
    body.reset();  // its captures die now, as they did with the record
    started = false;
    reason = wake_reason::none;
    cancellable_wait = false;
    timed = false;
    wait_record = nullptr;
    pending = 0;
    name.clear();
    fixed_name = nullptr;
    op_count = 0;  // the ring past it is never read
    if (!cont) {
      stack = {};
      pool = nullptr;
    }
    queue = nullptr;
    q_prev = nullptr;
    q_next = nullptr;
    waiting_on = "";
    waiting_object = 0;
    wait_generation = 0;
    // joiners: empty, as finish() woke them all
    asan_fake = nullptr;
    tsan_fiber = nullptr;
    owner = nullptr;
  }
};

class executor {
 public:
  explicit executor(const run_config& config);
  ~executor();
  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  /// Runs `main` on core 0 until it returns, then cancels every fiber still
  /// alive (as a dropped runtime would) and returns the result.
  run_result run(unique_function main);

  /// After a run() that returned: makes this executor what
  /// executor(config) would build, keeping its containers' storage and, when
  /// it can restart in place, its strategy object (see executor_lease).
  void reset(const run_config& config);
  /// run() returned normally since construction or the last reset.
  [[nodiscard]] bool reusable() const { return reusable_; }

  // --- used by the runtime facade and the primitives -----------------------
  [[nodiscard]] std::int64_t now() const { return now_; }
  [[nodiscard]] std::uint32_t cores() const { return ncores_; }
  [[nodiscard]] fiber& current() { return *current_; }
  [[nodiscard]] bool in_fiber() const { return current_ != nullptr; }
  /// The run has stopped and its fibers are being unwound.
  [[nodiscard]] bool tearing_down() const { return tearing_down_; }
  [[nodiscard]] trace& tracer() { return trace_; }
  [[nodiscard]] std::uint64_t steps() const { return step_; }
  [[nodiscard]] const run_config& config() const { return config_; }
  /// Fibers ended by a lockstep::task_panic so far (each ended only itself).
  [[nodiscard]] std::uint64_t contained_task_panics() const { return contained_task_panics_; }

  fiber_id spawn(std::uint32_t core, std::string name, unique_function body) {
    return spawn_fiber(core, nullptr, &name, std::move(body));
  }
  /// spawn() with a name that outlives the run (a string literal): kept as
  /// the pointer, not copied, so a spawn builds no string.
  fiber_id spawn(std::uint32_t core, const char* literal_name, unique_function body) {
    return spawn_fiber(core, literal_name, nullptr, std::move(body));
  }
  /// A point where a fiber of another core may run first. Never throws.
  /// `next`: the object the operation after this point touches (the key its
  /// access() will report), kept for strategies that order by it (pos); 0
  /// when not said.
  void schedule_point(std::uint64_t next = 0);
  /// Gives up the core; other ready fibers (of any core) may run first.
  void yield_now();
  /// The lowest core other than 0 on which no live fiber was spawned, added
  /// when there is none: a fiber spawned there is preempted at every
  /// scheduling point, like a thread (sim_std::thread). The cores added are
  /// the run's own: results and traces keep the configured count, and a
  /// replay adds the same ones at the same steps.
  std::uint32_t free_core() {
    // A core with no live resident has no active or ready fiber either:
    // fibers never leave the core they were spawned on.
    for (std::uint32_t i = 1; i < ncores_; ++i) {
      if (residents_[i] == 0) return i;
    }
    // Past ncores_ every core is idle (no fiber, no resident): an earlier
    // run's, taken into use, or a new one.
    if (ncores_ < cores_.size()) [[likely]] return ncores_++;
    return add_core();
  }
  /// A program that broke a rule of the primitives it uses (unlocked a mutex
  /// it does not own, destroyed a locked one, joined a thread twice): the run
  /// fails (kind abort, message "misuse: ..."), and the calling fiber stops
  /// here, at a scheduling point, so the rest of the run is teardown. Never
  /// throws: destructors call it.
  void misuse(std::string message);
  /// Fails the run with `kind` and stops the calling fiber here, as misuse
  /// does (a data race). Never throws.
  void fail_here(failure_kind kind, std::string message);
  /// A fiber's last operations, oldest first, one per line ("\n    mutex.lock
  /// at queue.hpp:31"), for reports: a live fiber's, or one that ended while
  /// the race detector was on (which keeps them); empty when unknown.
  [[nodiscard]] std::string history_of(fiber_id id) const;
  /// "#3 'worker'", for a live fiber or one the race detector saw end.
  [[nodiscard]] std::string label_of(fiber_id id) const;
  /// A choice that is not which fiber runs (a spurious wake-up, a weak
  /// compare-exchange failing): index in [0, count) drawn by the strategy and
  /// recorded in the decision list like a fiber's, so replay follows it.
  /// 0 (the ordinary outcome) outside a fiber, in teardown, and under a
  /// strategy that does not explore choices (dfs with partial-order reduction).
  std::size_t choose(std::size_t count, const char* what);
  /// "#3 'worker'": the running fiber, for messages ("the scheduler" outside one).
  [[nodiscard]] std::string current_label() const;
  /// The executor whose run is under way on this thread (null when none):
  /// sim_std's primitives find their simulation through it.
  [[nodiscard]] static executor* running() { return running_; }
  /// yield_now() of the executor whose run is under way on this thread (the
  /// innermost, when a run is nested in a fiber of another), reached through
  /// a thread-local rather than through a pointer the calling fiber holds.
  /// After a switch, a fiber's own pointers come back only with its saved
  /// registers and stack lines, which at a thousand fibers are cache misses;
  /// the thread-local is always at hand, so the next decision need not wait
  /// for them (a 1,024-fiber step, bench_sim_step: see docs/performance.md).
  static void yield_running();
  /// Parks the current fiber until woken (by notify, the deadline, or — for a
  /// cancellable wait — cancellation, which throws fiber_cancelled here, or
  /// with `cancel_throws` false returns wake_reason::cancelled for the caller
  /// to handle: a primitive whose wait sits in destructors, sim_std's mutexes).
  wake_reason block(const char* what, std::uint64_t object, wait_queue* queue,
                    std::optional<std::int64_t> deadline, bool cancellable, bool cancel_throws = true);
  /// Throws fiber_cancelled if the current fiber should leave at an await point.
  void check_cancel();
  /// `orders`: the woken fiber goes on after everything the waker did, for
  /// the race detector (the runtime API's primitives, whose wake-ups are
  /// their synchronisation); sim_std's say exactly what orders what instead.
  void wake(fiber& f, wake_reason reason, bool orders = true);
  /// Wakes the first fiber of `q`, if any; true when one was woken.
  bool wake_one(wait_queue& q, bool orders = true);
  /// wake_all's loop, for a queue with a waiter.
  void wake_each(wait_queue& q, bool orders);
  /// Wakes one fiber of `q` that the strategy chooses (choose(size, what)),
  /// not necessarily the first: for primitives whose standard leaves open
  /// which waiter a notify unblocks. True when one was woken.
  bool wake_chosen(wait_queue& q, const char* what, bool orders = true);
  void wake_all(wait_queue& q, bool orders = true) {
    if (!q.empty()) wake_each(q, orders);  // inline: most stores and ends wake nobody
  }
  /// Requests cancellation of `id` (no-op if it has finished).
  void cancel(fiber_id id);
  [[nodiscard]] bool finished(fiber_id id) const;
  [[nodiscard]] fiber* find(fiber_id id) const;
  /// Await point until fiber `id` has finished.
  void join(fiber_id id);
  /// Deterministic identity for a primitive, for traces and reports.
  std::uint64_t next_object_id() { return ++objects_; }
  /// What reports call object `id` (a sim_std primitive): its type, the
  /// program's name for it (may be null; copied) and the line that created it, so a
  /// deadlock names "mutex 'accounts' created at bank.cpp:12", not a number.
  void label_object(std::uint64_t id, const char* type, const char* name, code_site created);
  /// "mutex 'accounts' created at bank.cpp:12"; empty for an unlabelled object.
  [[nodiscard]] std::string object_label(std::uint64_t id) const;
  /// An atomic's identity: its own sequence, so adding one to atomics left the
  /// other primitives' numbers (and every trace that names them) as they were.
  std::uint64_t next_atomic_key() { return atomic_key_bit | ++atomics_; }
  /// The running fiber's step touches `key` (an object id, an atomic key,
  /// fiber_key(id) or clock_key): reported to a strategy that wants_accesses().
  /// For the race detector it is also an acquire and a release on `key`
  /// (the runtime API's primitives do not say which they are): see touch().
  void access(std::uint64_t key) {
    if (access_sink_ != nullptr) [[unlikely]] report_access(key);
    if (clocks_ != nullptr) [[unlikely]] order_access(key);
  }
  /// The running step reads or changes state of the harness that runs the
  /// program, which no lockstep object shows (a scenario's event log, which
  /// the oracles read in order): reported as harness_key, to a strategy that
  /// wants_harness_accesses() only (dfs's partial-order reduction, which
  /// must not reorder two such steps as if they commuted). Nothing else sees
  /// it: the sampling strategies' runs stay as they were.
  void harness_access() {
    if (harness_sink_ != nullptr) [[unlikely]] harness_sink_->on_access(harness_key);
  }
  /// access() for a primitive that tells the race detector itself what
  /// orders what (sim_std's, through clocks()).
  void touch(std::uint64_t key) {
    if (access_sink_ != nullptr) [[unlikely]] report_access(key);
  }
  /// The race detector's clocks; null until a program checks plain memory
  /// (start_race_detection), and then for the rest of the run.
  [[nodiscard]] happens_before* clocks() { return clocks_; }
  happens_before& start_race_detection();
  /// The C++ memory model for atomics (memory_model.hpp): null
  /// until the run's first atomic operation or fence weaker than seq_cst
  /// (start_memory_model), and always under run_config::seq_cst_only.
  [[nodiscard]] memory_model* memory() { return memory_; }
  /// memory(), started now (with the race detector's clocks, which it reads)
  /// unless the run is seq_cst_only.
  memory_model* start_memory_model() {
    if (memory_ != nullptr || config_.seq_cst_only) return memory_;
    return start_memory_model_now();
  }
  static constexpr std::uint64_t fiber_key(fiber_id id) { return fiber_key_bit | id; }
  static constexpr std::uint64_t fiber_key_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t atomic_key_bit = std::uint64_t{1} << 62;
  static constexpr std::uint64_t clock_key = std::uint64_t{1} << 61;
  static constexpr std::uint64_t random_key = std::uint64_t{1} << 60;
  /// Not an object: the running step made fiber `id` runnable (spawned or
  /// woke it), so that fiber's next step happens after this one.
  static constexpr std::uint64_t enable_key(fiber_id id) { return enable_key_bit | id; }
  static constexpr std::uint64_t enable_key_bit = std::uint64_t{1} << 59;
  /// harness_access()'s object: the harness's own shared state, as one.
  static constexpr std::uint64_t harness_key = std::uint64_t{1} << 58;
  /// The program's seeded randomness (independent of the strategy's draws).
  std::uint64_t random() {
    // Seeded on first use: most runs never draw, and seeding costs about as
    // much as a small run's scheduling steps.
    if (!values_seeded_) [[unlikely]] {
      values_ = prng(config_.seed ^ 0x6c6f636b73746570ULL);  // "lockstep": a stream apart from the strategy's
      values_seeded_ = true;
    }
    access(random_key);  // the draws' order is shared state
    return values_.next();
  }
  /// A labelled event in the trace, from the program or an oracle.
  trace& note(std::string_view event);
  /// A coverage probe fired (engine/probes.hpp): a `probe` trace line, and
  /// the run's hit mask and first/last sequence for race pairs. Never
  /// suspends, never allocates.
  void probe(std::uint16_t index);

  /// Throws std::logic_error naming the first broken invariant.
  void check_invariants() const;

 private:
  friend class executor_lease;
  // A core's ready fibers: a vector's storage with the count beside it (a
  // vector's size() is two loads, a subtraction and a shift).
  class ready_list {
   public:
    [[nodiscard]] std::size_t size() const { return n_; }
    [[nodiscard]] bool empty() const { return n_ == 0; }
    void clear() { n_ = 0; }
    void push_back(fiber* f) {
      if (n_ < slots_.size()) [[likely]] {
        slots_[n_] = f;
      } else {
        grow(f);
      }
      ++n_;
    }
    void pop_back() { --n_; }
    [[nodiscard]] fiber* back() const { return slots_[n_ - 1]; }
    fiber*& operator[](std::size_t i) { return slots_[i]; }
    fiber* operator[](std::size_t i) const { return slots_[i]; }
    [[nodiscard]] fiber* const* begin() const { return slots_.data(); }
    [[nodiscard]] fiber* const* end() const { return slots_.data() + n_; }

   private:
    [[gnu::noinline]] void grow(fiber* f) { slots_.push_back(f); }
    std::vector<fiber*> slots_;  // [0, n_) in use; the rest, storage kept
    std::uint32_t n_ = 0;
  };
  struct core_slot {
    fiber* active = nullptr;  // running or preempted
    // Its candidates when the scheduler picks: 1 with an active fiber (then
    // preempted), else its ready ones. Kept at every change of the two
    // (check_invariants checks it), so the pick's walk reads one word a core.
    std::uint32_t candidates = 0;
    ready_list ready;  // unordered: fifo reads ready_seq, so swap-remove is fine
  };
  struct timer {
    std::int64_t deadline;
    std::uint64_t seq;
    fiber_id id;
    std::uint64_t generation;
    bool operator>(const timer& o) const {
      return deadline != o.deadline ? deadline > o.deadline : seq > o.seq;
    }
  };

  // What one run leaves to the next on the same thread: fiber records and
  // the containers' capacity (executor.cpp). A small run (a few fibers, a
  // dozen steps) used to spend a third of its instructions in malloc/free.
  struct run_spares;
  static run_spares& spares();
  void retire(fiber& f);
  static void drop_parked(fiber& f);
  void drop_all_parked();
  bool may_park();

  // The Itanium C++ ABI's per-thread exception globals (__cxa_get_globals),
  // swapped on every switch: fibers share the thread.
  struct eh_globals {
    void* caught;
    unsigned int uncaught;
  };
  static const void* stack_bottom(const fiber& f) { return static_cast<const char*>(f.stack.sp) - f.stack.size; }

  [[gnu::noinline]] void trace_step(const fiber& chosen, std::size_t count);
  [[gnu::noinline]] void trace_block(const fiber& f, const char* what, std::uint64_t object);
  [[gnu::noinline]] void trace_wake(const fiber& f, wake_reason reason);

  void loop();
  fiber* pick();
  [[gnu::noinline]] void step_budget_exhausted();
  [[gnu::noinline]] bool pick_by_strategy(std::size_t count, std::size_t& index);
  void list_candidates();
  /// uniform_->below(count), of the value drawn a decision ago.
  std::size_t draw_below(std::size_t count) {
    const std::uint64_t x = ahead_;
    ahead_ = uniform_->next();
    return static_cast<std::size_t>(prng::reduce(x, count));
  }
  void prefetch_next_pick(std::size_t count);
  fiber* take(std::size_t index, std::size_t count);
  /// take() without its trace line.
  fiber* take_candidate(std::size_t index);
  /// choose_next() in general; choose_next itself only draws and takes when
  /// the strategy is plain uniform, nothing is listed or traced, and no limit
  /// or watched step is near: a path with no call, so no register saved.
  [[gnu::noinline]] fiber* choose_next_any();
  /// The run's configured cores in use, every core kept from earlier runs idle.
  void use_cores(std::uint32_t configured);
  /// free_core() when every core in use has a resident and none is idle.
  [[gnu::noinline]] std::uint32_t add_core();
  void set_quiet_until();
  void resume(fiber& f);
  [[gnu::noinline]] fiber* choose_next();
  void switch_away(fiber& f);
  void transfer(fiber& f, fiber* next);
  void adopt(boost::context::fiber&& from);
  void make_ready(fiber& f);
  void release_core(fiber& f);
  void update_busy(core_slot& c, bool was_busy);
  bool advance_time();
  /// The fiber timer `t` still wakes, or null when that wait already ended (a stale timer).
  [[nodiscard]] fiber* woken_by(const timer& t) const {
    fiber* f = find(t.id);
    return f != nullptr && f->state == fiber_state::blocked && f->wait_generation == t.generation ? f : nullptr;
  }
  void fire_due_timers();
  /// How much later than `deadline` a timed wait ends under
  /// run_config::timer_jitter_ns (a choice; 0 when off or already due).
  std::int64_t jitter(std::int64_t deadline);
  std::size_t choice(std::size_t count, const char* what);
  void finish(fiber& f);
  void fail(failure_kind kind, std::string message, code_site where = code_site{nullptr, 0});
  void teardown();
  void enter_teardown();
  void teardown_loop();
  fiber* pick_for_teardown();
  void destroy_stuck_fibers();
  [[noreturn]] void out_of_resources(fiber_id id, const std::string& name, const char* why);
  /// spawn()'s work; the name is `fixed` when not null, else `*given` (moved from).
  fiber_id spawn_fiber(std::uint32_t core, const char* fixed, std::string* given, unique_function body);
  std::string describe_blocked() const;
  [[noreturn]] static void suspend_while_destroying();
  /// Sets running_ for a run (or a teardown) and puts the previous one back.
  class running_scope;
  static constinit thread_local executor* running_;
  /// yield_now() up to and including the switch (check_cancel follows it).
  void yield_switch();
  [[noreturn]] static void throw_cancelled(fiber& f);
  std::string where() const;
  static void fiber_main(executor* ex, fiber* f);

  run_config config_;
  std::unique_ptr<strategy> strategy_;
  strategy* access_sink_ = nullptr;  // strategy_ when it wants_accesses()
  strategy* harness_sink_ = nullptr;  // strategy_ when it wants_harness_accesses()
  std::uint64_t atomics_ = 0;
  void report_access(std::uint64_t key);
  void order_access(std::uint64_t key);
  happens_before* clocks_ = nullptr;  // &clock_storage_ while the run detects races
  happens_before clock_storage_;
  memory_model* start_memory_model_now();
  memory_model* memory_ = nullptr;  // &memory_storage_ once a run uses an order weaker than seq_cst
  memory_model memory_storage_{*this, clock_storage_};
  // What reports say of fibers that ended while the race detector was on
  // (a race names the earlier access's fiber, often ended by then).
  struct ended_fiber {
    std::string name;
    std::array<fiber::operation, fiber::history_length> history{};
    std::uint32_t op_count = 0;
  };
  std::vector<ended_fiber> ended_;  // by id
  struct labelled_object {
    const char* type = nullptr;
    std::string name;
    code_site created{nullptr, 0};
    std::uint64_t run = 0;  ///< labels_run_ when labelled; an older one is stale
  };
  // By object id, for reports. Kept from run to run (their names' storage):
  // only entries stamped with this run's labels_run_ count.
  std::vector<labelled_object> labels_;
  std::uint64_t labels_run_ = 1;
  prng values_{0};
  bool values_seeded_ = false;
  bool reusable_ = false;
  bool parked_ = false;  // held by a thread's idle slot (executor_lease): freed at thread exit
  trace trace_;
  stack_pool* stacks_;  // this thread's, shared with earlier and later runs
  std::vector<core_slot> cores_;
  // Live fibers spawned on each core (free_core looks for none). Beside
  // cores_, not in core_slot: 32 bytes index with a shift, 40 took one more
  // instruction on every step.
  std::vector<std::uint32_t> residents_;
  std::uint32_t ncores_ = 1;  // cores_ in use this run; the rest idle (use_cores)
  std::vector<std::unique_ptr<fiber>> fibers_;  // by id; null once finished
  std::vector<std::unique_ptr<fiber>> spare_fibers_;  // finished records, reset, for the next spawns
  std::size_t live_ = 0;
  std::size_t parked_fibers_ = 0;  // spare records whose context is parked
  // A heap whose storage can be handed to the next run (see run_spares).
  struct timer_heap : std::priority_queue<timer, std::vector<timer>, std::greater<>> {
    using priority_queue::c;
  };
  timer_heap timers_;
  prng* uniform_ = nullptr;         // the strategy's generator when it is plain uniform
  // choose_next() may draw and take on its own while step_ is below this:
  // the strategy is plain uniform, no decision is listed, nothing is traced,
  // neither the step budget nor a watched step comes next, and the run is
  // neither stopped nor tearing down (both set it to 0). 0: never.
  std::uint64_t quiet_until_ = 0;
  // Its next value, drawn one decision ahead (the decisions get the same
  // values in the same order) so that the next pick can be guessed and its
  // fiber's lines fetched a step early (prefetch_next_pick).
  std::uint64_t ahead_ = 0;
  static constexpr std::size_t prefetch_ahead_from = 16;  // candidates; fewer stay in L1 anyway
  std::uint64_t watched_step_ = UINT64_MAX;  // the next step the strategy is told about
  std::size_t candidates_total_ = 0;  // sum over cores of (active ? 1 : ready.size())
  bool stop_ = false;               // the main fiber finished or the run failed
  std::vector<candidate> candidates_;
  std::vector<timer> due_;  // fire_due_timers' live timers of one instant
  std::vector<std::uint32_t> decisions_;
  fiber* current_ = nullptr;
  std::uint32_t busy_cores_ = 0;
  std::int64_t now_ = 0;
  std::uint64_t step_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t objects_ = 0;
  std::uint64_t probe_hits_ = 0;
  std::uint32_t probe_seq_ = 0;  // probes fired so far: orders the first and last hit of each
  std::array<std::uint32_t, probes::count> probe_first_{};
  std::array<std::uint32_t, probes::count> probe_last_{};
  fiber_id main_ = no_fiber;
  std::optional<failure> failed_;
  std::uint64_t contained_task_panics_ = 0;  ///< fibers ended by a lockstep::task_panic
  bool tearing_down_ = false;
  bool destroying_ = false;
  std::size_t teardown_top_ = 0;  // one past the youngest fiber teardown may still find alive
  std::uint64_t teardown_steps_ = 0;
  static constexpr std::uint64_t teardown_step_budget = 1'000'000;  // Boost is force-unwinding a stuck fiber: nothing may suspend
  // Switches. A fiber stopped at a scheduling point picks the next fiber
  // itself and switches to it directly (see switch_away); the scheduler's
  // context, suspended in resume(), gets control back only when no fiber
  // can run, the run stops, a fiber ends, or in teardown. Whoever switches
  // names itself in switched_from_ (null: the scheduler), so that the
  // context it lands in can file the switcher's continuation (adopt).
  boost::context::fiber sched_cont_;  // resumes the scheduler (held while a fiber runs)
  fiber* switched_from_ = nullptr;
  // The scheduler's own stack and sanitizer context.
  const void* sched_bottom_ = nullptr;
  std::size_t sched_size_ = 0;
  void* sched_fake_ = nullptr;
  void* sched_tsan_ = nullptr;
  void* eh_ = nullptr;  // this thread's C++ exception globals (stable for the thread)
};

/// "file.cpp:42" of a program's line, for reports.
std::string site(const code_site& where);

/// The executor sim::run uses: this thread's idle one, reset for `config`,
/// or a new one when there is none (the first run on a thread, or a run
/// nested in another). Given back when the lease ends, if its run returned.
/// A small run (a few fibers, a dozen steps) spent a sixth of its
/// instructions constructing and destroying an executor and its strategy.
/// Under ASan every run gets a fresh executor, as it gets fresh fiber
/// records: a use of the last run's state after its end is then reported.
class executor_lease {
 public:
  explicit executor_lease(const run_config& config);
  ~executor_lease();
  executor_lease(const executor_lease&) = delete;
  executor_lease& operator=(const executor_lease&) = delete;
  executor& operator*() const { return *ex_; }
  executor* operator->() const { return ex_.get(); }

 private:
  std::unique_ptr<executor> ex_;
};

// --- the hot path, inline: a step's cost is dominated by returns that
// mispredict after each context switch, so these add no frames of their own.

// Files the continuation of the context that just switched here (the
// switcher named itself in switched_from_).
LOCKSTEP_ALWAYS_INLINE void executor::adopt(boost::context::fiber&& from) {
  (switched_from_ != nullptr ? switched_from_->cont : sched_cont_) = std::move(from);
}

// From the running fiber f to `next`, or to the scheduler when next is null.
// The switcher prepares the fiber it hands over to (current_, state, its C++
// exception globals); the scheduler does that for itself in resume().
LOCKSTEP_ALWAYS_INLINE void executor::transfer(fiber& f, fiber* next) {
  struct back_guard {  // also runs when Boost's forced unwind leaves resume()
    fiber* f;
    ~back_guard() { san::finish_switch(f->asan_fake, nullptr, nullptr); }
  } guard{&f};
  boost::context::fiber* target = &sched_cont_;
  if (next != nullptr) {
    auto* g = static_cast<eh_globals*>(eh_);
    f.eh_caught = g->caught;
    f.eh_uncaught = g->uncaught;
    g->caught = next->eh_caught;
    g->uncaught = next->eh_uncaught;
    __builtin_prefetch(&next->body);
    current_ = next;
    next->state = fiber_state::running;
    san::start_switch(&f.asan_fake, stack_bottom(*next), next->stack.size);
    san::tsan_switch(next->tsan_fiber);
    target = &next->cont;
  } else {
    san::start_switch(&f.asan_fake, sched_bottom_, sched_size_);
    san::tsan_switch(sched_tsan_);
  }
  switched_from_ = &f;
  adopt(std::move(*target).resume());
}

// The scheduler's switch to f. What comes back is whichever fiber handed
// control back to the scheduler: f, or one that f or its successors switched
// to. Inlined into loop() (and teardown's loop): every return after a context switch mispredicts
// (the return stack buffer holds the other stack's calls), so fewer frames
// between the loop and the switch make a step measurably cheaper.
LOCKSTEP_ALWAYS_INLINE void executor::resume(fiber& f) {
  current_ = &f;
  f.state = fiber_state::running;
  auto* g = static_cast<eh_globals*>(eh_);
  const eh_globals mine = *g;
  g->caught = f.eh_caught;
  g->uncaught = f.eh_uncaught;
  san::start_switch(&sched_fake_, stack_bottom(f), f.stack.size);
  san::tsan_switch(f.tsan_fiber);
  switched_from_ = nullptr;
  boost::context::fiber from = std::move(f.cont).resume();
  fiber& back = *switched_from_;
  back.cont = std::move(from);
  if (back.done) san::tsan_switch(sched_tsan_);  // a dying fiber does not switch TSan back itself
  san::finish_switch(sched_fake_, nullptr, nullptr);
  back.eh_caught = g->caught;
  back.eh_uncaught = g->uncaught;
  *g = mine;
  current_ = nullptr;
  if (back.done) finish(back);
}

// f stopped at a scheduling point, its state already set (preempted, ready
// or blocked). It makes the scheduler's next decision itself: when that is
// f again, it runs on with no switch at all; otherwise it switches straight
// to the chosen fiber, one switch where a round trip through the scheduler
// took two. The decisions, and so every trace, are the scheduler loop's.
LOCKSTEP_ALWAYS_INLINE void executor::switch_away(fiber& f) {
  if (destroying_) suspend_while_destroying();
  fiber* next = choose_next();
  if (next == &f) {
    f.state = fiber_state::running;
    return;
  }
  transfer(f, next);
}

LOCKSTEP_ALWAYS_INLINE void executor::make_ready(fiber& f) {
  f.state = fiber_state::ready;
  f.ready_seq = ++seq_;
  if (tearing_down_) [[unlikely]] return;  // teardown picks by age, not from the cores' lists
  core_slot& c = cores_[f.core];
  const bool was_busy = c.active != nullptr || !c.ready.empty();
  c.ready.push_back(&f);
  if (c.active == nullptr) {  // behind an active fiber it is not a candidate yet
    ++candidates_total_;
    ++c.candidates;
  }
  if (!was_busy) ++busy_cores_;
}

LOCKSTEP_ALWAYS_INLINE void executor::release_core(fiber& f) {
  core_slot& c = cores_[f.core];
  if (c.active != &f) return;
  c.active = nullptr;
  // The core's ready fibers become candidates again (while f ran they were
  // not: a core runs one fiber at a time).
  candidates_total_ += c.ready.size();
  c.candidates = static_cast<std::uint32_t>(c.ready.size());
  if (c.ready.empty()) --busy_cores_;
}

LOCKSTEP_ALWAYS_INLINE void executor::schedule_point(std::uint64_t next) {
  // Only a fiber of another core can be interleaved here: same-core fibers
  // switch only where they block. So with one busy core there is no choice.
  // (Teardown holds busy_cores_ at 2: every scheduling point returns to it.)
  if (busy_cores_ <= 1 || current_ == nullptr || destroying_) return;
  fiber& f = *current_;
  f.state = fiber_state::preempted;
  f.ready_seq = ++seq_;
  f.pending = next;
  ++candidates_total_;  // a preempted fiber is its core's one candidate
  switch_away(f);
}

LOCKSTEP_ALWAYS_INLINE void executor::check_cancel() {
  fiber& f = *current_;
  // Not while another exception is in flight in this fiber (a destructor
  // blocking during its unwind): a second throw would terminate. The
  // executor swaps the EH globals per fiber, so the count is this fiber's.
  if (f.cancel_requested && !f.unwinding && f.cancel_shield == 0 && std::uncaught_exceptions() == 0) {
    throw_cancelled(f);
  }
}

LOCKSTEP_ALWAYS_INLINE void executor::yield_now() {
  yield_switch();
  check_cancel();
}

LOCKSTEP_ALWAYS_INLINE void executor::yield_running() {
  running_->yield_switch();
  // The switch brought this fiber's callee-saved registers back from its
  // stack, a cold line at a thousand fibers; anything the compiler kept in
  // them (the executor, even the thread-local's offset) would hold the next
  // decision until that line arrives. Declaring them clobbered here makes it
  // read the executor from the thread-local again, with an immediate offset:
  // 1,024-fiber step ~24 -> ~16 ns (bench_sim_step). rbp is left out: it is
  // the frame pointer in -O0 and sanitizer builds, where it cannot be named.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("" ::: "rbx", "r12", "r13", "r14", "r15", "memory");
#endif
  running_->check_cancel();
}

LOCKSTEP_ALWAYS_INLINE void executor::yield_switch() {
  fiber& f = *current_;
  core_slot& c = cores_[f.core];
  if (c.active == &f && !tearing_down_) [[likely]] {
    // release_core then make_ready, fused: the core stays busy (f is in its
    // ready list now) and its ready fibers, f last, become candidates.
    c.active = nullptr;
    f.state = fiber_state::ready;
    f.ready_seq = ++seq_;
    c.ready.push_back(&f);
    candidates_total_ += c.ready.size();
    c.candidates = static_cast<std::uint32_t>(c.ready.size());
  } else {
    release_core(f);
    make_ready(f);
  }
  switch_away(f);
}

}  // namespace lockstep::sim
