#include "sim/executor.hpp"

#include <cxxabi.h>
#include <algorithm>

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
    case failure_kind::data_race: return "data_race";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, failure_kind kind) { return os << to_string(kind); }

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

// Cores free_core() added stay in cores_, idle (no fiber, no resident),
// past the `ncores_` in use, for the next run's threads: freeing and
// reallocating them (their ready lists' storage) was a fifth of a small
// sim_std run's allocations, and moving them aside and back about 2% of its
// instructions. An idle core holds no candidate, so the walks over cores_
// see it as empty.
void executor::use_cores(std::uint32_t configured) {
  ncores_ = configured == 0 ? 1 : configured;
  if (cores_.size() < ncores_) cores_.resize(ncores_);
  for (core_slot& c : cores_) {
    c.active = nullptr;
    c.candidates = 0;
    c.ready.clear();
  }
  residents_.assign(cores_.size(), 0);
}

void executor::reset(const run_config& config) {
  // Every member below as the constructor (and its initializers) leaves it;
  // keep this list complete when adding one (test_sim_executor's reuse test
  // compares reused and fresh executors after runs that leave state behind).
  if (!reusable_ || busy_cores_ != 0) [[unlikely]] {
    throw std::logic_error("executor::reset after a run that did not end every fiber");
  }
  if (config.stack_bytes != config_.stack_bytes) stacks_ = &stack_pool::shared(config.stack_bytes);
  config_ = config;
  if (!strategy_->restart(config.strategy, config.seed, config.options)) {
    strategy_ = make_strategy(config.strategy, config.seed, config.options);
  }
  values_seeded_ = false;
  reusable_ = false;
  trace_.~trace();
  ::new (static_cast<void*>(&trace_)) trace(config.trace);
  // Only a run that ended with every fiber is reset (reusable_: see
  // executor_lease), and such a run leaves every core idle, with no
  // resident: only the count in use changes.
  ncores_ = config.cores == 0 ? 1 : config.cores;
  if (cores_.size() < ncores_) use_cores(config.cores);
  fibers_.clear();  // all null: run() ended every fiber
  live_ = 0;
  timers_.c.clear();
  uniform_ = strategy_->uniform_source();
  if (uniform_ != nullptr) ahead_ = uniform_->next();
  watched_step_ = strategy_->next_watched_step();
  access_sink_ = strategy_->wants_accesses() ? strategy_.get() : nullptr;
  harness_sink_ = strategy_->wants_harness_accesses() ? strategy_.get() : nullptr;
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
  atomics_ = 0;
  probe_hits_ = 0;
  probe_seq_ = 0;
  // probe_first_ and probe_last_ are read only for probes hit in this run,
  // which wrote them: no need to clear them.
  main_ = no_fiber;
  failed_.reset();
  clocks_ = nullptr;  // the storage is cleared when a run starts detecting races
  memory_ = nullptr;  // and the model's when it starts
  ++labels_run_;  // every label so far is stale
  tearing_down_ = false;
  destroying_ = false;
  teardown_top_ = 0;
  teardown_steps_ = 0;
  // The scheduler's stack, sanitizer contexts and EH globals are this
  // thread's: unchanged, as the executor never leaves it.
  set_quiet_until();  // after the step and the strategy's watched step
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
    // must not pin its slabs: they are given back first. (A pool within
    // that has nothing to trim: slabs are added only as stacks are carved.)
    if (ex_->stacks_->carved() > trim_keeps_slabs * stack_pool::stacks_per_slab) {
      ex_->drop_all_parked();
      ex_->stacks_->trim_if_idle(trim_keeps_slabs);
    }
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
  use_cores(config.cores);
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
  set_quiet_until();
  access_sink_ = strategy_->wants_accesses() ? strategy_.get() : nullptr;
  harness_sink_ = strategy_->wants_harness_accesses() ? strategy_.get() : nullptr;
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
  // No state of this fiber survives but a parked context, its stack and
  // their pool.
  owned->recycle();
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
  access(fiber_key(f.id));  // its joiners wake: their steps follow this one
  if (clocks_ != nullptr) {
    clocks_->release_merge(f.id, fiber_key(f.id));  // what a join acquires
    if (ended_.size() <= f.id) ended_.resize(static_cast<std::size_t>(f.id) + 1);
    ended_fiber& e = ended_[f.id];
    e.name = f.name_text();
    e.op_count = f.op_count;
    // Only the entries it wrote: a recycled record's others are left as they were.
    std::copy_n(f.history.begin(), std::min(f.op_count, fiber::history_length), e.history.begin());
  }
  release_core(f);
  --residents_[f.core];
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
  if (id == main_ && !tearing_down_) {
    stop_ = true;
    quiet_until_ = 0;  // choose_next's own path reads neither flag
  }
  retire(f);
  --live_;
}

