#include "sim/executor.hpp"

#include <cxxabi.h>

#include <cstdio>
#include <ostream>
#include <cstdlib>
#include <stdexcept>
#include <typeinfo>

#include "engine/runtime.hpp"
#include "sim/sanitizer.hpp"

namespace lockstep::sim {

namespace {

// The Itanium C++ ABI's per-thread exception globals (executor::eh_globals).
// Fibers share a thread, so without a swap one fiber's `throw;` could rethrow
// another's exception (verified in shared/notes: heap-use-after-free under ASan).
void* eh() { return abi::__cxa_get_globals(); }

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  return out;
}

const char* reason_name(wake_reason r) {
  switch (r) {
    case wake_reason::notified: return "notify";
    case wake_reason::timed_out: return "timer";
    case wake_reason::cancelled: return "cancel";
    case wake_reason::none: break;
  }
  return "none";
}

}  // namespace

std::string_view to_string(failure_kind kind) {
  switch (kind) {
    case failure_kind::deadlock: return "deadlock";
    case failure_kind::step_budget: return "step_budget";
    case failure_kind::time_budget: return "time_budget";
    case failure_kind::uncaught_exception: return "uncaught_exception";
    case failure_kind::abort: return "abort";
    case failure_kind::replay_divergence: return "replay_divergence";
    case failure_kind::oracle: return "oracle";
    case failure_kind::resource_exhausted: return "resource_exhausted";
    case failure_kind::liveness: return "liveness";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, failure_kind kind) { return os << to_string(kind); }

// --- wait_queue -------------------------------------------------------------

wait_queue::~wait_queue() {
  // A primitive destroyed while fibers still wait on it: detach them so no
  // fiber points into freed memory. They stay blocked until teardown.
  while (head_ != nullptr) unlink(*head_);
}

std::size_t wait_queue::size() const {
  std::size_t n = 0;
  for (fiber* f = head_; f != nullptr; f = f->q_next) ++n;
  return n;
}

void wait_queue::push_back(fiber& f) {
  f.queue = this;
  f.q_prev = tail_;
  f.q_next = nullptr;
  if (tail_ != nullptr) {
    tail_->q_next = &f;
  } else {
    head_ = &f;
  }
  tail_ = &f;
}

void wait_queue::unlink(fiber& f) {
  (f.q_prev != nullptr ? f.q_prev->q_next : head_) = f.q_next;
  (f.q_next != nullptr ? f.q_next->q_prev : tail_) = f.q_prev;
  f.queue = nullptr;
  f.q_prev = f.q_next = nullptr;
}

// --- construction -----------------------------------------------------------

struct executor::run_spares {
  std::vector<core_slot> cores;  // their ready lists keep their capacity
  std::vector<std::unique_ptr<fiber>> by_id;
  std::vector<std::unique_ptr<fiber>> fibers;
  std::vector<timer> timers;
  std::vector<candidate> candidates;
  std::size_t decisions = 0;  // the last run's count: one reservation instead of a doubling series
};

// Enough records for the runs that benefit (small ones, many per second);
// a run with more fibers than this allocates the rest, as before. Under ASan
// every finished record is freed, so a use after a fiber's end is reported
// instead of reading a recycled record.
#if defined(LOCKSTEP_HAS_ASAN)
static constexpr std::size_t max_spare_fibers = 0;
#else
static constexpr std::size_t max_spare_fibers = 4096;
#endif
// Parked contexts (see fiber::pool): a finished fiber's context and stack
// kept for the next spawn. Creating a context (Boost makes an excursion onto
// the new stack and back), allocating its stack and the exit path cost about
// as much as a small run's steps. Bounded, so a run of many fibers leaves
// few stacks pinned. Not under the sanitizers: ASan's fake stacks and TSan's
// shadow stacks follow a context's life, which parking would extend.
#if defined(LOCKSTEP_HAS_ASAN) || defined(LOCKSTEP_HAS_TSAN)
static constexpr std::size_t max_parked_fibers = 0;
#else
static constexpr std::size_t max_parked_fibers = 256;
#endif

void executor::reset(const run_config& config) {
  // Every member below as the constructor (and its initializers) leaves it;
  // keep this list complete when adding one (test_sim_executor's reuse test
  // compares reused and fresh executors after runs that leave state behind).
  if (config.stack_bytes != config_.stack_bytes) stacks_ = &stack_pool::shared(config.stack_bytes);
  config_ = config;
  if (!strategy_->restart(config.strategy, config.seed, config.options)) {
    strategy_ = make_strategy(config.strategy, config.seed, config.options);
  }
  values_seeded_ = false;
  reusable_ = false;
  trace_.~trace();
  ::new (static_cast<void*>(&trace_)) trace(config.trace);
  cores_.resize(config.cores == 0 ? 1 : config.cores);
  for (core_slot& c : cores_) {
    c.active = nullptr;
    c.ready.clear();
  }
  fibers_.clear();  // all null: run() ended every fiber
  live_ = 0;
  timers_.c.clear();
  uniform_ = strategy_->uniform_source();
  if (uniform_ != nullptr) ahead_ = uniform_->next();
  watched_step_ = strategy_->next_watched_step();
  candidates_total_ = 0;
  stop_ = false;
  candidates_.clear();
  decisions_.clear();  // run() moved them out; reserve as a fresh executor would
  if (config.record_decisions) decisions_.reserve(spares().decisions);
  current_ = nullptr;
  switched_from_ = nullptr;  // sched_cont_ is empty: run() ended with every fiber
  busy_cores_ = 0;
  now_ = 0;
  step_ = 0;
  seq_ = 0;
  objects_ = 0;
  probe_hits_ = 0;
  probe_seq_ = 0;
  // probe_first_ and probe_last_ are read only for probes hit in this run,
  // which wrote them: no need to clear them.
  main_ = no_fiber;
  failed_.reset();
  tearing_down_ = false;
  destroying_ = false;
  teardown_top_ = 0;
  teardown_steps_ = 0;
  // The scheduler's stack, sanitizer contexts and EH globals are this
  // thread's: unchanged, as the executor never leaves it.
}

#if defined(LOCKSTEP_HAS_ASAN)
executor_lease::executor_lease(const run_config& config) : ex_(std::make_unique<executor>(config)) {}
executor_lease::~executor_lease() = default;
#else
namespace {
constexpr std::size_t trim_keeps_slabs = 4;
// This thread's executor between runs. Parked, so its destructor at thread
// exit touches no other thread_local (the stack pool may be gone by then).
thread_local std::unique_ptr<executor> idle;
}  // namespace

executor_lease::executor_lease(const run_config& config) {
  if (idle) {
    ex_ = std::move(idle);
    ex_->parked_ = false;
    ex_->reset(config);
  } else {
    ex_ = std::make_unique<executor>(config);
  }
}

executor_lease::~executor_lease() {
  // Only an executor whose run() returned is in a state reset() can restart
  // from. With the slot already taken (this run was nested in another, or
  // one nested in it parked first), it is freed.
  if (ex_->reusable_ && !idle) {
    // After a run that grew the pool past what trimming keeps, parked stacks
    // must not pin its slabs: they are given back first.
    if (ex_->stacks_->mapped() > trim_keeps_slabs * stack_pool::stacks_per_slab) ex_->drop_all_parked();
    ex_->stacks_->trim_if_idle(trim_keeps_slabs);
    ex_->parked_ = true;
    idle = std::move(ex_);
  }
}
#endif

executor::run_spares& executor::spares() {
  // Per thread: explore's jobs each run their own executors.
  static thread_local run_spares s;
  return s;
}

executor::executor(const run_config& config)
    : config_(config),
      strategy_(make_strategy(config.strategy, config.seed, config.options)),
      trace_(config.trace),
      stacks_(&stack_pool::shared(config.stack_bytes)) {
  // Take what the last run on this thread left (a nested executor finds the
  // spares taken and starts empty, which is only slower).
  run_spares& s = spares();
  cores_ = std::move(s.cores);
  cores_.resize(config.cores == 0 ? 1 : config.cores);
  for (core_slot& c : cores_) {
    c.active = nullptr;
    c.ready.clear();
  }
  fibers_ = std::move(s.by_id);
  fibers_.clear();
  spare_fibers_ = std::move(s.fibers);
  timers_.c = std::move(s.timers);
  timers_.c.clear();
  candidates_ = std::move(s.candidates);
  candidates_.clear();
  if (config.record_decisions) decisions_.reserve(s.decisions);
  // Ask ASan for this thread's stack bounds, then restore them.
  void* t = nullptr;
  san::start_switch(&t, nullptr, 0);
  san::finish_switch(t, &sched_bottom_, &sched_size_);
  san::start_switch(&t, sched_bottom_, sched_size_);
  san::finish_switch(t, nullptr, nullptr);
  sched_tsan_ = san::tsan_current();
  eh_ = eh();
  uniform_ = strategy_->uniform_source();
  if (uniform_ != nullptr) ahead_ = uniform_->next();
  watched_step_ = strategy_->next_watched_step();
}

constinit thread_local executor* executor::running_ = nullptr;

class executor::running_scope {
 public:
  explicit running_scope(executor* ex) : outer_(running_) { running_ = ex; }
  running_scope(const running_scope&) = delete;
  running_scope& operator=(const running_scope&) = delete;
  ~running_scope() { running_ = outer_; }

 private:
  executor* outer_;
};

executor::~executor() {
  if (parked_) {
    // At thread exit: the thread's pool and spares may be gone already, and
    // nothing is left to hand them (run() returned, every fiber is gone).
    // Parked contexts are forgotten, not unwound: their stacks may be
    // unmapped, and nothing of a user's is on them (see spawn).
    alignas(boost::context::fiber) unsigned char sink[sizeof(boost::context::fiber)];
    for (auto& owned : spare_fibers_) {
      if (owned->cont) ::new (static_cast<void*>(sink)) boost::context::fiber(std::move(owned->cont));  // never destroyed
    }
    return;
  }
  // run() tears every fiber down; this only matters if run() was never called.
  if (live_ > 0) {
    running_scope scope(this);  // the fibers it unwinds may still yield
    teardown();
  }
  // Records handed on hold no context (the pool for their stack size may be
  // trimmed, and the next executor may use another).
  drop_all_parked();
  stacks_->trim_if_idle();
  run_spares& s = spares();
  if (s.cores.capacity() <= cores_.capacity()) s.cores = std::move(cores_);
  // Every record is gone by now (finished, or destroyed by teardown).
  fibers_.clear();
  if (s.by_id.capacity() <= fibers_.capacity()) s.by_id = std::move(fibers_);
  if (s.fibers.size() <= spare_fibers_.size()) s.fibers = std::move(spare_fibers_);
  if (s.timers.capacity() <= timers_.c.capacity()) s.timers = std::move(timers_.c);
  if (s.candidates.capacity() <= candidates_.capacity()) s.candidates = std::move(candidates_);
}

void executor::retire(fiber& f) {
  std::unique_ptr<fiber> owned = std::move(fibers_[f.id]);
  if (spare_fibers_.size() >= max_spare_fibers) {
    if (f.cont) --parked_fibers_;
    drop_parked(f);
    return;  // freed here
  }
  // A fresh record in the same storage: no state of this fiber survives but
  // a parked context, its stack and their pool.
  fiber* p = owned.get();
  boost::context::fiber parked = std::move(p->cont);
  const boost::context::stack_context stack = p->stack;
  stack_pool* const pool = p->pool;
  p->~fiber();
  // Default-initialised, not value-initialised (`fiber()`): every member has
  // its own initialiser, and `fiber()` first zeroes the whole record (a
  // `rep stos` that was 7% of a tiny run).
  ::new (static_cast<void*>(p)) fiber;
  if (parked) {
    p->cont = std::move(parked);
    p->stack = stack;
    p->pool = pool;
  }
  spare_fibers_.push_back(std::move(owned));
}

// Unwinds a parked context (Boost's forced unwind through the parking loop
// alone: no user frame is on it), which returns its stack to its pool.
void executor::drop_parked(fiber& f) {
  if (!f.cont) return;
  { boost::context::fiber dead = std::move(f.cont); }
  f.pool = nullptr;
}

void executor::drop_all_parked() {
  for (auto& owned : spare_fibers_) drop_parked(*owned);
  parked_fibers_ = 0;
}

bool executor::may_park() {
  if (parked_fibers_ >= max_parked_fibers || destroying_) return false;
  ++parked_fibers_;
  return true;
}

// --- fibers -----------------------------------------------------------------

fiber_id executor::spawn(std::uint32_t core, std::string name, unique_function body) {
  if (core >= cores_.size()) {
    throw std::out_of_range("spawn on core " + std::to_string(core) + " but the run has " +
                            std::to_string(cores_.size()) + " cores");
  }
  const auto id = static_cast<fiber_id>(fibers_.size());
  if (live_ >= config_.max_live_fibers) {
    out_of_resources(id, name,
                     ("the run's limit of " + std::to_string(config_.max_live_fibers) +
                      " live fibers is reached (run_config::max_live_fibers)")
                         .c_str());
  }
  fiber* f = nullptr;
  try {
    std::unique_ptr<fiber> owned;
    if (!spare_fibers_.empty()) {
      owned = std::move(spare_fibers_.back());
      spare_fibers_.pop_back();
    } else {
      owned = std::make_unique<fiber>();
    }
    f = owned.get();
    fibers_.push_back(std::move(owned));
  } catch (const std::bad_alloc&) {
    out_of_resources(id, name, "out of memory for its record");
  }
  f->id = id;
  f->core = core;
  f->name = std::move(name);
  f->body = std::move(body);
  f->owner = this;
  f->tsan_fiber = san::tsan_create();
  ++live_;
  // Spawned while the run is being torn down: born cancelled, so its body
  // never runs against a frame that is unwinding (see executor.hpp).
  if (tearing_down_) {
    f->cancel_requested = true;
    teardown_top_ = fibers_.size();
  }

  if (f->cont && f->pool == stacks_) {
    --parked_fibers_;  // a parked context: its next resume runs this body
  } else {
    if (f->cont) --parked_fibers_;
    drop_parked(*f);  // parked on a stack of another size
    // Boost's constructor makes an excursion onto the new stack and back; tell
    // ASan it is a switch to "self" so no fake frame is taken from the creator.
    const void* creator_bottom = current_ ? stack_bottom(*current_) : sched_bottom_;
    const std::size_t creator_size = current_ ? current_->stack.size : sched_size_;
    void* creator_tsan = current_ ? current_->tsan_fiber : sched_tsan_;
    void* t = nullptr;
    san::start_switch(&t, creator_bottom, creator_size);
    san::tsan_switch(f->tsan_fiber);
    try {
      f->cont = boost::context::fiber(std::allocator_arg, pooled_stack_allocator{stacks_, &f->stack},
                                      [f](boost::context::fiber&& from) {
                                        executor* ex = f->owner;
                                        ex->adopt(std::move(from));
                                        for (;;) {
                                          san::finish_switch(nullptr, nullptr, nullptr);
                                          f->started = true;
                                          fiber_main(ex, f);
                                          if (!ex->may_park()) break;
                                          // Parked (done is set): the scheduler retires the
                                          // record with this context; the next spawn that takes
                                          // it resumes here, with the record refilled, maybe for
                                          // another executor of this thread.
                                          ex->switched_from_ = f;
                                          from = std::move(ex->sched_cont_).resume();
                                          ex = f->owner;
                                          ex->adopt(std::move(from));
                                        }
                                        ex->switched_from_ = f;
                                        return std::move(ex->sched_cont_);
                                      });
      f->pool = stacks_;
    } catch (const std::exception& e) {  // stack_exhausted, or bad_alloc
      san::tsan_switch(creator_tsan);
      san::finish_switch(t, nullptr, nullptr);
      san::tsan_destroy(f->tsan_fiber);
      const std::string fiber_name = f->name;
      fibers_.pop_back();  // it never existed: no trace line, no id reuse hazard (nothing saw it)
      --live_;
      if (tearing_down_) teardown_top_ = fibers_.size();
      out_of_resources(id, fiber_name, e.what());
    }
    san::tsan_switch(creator_tsan);
    san::finish_switch(t, nullptr, nullptr);
  }

  strategy_->on_spawn(f->id);
  if (trace_.on()) {
    trace_.begin("spawn")
        .field("t", now_)
        .field("fiber", static_cast<std::int64_t>(f->id))
        .field("core", static_cast<std::int64_t>(core))
        .field("parent", current_ ? static_cast<std::int64_t>(current_->id) : -1)
        .field("name", f->name)
        .end();
  }
  make_ready(*f);
  return f->id;
}

// A resource limit fails the run with its own kind, then unwinds the spawner
// (a run_aborted, so engine panic containment lets it through).
void executor::out_of_resources(fiber_id id, const std::string& name, const char* why) {
  const std::string msg = "could not start fiber #" + std::to_string(id) + " '" + name + "' with " +
                          std::to_string(live_) + " fibers alive: " + why;
  fail(failure_kind::resource_exhausted, msg);
  throw run_aborted{msg};
}

void executor::fiber_main(executor* ex, fiber* f) {
  // Last on every way out, including Boost's forced unwind: mark the fiber
  // done and let ASan free its fake stack (start_switch with nullptr).
  struct exit_guard {
    executor* ex;
    fiber* f;
    ~exit_guard() {
      f->done = true;
      san::start_switch(nullptr, ex->sched_bottom_, ex->sched_size_);
    }
  } guard{ex, f};
  try {
    // Run in place, and dropped here on every way out (an unwind too):
    // captured objects are destroyed on the fiber's own stack, as the fiber.
    struct drop_body {
      fiber* f;
      ~drop_body() { f->body.reset(); }
    } drop{f};
    if (f->cancel_requested) {
      // Cancelled before it ever ran: the body is dropped unrun, as a tokio
      // task aborted before its first poll.
      f->unwinding = true;
      throw fiber_cancelled{};
    }
    f->body();
  } catch (const fiber_cancelled&) {
    // The normal end of a cancelled fiber: every destructor has run.
  } catch (const boost::context::detail::forced_unwind&) {
    throw;  // Boost's own teardown must reach its entry frame
  } catch (const liveness_failed& o) {
    ex->fail(failure_kind::liveness, "liveness oracle '" + o.oracle + "' failed in fiber " + std::to_string(f->id) +
                                         " '" + f->name + "': " + o.message);
  } catch (const oracle_failed& o) {
    ex->fail(failure_kind::oracle, "oracle '" + o.oracle + "' failed in fiber " + std::to_string(f->id) +
                                       " '" + f->name + "': " + o.message);
  } catch (const lockstep::task_panic&) {
    // Ends only this fiber, as a panic ends only its task under tokio.
    ++ex->contained_task_panics_;
    if (ex->trace_.on()) ex->note("task_panic").field("name", f->name).end();
  } catch (const run_aborted& a) {
    ex->fail(failure_kind::abort, "fiber " + std::to_string(f->id) + " '" + f->name +
                                      "' aborted the run: " + a.why);
  } catch (const std::exception& e) {
    ex->fail(failure_kind::uncaught_exception, "fiber " + std::to_string(f->id) + " '" + f->name +
                                                   "' ended with an uncaught " +
                                                   type_name(typeid(e)) + ": " + e.what());
  } catch (...) {
    ex->fail(failure_kind::uncaught_exception,
             "fiber " + std::to_string(f->id) + " '" + f->name + "' ended with an uncaught exception");
  }
}

// The scheduler's switch to f. What comes back is whichever fiber handed
// control back to the scheduler: f, or one that f or its successors switched
// to. Inlined into loop(): every return after a context switch mispredicts
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

void executor::suspend_while_destroying() {
  std::fputs("lockstep: a fiber tried to suspend while being destroyed (a destructor blocked "
             "forever during teardown)\n",
             stderr);
  std::abort();
}

void executor::throw_cancelled(fiber& f) {
  f.unwinding = true;
  throw fiber_cancelled{};
}

void executor::finish(fiber& f) {
  release_core(f);
  f.state = fiber_state::finished;
  wake_all(f.joiners);
  san::tsan_destroy(f.tsan_fiber);
  f.tsan_fiber = nullptr;
  if (trace_.on()) {
    trace_.begin("finish")
        .field("t", now_)
        .field("fiber", static_cast<std::int64_t>(f.id))
        .field("cancelled", static_cast<std::int64_t>(f.unwinding ? 1 : 0))
        .end();
  }
  const fiber_id id = f.id;
  if (id == main_ && !tearing_down_) stop_ = true;
  retire(f);
  --live_;
}

fiber* executor::find(fiber_id id) const { return id < fibers_.size() ? fibers_[id].get() : nullptr; }

bool executor::finished(fiber_id id) const { return find(id) == nullptr; }

// --- cores and readiness ----------------------------------------------------

wake_reason executor::block(const char* what, std::uint64_t object, wait_queue* queue,
                            std::optional<std::int64_t> deadline, bool cancellable) {
  fiber& f = *current_;
  if (cancellable) check_cancel();
  if (deadline && *deadline <= now_ && queue == nullptr) {
    // Already due: a timer that fires "now" still lets others run first.
    yield_now();
    return wake_reason::timed_out;
  }
  f.state = fiber_state::blocked;
  f.waiting_on = what;
  f.waiting_object = object;
  f.cancellable_wait = cancellable;
  f.timed = deadline.has_value();
  f.reason = wake_reason::none;
  if (queue != nullptr) queue->push_back(f);
  if (deadline) timers_.push(timer{*deadline, ++seq_, f.id, f.wait_generation});
  release_core(f);
  if (trace_.on()) trace_block(f, what, object);
  switch_away(f);
  const wake_reason r = f.reason;
  // An await point leaves by unwinding as soon as cancellation is asked for.
  // A non-cancellable wait (mutex::lock) never throws, not even in teardown:
  // destructors take mutexes on ordinary scope exits, where a throw would
  // terminate the process.
  if (cancellable) check_cancel();
  return r;
}

void executor::wake(fiber& f, wake_reason reason) {
  if (f.state != fiber_state::blocked) return;
  if (f.queue != nullptr) f.queue->unlink(f);
  ++f.wait_generation;
  f.reason = reason;
  if (trace_.on()) trace_wake(f, reason);
  make_ready(f);
}

bool executor::wake_one(wait_queue& q) {
  if (q.empty()) return false;
  wake(*q.front(), wake_reason::notified);
  return true;
}

void executor::wake_all(wait_queue& q) {
  while (!q.empty()) wake(*q.front(), wake_reason::notified);
}

void executor::cancel(fiber_id id) {
  fiber* f = find(id);
  if (f == nullptr || f->cancel_requested) return;
  f->cancel_requested = true;
  if (trace_.on()) {
    trace_.begin("cancel")
        .field("t", now_)
        .field("fiber", static_cast<std::int64_t>(f->id))
        .field("by", current_ ? static_cast<std::int64_t>(current_->id) : -1)
        .end();
  }
  if (f->state == fiber_state::blocked && f->cancellable_wait) wake(*f, wake_reason::cancelled);
}

void executor::join(fiber_id id) {
  while (fiber* f = find(id)) block("join", id, &f->joiners, std::nullopt, true);
}

void executor::probe(std::uint16_t index) {
  const std::uint64_t bit = std::uint64_t{1} << index;
  ++probe_seq_;
  if ((probe_hits_ & bit) == 0) probe_first_[index] = probe_seq_;
  probe_hits_ |= bit;
  probe_last_[index] = probe_seq_;
  if (trace_.on()) note("probe").field("name", probes::names[index]).end();
}

trace& executor::note(std::string_view event) {
  trace_.begin(event).field("t", now_);
  if (current_ != nullptr) trace_.field("fiber", static_cast<std::int64_t>(current_->id));
  return trace_;
}

// --- the scheduler loop -----------------------------------------------------

void executor::step_budget_exhausted() {
  fail(failure_kind::step_budget,
       "step budget of " + std::to_string(config_.max_steps) +
           " exhausted: a livelock (fibers keep running without finishing), or a budget too "
           "small for this program");
}

// Out of the inlined step: a virtual call, a candidate list and a handler.
bool executor::pick_by_strategy(std::size_t count, std::size_t& index) {
  list_candidates();
  try {
    index = strategy_->pick(candidates_, count, step_);
    return true;
  } catch (const replay_divergence& e) {
    fail(failure_kind::replay_divergence, std::string("replay diverged: ") + e.what());
    return false;
  }
}

// Inlined into choose_next() and loop(), as take() is into it: the calls and
// their register saves were a sixth of an untraced step's instructions.
LOCKSTEP_ALWAYS_INLINE fiber* executor::pick() {
  const std::size_t count = candidates_total_;
  if (count == 0) return nullptr;
  ++step_;
  if (step_ > config_.max_steps) [[unlikely]] {
    step_budget_exhausted();
    return nullptr;
  }

  std::size_t index = 0;
  const bool decide = count > 1;
  if (decide) {
    if (uniform_ != nullptr) {
      index = draw_below(count);
    } else if (!pick_by_strategy(count, index)) {
      return nullptr;
    }
  }

  fiber* chosen = take(index, count);
  if (count >= prefetch_ahead_from && uniform_ != nullptr) prefetch_next_pick(count);
  if (decide && config_.record_decisions) decisions_.push_back(chosen->id);
  // One comparison per step, choice or not: PCT's change points count every
  // step (its bound needs each to take effect); the call is only on those.
  // (Teardown picks elsewhere, so its steps are not watched.)
  if (step_ == watched_step_) {
    strategy_->on_watched_step(step_, chosen->id);
    watched_step_ = strategy_->next_watched_step();
  }
  return chosen;
}

// Maps a candidate index back to its fiber (cores in order; an active,
// preempted fiber is its core's only candidate), gives it its core and
// records the step.
// The lines written on every step, out of line: inlined, their code made an
// untraced step measurably dearer (registers saved for a path not taken).
void executor::trace_step(const fiber& chosen, std::size_t count) {
  trace_.step_line(step_, now_, static_cast<std::int64_t>(chosen.id), static_cast<std::int64_t>(count));
}

void executor::trace_block(const fiber& f, const char* what, std::uint64_t object) {
  trace_.begin("block")
      .field("t", now_)
      .field("fiber", static_cast<std::int64_t>(f.id))
      .field("on", what)
      .field_u("object", object)
      .end();
}

void executor::trace_wake(const fiber& f, wake_reason reason) {
  trace_.begin("wake")
      .field("t", now_)
      .field("fiber", static_cast<std::int64_t>(f.id))
      .field("by", reason_name(reason))
      .end();
}

LOCKSTEP_ALWAYS_INLINE fiber* executor::take(std::size_t index, std::size_t count) {
  fiber* chosen = nullptr;
  for (core_slot& c : cores_) {
    const std::size_t n = c.active ? 1 : c.ready.size();
    if (index >= n) {
      index -= n;
      continue;
    }
    if (c.active) {
      chosen = c.active;
      --candidates_total_;
    } else {
      chosen = c.ready[index];
      c.ready[index] = c.ready.back();  // order is irrelevant: fifo reads ready_seq
      c.ready.pop_back();
      c.active = chosen;  // the core stays busy; its other ready fibers wait behind it
      candidates_total_ -= c.ready.size() + 1;
    }
    break;
  }
  if (trace_.on()) trace_step(*chosen, count);
  return chosen;
}

// Where the next uniform decision lands if the candidates stay as they are
// (a yielding fiber goes to the back of its core's list): its record and
// body lines are fetched now, a whole step before they are read. A wrong
// guess costs only the fetch.
void executor::prefetch_next_pick(std::size_t count) {
  auto i = static_cast<std::size_t>(prng::reduce(ahead_, count));
  for (const core_slot& c : cores_) {
    const std::size_t n = c.ready.size() + (c.active != nullptr ? 1 : 0);
    if (i >= n) {
      i -= n;
      continue;
    }
    const fiber* f = i < c.ready.size() ? c.ready[i] : c.active;
    __builtin_prefetch(f);
    __builtin_prefetch(&f->body);
    return;
  }
}

void executor::list_candidates() {
  candidates_.clear();
  for (const core_slot& c : cores_) {
    if (c.active) {
      candidates_.push_back({c.active->id, c.active->state == fiber_state::preempted, c.active->ready_seq});
    } else {
      for (const fiber* f : c.ready) candidates_.push_back({f->id, false, f->ready_seq});
    }
  }
}

bool executor::advance_time() {
  while (!timers_.empty()) {
    const timer t = timers_.top();
    const fiber* f = find(t.id);
    if (f == nullptr || f->state != fiber_state::blocked || f->wait_generation != t.generation) {
      timers_.pop();  // stale: that wait already ended
      continue;
    }
    if (t.deadline > config_.max_time_ns) {
      fail(failure_kind::time_budget,
           "virtual time budget of " + std::to_string(config_.max_time_ns) +
               " ns exhausted: the next timer is at " + std::to_string(t.deadline) +
               " ns (a hang in virtual time). " + describe_blocked());
      return false;
    }
    if (t.deadline > now_) {
      now_ = t.deadline;
      if (trace_.on()) trace_.begin("time").field("t", now_).end();
    }
    while (!timers_.empty() && timers_.top().deadline <= now_) {
      const timer due = timers_.top();
      timers_.pop();
      fiber* g = find(due.id);
      if (g != nullptr && g->state == fiber_state::blocked && g->wait_generation == due.generation) {
        wake(*g, wake_reason::timed_out);
      }
    }
    return true;
  }
  return false;
}

// The next fiber after a scheduling point of the running one (which is a
// candidate itself unless it blocked): what loop() would pick, clock moves
// included, or null when it is the scheduler's turn (the run stops, nothing
// can run, or teardown, which picks by age and wants every scheduling
// point back).
fiber* executor::choose_next() {
  if (tearing_down_) return nullptr;
  while (!stop_) {
    if (fiber* next = pick()) return next;
    if (failed_ || !advance_time()) return nullptr;
  }
  return nullptr;
}

// choose_next()'s loop, with pick() inlined here too: the scheduler gets
// control back after every fiber's end, several times a run on small tests,
// and a call into choose_next cost those ~90 instructions a run (Relacy peer
// test (b): 3,941 -> 4,034).
void executor::loop() {
  while (!stop_) {
    fiber* f = pick();
    if (f == nullptr) {
      if (failed_ || !advance_time()) return;
      continue;
    }
    resume(*f);
  }
}

run_result executor::run(unique_function main) {
  running_scope scope(this);
  if (trace_.on()) {
    // No strategy name here: a replay must reproduce these bytes exactly.
    trace_.begin("run")
        .field_u("seed", config_.seed)
        .field("cores", static_cast<std::int64_t>(cores_.size()))
        .end();
  }
  try {
    main_ = spawn(0, "main", std::move(main));
  } catch (const run_aborted&) {
    // Not even one stack could be had; the failure is recorded.
  }
  loop();
  if (!failed_ && !finished(main_)) {
    // The kind is printed before the message ("deadlock: ..."): the message does not repeat it.
    fail(failure_kind::deadlock, "no fiber can run and no timer is pending. " +
                                     describe_blocked());
  }
  if (!failed_ && strategy_->unconsumed() > 0) {
    fail(failure_kind::replay_divergence,
         "replay diverged: the run ended with " + std::to_string(strategy_->unconsumed()) +
             " recorded decisions unused");
  }
  teardown();
  if (trace_.on()) {
    trace_.begin("end")
        .field_u("steps", step_)
        .field("t", now_)
        .field("outcome", failed_ ? to_string(failed_->kind) : std::string_view("ok"))
        .end();
  }
  run_result r;
  r.seed = config_.seed;
  r.strategy = std::string(strategy_->name());
  r.cores = static_cast<std::uint32_t>(cores_.size());
  // Room for a run a little longer than this one, so the next run's list
  // is one allocation rather than a reservation and a regrowth.
  spares().decisions = decisions_.size() + decisions_.size() / 2 + 16;
  r.decisions = std::move(decisions_);
  r.trace_hash = trace_.hash();
  r.steps = step_;
  r.end_time_ns = now_;
  r.failed = failed_;
  r.trace_text = trace_.text();
  r.probe_hits = probe_hits_;
  reusable_ = live_ == 0;
  // Pair p was seen as a-then-b when some hit of a came before some later hit
  // of b: the first a before the last b (and the other way round).
  for (std::size_t p = 0; probe_hits_ != 0 && p < probes::pairs.size(); ++p) {
    const auto& pair = probes::pairs[p];
    const std::uint64_t both = (std::uint64_t{1} << pair.a) | (std::uint64_t{1} << pair.b);
    if ((probe_hits_ & both) != both) continue;
    if (probe_first_[pair.a] < probe_last_[pair.b]) r.probe_orders |= probes::order_ab(p);
    if (probe_first_[pair.b] < probe_last_[pair.a]) r.probe_orders |= probes::order_ba(p);
  }
  return r;
}

void executor::teardown() {
  if (live_ == 0) return;
  enter_teardown();
  teardown_loop();
  if (live_ > 0) destroy_stuck_fibers();
  // Nothing schedules on the cores again; leave the counters consistent.
  busy_cores_ = 0;
  candidates_total_ = 0;
}

// The rules are written down in executor.hpp ("Teardown").
void executor::enter_teardown() {
  tearing_down_ = true;
  for (core_slot& c : cores_) {
    c.active = nullptr;  // a preempted fiber keeps its state but not its core
    c.ready.clear();     // ready fibers keep their state; teardown finds them by age
  }
  candidates_total_ = 0;
  busy_cores_ = 2;  // every scheduling point now returns to the teardown loop
  teardown_top_ = fibers_.size();
  for (auto it = fibers_.rbegin(); it != fibers_.rend(); ++it) {
    const auto& owned = *it;
    if (!owned) continue;
    owned->cancel_requested = true;
    if (owned->state == fiber_state::blocked && owned->cancellable_wait && !owned->unwinding) {
      wake(*owned, wake_reason::cancelled);
    }
  }
}

// The youngest fiber that can make progress: null when that is the clock's
// job (the youngest such fiber waits on a timer) or nothing can move.
fiber* executor::pick_for_teardown() {
  while (teardown_top_ > 0 && !fibers_[teardown_top_ - 1]) --teardown_top_;
  for (std::size_t i = teardown_top_; i-- > 0;) {
    fiber* f = fibers_[i].get();
    if (f == nullptr) continue;
    if (f->state == fiber_state::ready || f->state == fiber_state::preempted) return f;
    if (f->state == fiber_state::blocked && f->timed) return nullptr;
  }
  return nullptr;
}

void executor::teardown_loop() {
  while (live_ > 0) {
    fiber* f = pick_for_teardown();
    if (f == nullptr) {
      if (advance_time()) continue;
      return;  // fibers wait on each other forever (or past the time budget)
    }
    if (++teardown_steps_ > teardown_step_budget) return;  // spinners: forced unwind next
    ++step_;
    if (trace_.on()) {
      trace_.step_line(step_, now_, static_cast<std::int64_t>(f->id), 1);
    }
    resume(*f);
  }
}

// Last resort: fibers blocked inside destructors while unwinding can never
// finish. Let Boost destroy them (forced unwind), youngest first; nothing
// may suspend now.
void executor::destroy_stuck_fibers() {
  destroying_ = true;
  for (auto it = fibers_.rbegin(); it != fibers_.rend(); ++it) {
    auto& owned = *it;
    if (!owned) continue;
    fiber& f = *owned;
    if (f.queue != nullptr) f.queue->unlink(f);
    if (trace_.on()) {
      // Not a "finish": its destructors ran under Boost's forced unwind,
      // and whatever they were waiting for never happened.
      trace_.begin("destroyed").field("t", now_).field("fiber", static_cast<std::int64_t>(f.id)).end();
    }
    current_ = &f;
    san::start_switch(&sched_fake_, stack_bottom(f), f.stack.size);
    san::tsan_switch(f.tsan_fiber);
    { boost::context::fiber dead = std::move(f.cont); }
    san::tsan_switch(sched_tsan_);
    san::finish_switch(sched_fake_, nullptr, nullptr);
    if (!f.started) {
      // Its entry never ran, so nothing told ASan we left its stack.
      void* t = nullptr;
      san::start_switch(&t, sched_bottom_, sched_size_);
      san::finish_switch(t, nullptr, nullptr);
    }
    current_ = nullptr;
    san::tsan_destroy(f.tsan_fiber);
    owned.reset();
    --live_;
  }
  destroying_ = false;
}

void executor::fail(failure_kind kind, std::string message) {
  if (failed_) return;  // the first failure is the one worth reporting
  failed_ = failure{kind, std::move(message) + " [" + where() + "]", step_};
  stop_ = true;
  if (trace_.on()) trace_.begin("fail").field("t", now_).field("kind", to_string(kind)).end();
}

std::string executor::where() const {
  return "seed " + std::to_string(config_.seed) + ", strategy " + std::string(strategy_->name()) +
         ", step " + std::to_string(step_) + ", t=" + std::to_string(now_) + " ns";
}

std::string executor::describe_blocked() const {
  std::string s = "Blocked fibers:";
  for (const auto& owned : fibers_) {
    if (!owned || owned->state != fiber_state::blocked) continue;
    s += " #" + std::to_string(owned->id) + " '" + owned->name + "' waits on " + owned->waiting_on +
         " (object " + std::to_string(owned->waiting_object) + ");";
  }
  return s;
}

void executor::check_invariants() const {
  std::uint32_t busy = 0;
  std::size_t candidates = 0;
  for (std::size_t i = 0; i < cores_.size(); ++i) {
    const core_slot& c = cores_[i];
    if (c.active != nullptr || !c.ready.empty()) ++busy;
    if (c.active == nullptr) {
      candidates += c.ready.size();
    } else if (c.active->state == fiber_state::preempted) {
      ++candidates;
    }
    if (c.active && c.active->core != i) throw std::logic_error("active fiber on the wrong core");
    if (c.active && c.active->state != fiber_state::running && c.active->state != fiber_state::preempted)
      throw std::logic_error("a core's active fiber is neither running nor preempted");
    for (const fiber* f : c.ready) {
      if (f->state != fiber_state::ready) throw std::logic_error("a fiber in a ready list is not ready");
      if (f->core != i) throw std::logic_error("a ready fiber sits in another core's list");
    }
  }
  if (busy != busy_cores_) throw std::logic_error("busy_cores does not count the busy cores");
  if (candidates != candidates_total_) throw std::logic_error("candidates_total is not the candidate count");
  std::size_t live = 0;
  for (const auto& owned : fibers_) {
    if (!owned) continue;
    ++live;
    if (owned->state == fiber_state::blocked || owned->queue == nullptr) continue;
    throw std::logic_error("a fiber that is not blocked is still in a wait queue");
  }
  if (live != live_) throw std::logic_error("live fiber count is wrong");
}

}  // namespace lockstep::sim