fiber* executor::find(fiber_id id) const { return id < fibers_.size() ? fibers_[id].get() : nullptr; }

bool executor::finished(fiber_id id) const { return find(id) == nullptr; }

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

// Teardown's steps are not the run's: what they touch is not reported.
void executor::report_access(std::uint64_t key) {
  if (!tearing_down_) access_sink_->on_access(key);
}

void executor::order_access(std::uint64_t key) {
  // The clock and the program's randomness order nothing in C++ (a sleep
  // is no synchronisation), and an enable key is not an object.
  if (current_ == nullptr || tearing_down_ || (key & (clock_key | random_key | enable_key_bit)) != 0) return;
  clocks_->acquire_release(current_->id, key);
}

happens_before& executor::start_race_detection() {
  if (clocks_ == nullptr) {
    clock_storage_.clear();
    ended_.clear();
    clocks_ = &clock_storage_;
  }
  return *clocks_;
}

memory_model* executor::start_memory_model_now() {
  start_race_detection();
  memory_storage_.clear();
  memory_ = &memory_storage_;
  return memory_;
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
    set_quiet_until();
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

LOCKSTEP_ALWAYS_INLINE fiber* executor::take(std::size_t index, std::size_t count) {
  fiber* chosen = take_candidate(index);
  if (trace_.on()) trace_step(*chosen, count);
  return chosen;
}

LOCKSTEP_ALWAYS_INLINE fiber* executor::take_candidate(std::size_t index) {
  fiber* chosen = nullptr;
  for (core_slot& c : cores_) {
    const std::size_t n = c.candidates;
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
      c.candidates = 1;
      candidates_total_ -= c.ready.size() + 1;
    }
    break;
  }
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

// Sized to candidates_total_ (the count, exact) and filled in place:
// push_back of the 24-byte candidate was compiled as an out-of-line call per
// candidate, a tenth of a pct run's instructions. The bound keeps a count that
// ever disagreed from writing past the end.
void executor::list_candidates() {
  if (candidates_.size() != candidates_total_) candidates_.resize(candidates_total_);
  candidate* out = candidates_.data();
  candidate* const end = out + candidates_.size();
  for (const core_slot& c : cores_) {
    if (c.active) {
      const bool preempted = c.active->state == fiber_state::preempted;
      if (out != end) *out++ = {c.active->id, preempted, c.active->ready_seq, preempted ? c.active->pending : 0};
    } else {
      for (const fiber* f : c.ready) {
        if (out != end) *out++ = {f->id, false, f->ready_seq, 0};
      }
    }
  }
  if (out != end) [[unlikely]] candidates_.resize(static_cast<std::size_t>(out - candidates_.data()));
}

bool executor::advance_time() {
  while (!timers_.empty()) {
    const timer t = timers_.top();
    if (woken_by(t) == nullptr) {
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
    if (config_.timer_ties) {
      fire_due_timers();
      return true;
    }
    while (!timers_.empty() && timers_.top().deadline <= now_) {
      const timer due = timers_.top();
      timers_.pop();
      if (fiber* g = woken_by(due)) wake(*g, wake_reason::timed_out);
    }
    return true;
  }
  return false;
}

// Under run_config::timer_ties (advance_time fires the due timers together,
// in the order they were set, otherwise): two or more timers due now are a
// choice: all together (0), or timer i - 1 alone (i), the others put back to
// fire when nothing can run again, at this same instant, unless their waits
// ended meanwhile. All together lets the strategy interleave the woken
// fibers; alone lets one timer's whole reaction come first whatever a
// strategy's priorities say (pct's would otherwise put the same fiber first
// at every tie of a run).
void executor::fire_due_timers() {
  due_.clear();
  while (!timers_.empty() && timers_.top().deadline <= now_) {
    if (woken_by(timers_.top()) != nullptr) due_.push_back(timers_.top());
    timers_.pop();
  }
  const std::size_t alone = due_.size() >= 2 ? choice(due_.size() + 1, "timer_tie") : 0;
  for (std::size_t i = 0; i < due_.size(); ++i) {
    if (alone == 0 || i == alone - 1) {
      wake(*find(due_[i].id), wake_reason::timed_out);
    } else {
      timers_.push(due_[i]);
    }
  }
}

// Evenly spaced lateness values 0, J/16, ..., J (all of 0..J when J <= 16):
// few enough that every strategy can offer them as a choice, spread enough to
// cross a neighbour's deadline anywhere in the bound.
std::int64_t executor::jitter(std::int64_t deadline) {
  const std::int64_t bound = config_.timer_jitter_ns;
  if (bound <= 0 || deadline <= now_) return 0;
  const std::int64_t slots = bound < 16 ? bound : 16;
  const auto b = static_cast<std::int64_t>(choose(static_cast<std::size_t>(slots) + 1, "timer_jitter"));
  // bound * b / slots without overflowing.
  const std::int64_t late = (bound / slots) * b + (bound % slots) * b / slots;
  return late > INT64_MAX - deadline ? INT64_MAX - deadline : late;
}

// The next fiber after a scheduling point of the running one (which is a
// candidate itself unless it blocked): what loop() would pick, clock moves
// included, or null when it is the scheduler's turn (the run stops, nothing
// can run, or teardown, which picks by age and wants every scheduling
// point back).
fiber* executor::choose_next() {
  const std::size_t count = candidates_total_;
  // pick()'s path when nothing but the draw is to be done (see below).
  if (step_ < quiet_until_ && count - 1 < prefetch_ahead_from - 1) [[likely]] {  // 0 < count < 16
    ++step_;
    return take_candidate(count > 1 ? draw_below(count) : 0);
  }
  return choose_next_any();
}

void executor::set_quiet_until() {
  // (Called where the run is neither stopped nor tearing down: a stop, a
  // failure and teardown zero quiet_until_ themselves.)
  const bool quiet = uniform_ != nullptr && !config_.record_decisions && !trace_.on();
  // The next step may be quiet while it is within the budget and before the
  // watched one (a watched step already behind leaves it to pick(), as before).
  const std::uint64_t before_watched = watched_step_ > step_ ? watched_step_ - 1 : 0;
  quiet_until_ = quiet ? std::min(config_.max_steps, before_watched) : 0;
}

fiber* executor::choose_next_any() {
  if (tearing_down_) return nullptr;
  while (!stop_) {
    if (fiber* next = pick()) return next;
    if (failed_ || !advance_time()) return nullptr;
  }
  return nullptr;
}

std::size_t executor::choose(std::size_t count, const char* what) {
  return current_ == nullptr ? 0 : choice(count, what);
}

// choose(), and the scheduler's own choices between steps (timer ties).
std::size_t executor::choice(std::size_t count, const char* what) {
  if (count <= 1 || tearing_down_ || stop_) return 0;
  std::size_t index = 0;
  if (uniform_ != nullptr) {
    index = draw_below(count);
  } else {
    // Offered as candidates numbered 0..count-1: replay matches the recorded
    // number, dfs branches on it, like any decision.
    candidates_.clear();
    for (std::size_t i = 0; i < count; ++i) {
      candidates_.push_back({static_cast<std::uint32_t>(i), false, static_cast<std::uint64_t>(i), 0});
    }
    try {
      index = strategy_->pick_choice(candidates_, count, step_);
    } catch (const replay_divergence& e) {
      fail(failure_kind::replay_divergence, std::string("replay diverged: ") + e.what());
      return 0;
    }
  }
  if (config_.record_decisions) decisions_.push_back(static_cast<std::uint32_t>(index));
  if (trace_.on()) {
    note("choice").field("on", what).field("count", static_cast<std::int64_t>(count))
        .field("chosen", static_cast<std::int64_t>(index)).end();
  }
  return index;
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
        .field("cores", static_cast<std::int64_t>(ncores_))
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
  // The configured count: cores free_core() added are the run's own, and a
  // replay of this result adds them again.
  r.cores = config_.cores == 0 ? 1 : config_.cores;
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

}  // namespace lockstep::sim
