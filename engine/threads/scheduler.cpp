#include "engine/threads/scheduler.hpp"

#include "engine/plant.hpp"

#include <cxxabi.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <stdexcept>
#include <utility>

#include "engine/runtime.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/sanitizer.hpp"

namespace lockstep::threads::detail {

constinit thread_local scheduler* tls_scheduler = nullptr;

namespace {

// The Itanium ABI's per-thread exception globals (see fiber.hpp).
struct eh_globals {
  void* caught;
  unsigned int uncaught;
};

const void* stack_bottom(const fiber& f) { return static_cast<const char*>(f.stack.sp) - f.stack.size; }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// About as long as a futex wake round trip (~10 us here): long enough to
// catch a hand-off from a busy peer, too short to matter when idle.
//
// Every fourth round yields the CPU instead of pausing, but only when the
// work waited for may come from a thread that shares this CPU: a thread
// outside the runtime that pushed since the last idle spell (the lane
// router's producer), or a sibling scheduler when the threads are not pinned
// or more of them than CPUs are pinned.
// With such a thread there are more runnable threads than CPUs, and a
// spinning scheduler otherwise takes half of its CPU from the very thread
// whose wake it waits for (yielding took the lane router at 64 keys from
// ~4.3 to ~8 M items/s, results/threads.md). When the work comes only from
// pinned siblings, a yield cannot help them (they have CPUs of their own)
// and on a loaded machine it hands this CPU to some other process for the
// rest of that process's time slice (milliseconds): a bounded channel passing
// items between the two cores lost a slice at almost every hand-off, and
// 160,000 items through four slots did not finish while two busy loops ran
// (a minute; 0.7 s on a quiet machine, 2 s beside them now). So then it only
// pauses, and sleeps.
//
// The spin also ends once it has lasted spin_budget_ns: the first yield that
// loses the CPU for longer ends it (a composed scenario on threads failed its
// 200 ms liveness budget in 11 runs of 15 beside one busy loop while 64
// yields in a row were allowed), and the thread sleeps, from which a wake
// takes it back promptly (a woken sleeper preempts a CPU hog).
constexpr int spin_rounds = 256;
constexpr int yield_every = 4;
constexpr std::int64_t spin_budget_ns = 50'000;

// See idle(): a timer nearer than this is not slept for.
constexpr std::int64_t near_timer_ns = 50'000;

// Timers are checked at least this often while the run queue stays busy, so
// a fiber that keeps yielding cannot starve the sleepers.
constexpr std::uint32_t dispatches_per_timer_check = 64;

}  // namespace

fiber& require_fiber(const char* what) {
  fiber* f = this_fiber();
  if (f == nullptr) {
    throw std::logic_error(std::string("lockstep::threads: ") + what + " must be called on a fiber of the runtime");
  }
  return *f;
}

std::int64_t steady_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool wake(fiber& f, wake_reason why) {
  if (f.waiting.exchange(not_waiting) == not_waiting) return false;
  f.reason = why;
  f.home.enqueue(f);
  return true;
}

void wake_all_listed(wait_list& list) {
  // Claimed in list order; remote ones held back here, then handed to each
  // home in that order. Flushed when full, so no allocation.
  constexpr std::size_t batch_max = 64;
  fiber* held[batch_max];
  std::size_t n = 0;
  scheduler* here = tls_scheduler;
  const auto flush = [&] {
    while (n > 0) {
      // One home at a time: the first fiber's, with every later fiber of the
      // same home, in order; the others move up for the next round.
      scheduler& home = held[0]->home;
      fiber* mine[batch_max];
      std::size_t m = 0;
      std::size_t rest = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (&held[i]->home == &home) {
          mine[m++] = held[i];
        } else {
          held[rest++] = held[i];
        }
      }
      home.enqueue_remote(mine, m);
      n = rest;
    }
  };
  while (waiter* w = list.pop_front()) {
    w->signal = waiter::all;
    fiber& f = *w->self;
    if (f.waiting.exchange(not_waiting) == not_waiting) continue;
    f.reason = wake_reason::notified;
    if (&f.home == here) {
      f.home.enqueue(f);
      continue;
    }
    held[n++] = &f;
    if (n == batch_max) flush();
  }
  flush();
}

void cancel(fiber& f) {
  if (f.cancel_requested.exchange(true)) return;
  // Only an await point is left early; a plain wait keeps waiting. The fiber
  // re-reads cancel_requested after announcing its wait (see suspend), so a
  // cancel that lands before the fiber parks is not lost either.
  std::uint8_t expected = cancellable;
  if (f.waiting.compare_exchange_strong(expected, not_waiting)) {
    f.reason = wake_reason::cancelled;
    f.home.enqueue(f);
  }
}

bool should_unwind() {
  fiber* f = this_fiber();
  return f != nullptr && f->cancel_requested.load() && !f->unwinding && std::uncaught_exceptions() == 0;
}

void unwind() {
  this_fiber()->unwinding = true;
  throw lockstep::fiber_cancelled{};
}

wake_reason suspend(std::unique_lock<lock_t>* lock, std::optional<std::int64_t> deadline, wait_mode mode) {
  scheduler* s = tls_scheduler;
  if (s == nullptr || s->current() == nullptr) {
    throw std::logic_error("lockstep::threads: a wait must be called on a fiber of the runtime");
  }
  return s->suspend(lock, deadline, mode);
}

// --- the scheduler -----------------------------------------------------------

scheduler::scheduler(runtime& rt, std::uint32_t core, std::size_t stack_bytes, std::size_t max_stacks,
                     std::int64_t foreign_wake_gather_ns, std::int64_t timer_resolution_ns)
    : rt_(rt),
      core_(core),
      stacks_(stack_bytes, max_stacks, /*spare=*/true),
      gather_ns_(foreign_wake_gather_ns),
      tick_ns_(timer_resolution_ns) {}

scheduler::~scheduler() { stop_and_join(); }

void scheduler::start(std::optional<int> pin_to, bool cpu_shared) {
  stop_.store(false);
  sweep_.store(false);
  // A planted bug (engine/plant.hpp) is per thread: the core runs with the
  // one of the thread that started it.
  thread_ = std::thread([this, pin_to, cpu_shared, planted = plant::current()] {
    const plant::scope inherited(planted);
    thread_main(pin_to, cpu_shared);
  });
}

void scheduler::stop_and_join() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> hold(sleep_mu_);
    stop_.store(true);
    wakeup_.notify_one();  // under the lock: the scheduler cannot be gone before it returns
  }
  thread_.join();
}

void scheduler::thread_main(std::optional<int> pin_to, bool cpu_shared) {
  if (pin_to) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int err = EINVAL;  // a CPU number the set cannot hold is refused like one the kernel refuses
    if (*pin_to >= 0 && *pin_to < CPU_SETSIZE) {
      CPU_SET(*pin_to, &set);
      err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    if (err != 0) rt_.pinning_refused(core_, *pin_to, err);
    own_cpu_ = err == 0 && !cpu_shared;
  }
  tls_scheduler = this;
  // Ask ASan for this thread's stack bounds, then restore them.
  void* t = nullptr;
  san::start_switch(&t, nullptr, 0);
  san::finish_switch(t, &sched_bottom_, &sched_size_);
  san::start_switch(&t, sched_bottom_, sched_size_);
  san::finish_switch(t, nullptr, nullptr);
  sched_tsan_ = san::tsan_current();
  eh_ = abi::__cxa_get_globals();
  loop();
  // Timers of fibers long finished may remain; they own only references.
  timers_.clear();
  tls_scheduler = nullptr;
}

void scheduler::loop() {
  std::uint32_t since_timers = 0;
  std::uint32_t since_drain = 0;
  bool deferred = false;  // wakes from outside wait in the inbox for the round's end
  while (true) {
    // While they wait, the loop leaves the inbox's line alone: each look at
    // it would cost the producer's next push a miss.
    const bool round_goes_on = deferred && !run_.empty() && ++since_drain < dispatches_per_timer_check;
    if (!round_goes_on && inbox_.load(std::memory_order_acquire) != nullptr) {
      if (gather_ns_ > 0 && foreign_wake_.load(std::memory_order_relaxed)) {
        // Wakes from outside the runtime wait for the end of the round, and
        // then for the gather window (gather()); a round that runs long still
        // takes them every so many dispatches.
        if (run_.empty()) {
          foreign_wake_.store(false, std::memory_order_relaxed);
          gather();
          deferred = false;
          drain_inbox();
        } else if (deferred) {
          deferred = false;
          drain_inbox();
        } else {
          deferred = true;
          since_drain = 0;
        }
      } else {
        drain_inbox();
      }
    }
    if (sweep_.load(std::memory_order_relaxed)) sweep();
    if (report_.load(std::memory_order_relaxed)) write_report();
    if (!timers_.empty() && (run_.empty() || ++since_timers >= dispatches_per_timer_check)) {
      since_timers = 0;
      fire_timers();
    }
    if (!run_.empty()) {
      fiber* f = run_.front();
      run_.pop_front();
      if (touched_ > 0) --touched_;
      if (!run_.empty()) warm_ahead(!f->started);
      resume(*f);
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) {
      if (inbox_.load() == nullptr) return;
      continue;
    }
    idle();
  }
}

void scheduler::idle() {
  const std::int64_t spin_until = steady_now() + spin_budget_ns;
  const bool may_yield = foreign_push_.exchange(false, std::memory_order_relaxed) || !own_cpu_;
  // Pausing only, the spin lasts its whole time budget; with yields, which
  // take a system call each, at most spin_rounds rounds.
  for (int i = 0; !may_yield || i < spin_rounds; ++i) {
    if (inbox_.load(std::memory_order_relaxed) != nullptr || stop_.load(std::memory_order_relaxed) ||
        sweep_.load(std::memory_order_relaxed) || report_.load(std::memory_order_relaxed)) {
      return;
    }
    if (i % yield_every == yield_every - 1) {
      if (may_yield) {
        sched_yield();
        idle_yields_.store(idle_yields_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      } else {
        cpu_relax();
      }
      if (steady_now() > spin_until) break;
    } else {
      cpu_relax();
    }
  }
  // A timer due within the kernel's default timer slack (50 us: a futex
  // sleep that short may overshoot by that much) is waited out awake; the
  // loop fires it when due. Lanes with an idle ttl keep thousands of such
  // timers, each a few us apart.
  if (!timers_.empty() && fires_at(timers_.next_deadline()) - steady_now() < near_timer_ns) return;
  timers_pending_.store(!timers_.empty(), std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(sleep_mu_);
  // seq_cst, as the pusher's push and its load of sleeping_: either it sees
  // this store (and notifies, under sleep_mu_, once this wait holds it no
  // more), or the load below sees its push.
  sleeping_.store(true);
  if (inbox_.load() == nullptr && !stop_.load() && !sweep_.load() && !report_.load()) {
    if (timers_.empty()) {
      wakeup_.wait(lock);
    } else {
      const std::chrono::steady_clock::time_point due{std::chrono::nanoseconds(fires_at(timers_.next_deadline()))};
      wakeup_.wait_until(lock, due);
    }
  }
  sleeping_.store(false, std::memory_order_relaxed);
}

// Called by the loop when it has run out of fibers and its inbox holds
// wakes, some pushed by a thread outside the runtime since the last gather:
// it waits out gather_ns_ before it takes them. Such a thread (the lane
// router's producer) streams items to fibers on this core; a fiber run the
// moment it is woken takes one item and parks again, so every item costs the
// producer a wake (the claim of the fiber and a push on this inbox, on lines
// this core wrote last): 390,000-470,000 per million items at 64 keys. After
// the window each fiber finds a batch, and the producer's sends meanwhile
// find it already woken. The loop also leaves such wakes in the inbox until
// its round ends (or 64 dispatches pass), so each fiber runs once a round;
// taking them at once let a busy core slide back to an item per wake. Window
// off / 30 us at 64 keys: 3.25 / 12.40 M items/s (results/threads.md, with
// the versions tried and what the window costs a request from outside).
// Wakes from sibling cores alone are taken at once: the runtime's own
// hand-offs are latency, not streams. The window yields the CPU, which that
// producer may share, and is shorter than the idle spin (50 us), so it
// spends no more CPU than idling would have.
void scheduler::gather() {
  foreign_gathers_.store(foreign_gathers_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const std::int64_t until = steady_now() + gather_ns_;
  while (!stop_.load(std::memory_order_relaxed) && !sweep_.load(std::memory_order_relaxed)) {
    sched_yield();
    idle_yields_.store(idle_yields_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (steady_now() >= until) return;
  }
}

void scheduler::enqueue(fiber& f) {
  if (tls_scheduler == this) {
    run_.push_back(&f);
    return;
  }
  push_inbox(&f, &f);
}

void scheduler::enqueue_remote(fiber* const* fs, std::size_t n) {
  if (n == 0) return;
  // Linked newest first, as the inbox is: fs[n-1] -> ... -> fs[0] -> (older).
  for (std::size_t i = n - 1; i > 0; --i) fs[i]->inbox_next = fs[i - 1];
  push_inbox(fs[n - 1], fs[0]);
}

// Pushes the chain first -> ... -> last (newest first) onto the inbox.
void scheduler::push_inbox(fiber* first, fiber* last) {
  // The marks go before the push: the loop, which loads the inbox with
  // acquire, then sees them with the fibers. Set after it, they could land
  // once the loop had taken the fibers, and a later wake from a sibling
  // found a stale mark and waited out a gather window (17 runs in 40 of
  // the yield and gather tests under TSan).
  const scheduler* pusher = tls_scheduler;
  if (pusher == nullptr || &pusher->rt_ != &rt_) {
    if (!foreign_push_.load(std::memory_order_relaxed)) foreign_push_.store(true, std::memory_order_relaxed);
    if (!foreign_wake_.load(std::memory_order_relaxed)) foreign_wake_.store(true, std::memory_order_relaxed);
  }
  fiber* head = inbox_.load(std::memory_order_relaxed);
  do {
    last->inbox_next = head;
  } while (!inbox_.compare_exchange_weak(head, first, std::memory_order_seq_cst, std::memory_order_relaxed));
  if (sleeping_.load()) {
    std::lock_guard<std::mutex> hold(sleep_mu_);
    wakeup_.notify_one();
  }
}

void scheduler::cancel_all() {
  // As push_inbox: the flag, then a sleeper is woken under sleep_mu_.
  sweep_.store(true);
  if (sleeping_.load()) {
    std::lock_guard<std::mutex> hold(sleep_mu_);
    wakeup_.notify_one();
  }
}

void scheduler::request_report() {
  {
    std::lock_guard<std::mutex> hold(report_mu_);
    report_text_.reset();
  }
  // As cancel_all: the flag, then a sleeper is woken under sleep_mu_.
  report_.store(true);
  if (sleeping_.load()) {
    std::lock_guard<std::mutex> hold(sleep_mu_);
    wakeup_.notify_one();
  }
}

std::optional<std::string> scheduler::wait_report(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> hold(report_mu_);
  report_written_.wait_until(hold, until, [&] { return report_text_.has_value(); });
  return std::exchange(report_text_, std::nullopt);
}

// On the home thread, which alone reads its fibers' home fields: a line per
// live fiber, with what it waits in.
void scheduler::write_report() {
  if (!report_.exchange(false)) return;
  std::string text;
  for (fiber* f = live_head_; f != nullptr; f = f->live_next) {
    text += "  core " + std::to_string(core_) + ": fiber #" + std::to_string(f->id) + " '" + f->name + "' ";
    if (f->waiting.load() != not_waiting) {
      text += std::string("waits in ") + (f->wait_what != nullptr ? f->wait_what : "a wait");
      if (f->timer_slot != fiber::no_timer) text += " (with a deadline)";
      if (f->cancel_requested.load()) text += " (cancelled: the wait does not end for it)";
    } else {
      text += "is runnable";
    }
    text += "\n";
  }
  if (!run_.empty()) text += "  core " + std::to_string(core_) + ": " + std::to_string(run_.size()) + " runnable\n";
  std::lock_guard<std::mutex> hold(report_mu_);
  report_text_ = std::move(text);
  report_written_.notify_all();
}

void scheduler::sweep() {
  // An exchange, not a store: it reads cancel_all's store, and with it
  // tearing_down_, set before (adopt reads that flag afterwards).
  if (!sweep_.exchange(false)) return;
  for (fiber* f = live_head_; f != nullptr; f = f->live_next) cancel(*f);
}

// A fiber joins its home's list at its first resume, on its home's thread.
// One spawned after the teardown began (it may arrive after this core's
// sweep) is cancelled here, before it runs: it is dropped unrun, born
// cancelled.
void scheduler::adopt(fiber& f) {
  f.live_prev = nullptr;
  f.live_next = live_head_;
  if (live_head_ != nullptr) live_head_->live_prev = &f;
  live_head_ = &f;
  if (rt_.tearing_down()) f.cancel_requested.store(true);
}

void scheduler::drain_inbox() {
  // Taken whole, then reversed: the fibers run in the order they were pushed.
  fiber* newest = inbox_.exchange(nullptr, std::memory_order_acquire);
  fiber* oldest = nullptr;
  while (newest != nullptr) {
    fiber* next = newest->inbox_next;
    newest->inbox_next = oldest;
    oldest = newest;
    newest = next;
  }
  for (fiber* f = oldest; f != nullptr;) {
    fiber* next = f->inbox_next;
    f->inbox_next = nullptr;
    run_.push_back(f);
    f = next;
  }
}

// Timers fire on ticks: at each tick, every timer due since the last, in
// deadline order (the heap keeps exact deadlines, so two waits in one tick
// still end in the order they were due). A wait ends at most a tick late, as
// under tokio's 1 ms wheel, so a 1 ms idle ttl means what it means there.
// Why not exact: with a lane's idle ttl at 1 ms and 4,096 keys, a pass over
// the keys takes about a ttl, and waits ended on the dot reaped lanes that
// the next pass reopened (results/threads.md). fire_timers() applies the
// same rule from the other side: a timer is due once the last tick passed
// its deadline.
std::int64_t scheduler::fires_at(std::int64_t deadline) const {
  if (tick_ns_ <= 1) return deadline;
  if (deadline > std::numeric_limits<std::int64_t>::max() - tick_ns_) return std::numeric_limits<std::int64_t>::max();
  std::int64_t tick = deadline / tick_ns_ * tick_ns_;  // rounds toward zero: up when negative
  if (tick < deadline) tick += tick_ns_;
  return tick;
}

void scheduler::fire_timers() {
  std::int64_t now = steady_now();
  if (tick_ns_ > 1) now -= now % tick_ns_;  // the last tick: steady_clock counts up from 0
  while (!timers_.empty() && timers_.next_deadline() <= now) {
    // Its wait is still pending (an entry leaves the heap when its wait
    // ends), unless a waker on another thread claimed it a moment ago.
    fiber& f = timers_.pop();
    if (f.waiting.exchange(not_waiting) != not_waiting) {
      f.reason = wake_reason::timed_out;
      run_.push_back(&f);
    }
  }
}

// --- one fiber's life ----------------------------------------------------------

// Gives `f` a context on a stack of the pool. When the pool has none (the
// kernel refused a mapping, or max_stacks_per_core), the run fails and `f` is
// dropped unrun: born cancelled, so run_fiber destroys its captures without
// running it, on the pool's spare stack, since a capture's destructor may
// block. While the spare is taken, `f` waits in starved_ (false) until it
// comes back (finish).
bool scheduler::create(fiber& f) {
  if (f.tsan_fiber == nullptr) f.tsan_fiber = san::tsan_create();
  // The stack is taken before any sanitizer switch: a refusal throws here,
  // on the scheduler's own context (an exception unwinding frames entered
  // under the new fiber's TSan context once broke the thread's shadow stack).
  if (!f.no_stack) {
    try {
      f.stack = stacks_.allocate();
    } catch (const std::exception& e) {
      rt_.record_start_failure(f.name, e.what());
      f.no_stack = true;
      f.cancel_requested.store(true);
    }
  }
  if (f.no_stack) {
    if (!stacks_.spare_free()) {
      starved_.push_back(&f);
      return false;
    }
    f.stack = stacks_.take_spare();
  }
  make_context(f);
  return true;
}

void scheduler::make_context(fiber& f) {
  // Boost's constructor makes an excursion onto the new stack and back: tell
  // ASan it is a switch to "self" so no fake frame is taken from this stack.
  void* t = nullptr;
  san::start_switch(&t, sched_bottom_, sched_size_);
  san::tsan_switch(f.tsan_fiber);
  f.cont = boost::context::fiber(std::allocator_arg, pool_allocator{&stacks_, f.stack},
                                 [this, &f](boost::context::fiber&& caller) {
                                   // This frame was set up mid-switch, so it
                                   // is on the real stack, never the fake one.
                                   san::finish_switch(nullptr, &sched_bottom_, &sched_size_);
                                   f.started = true;
                                   f.caller = std::move(caller);
                                   run_fiber(f);
                                   // Only here, after run_fiber's (possibly
                                   // fake) frame is gone: this frees the fake
                                   // stack. The dying fiber does not switch
                                   // TSan back; resume() does, after it.
                                   f.done = true;
                                   san::start_switch(nullptr, sched_bottom_, sched_size_);
                                   return std::move(f.caller);
                                 });
  san::tsan_switch(sched_tsan_);
  san::finish_switch(t, nullptr, nullptr);
}

// Never throws: Boost's fiber entry is noexcept. (Boost's forced unwind
// never starts here: a suspended fiber is never destroyed, only cancelled.)
void scheduler::run_fiber(fiber& f) {
  try {
    unique_function body = std::move(f.body);
    if (f.cancel_requested.load()) {
      // Cancelled before it ever ran: dropped unrun (its captures are
      // destroyed here, on its own stack, where they may block).
      f.unwinding = true;
      throw lockstep::fiber_cancelled{};
    }
    body();
  } catch (const lockstep::fiber_cancelled&) {
    // The normal end of a cancelled fiber: every destructor has run.
  } catch (const lockstep::task_panic&) {
    rt_.record_task_panic();  // ends only this fiber, as a panic ends only its task under tokio
  } catch (...) {
    rt_.record_escape(f.name, std::current_exception());
  }
}

void scheduler::resume(fiber& f) {
  if (!f.started && !f.cont) {
    if (!f.no_stack) adopt(f);  // a starved fiber was adopted at its first turn
    if (!create(f)) return;
  }
  current_ = &f;
  resumes_.store(resumes_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  running_id_.store(f.id, std::memory_order_relaxed);
  auto* g = static_cast<eh_globals*>(eh_);
  const eh_globals mine = *g;
  g->caught = f.eh_caught;
  g->uncaught = f.eh_uncaught;
  san::start_switch(&sched_fake_, stack_bottom(f), f.stack.size);
  san::tsan_switch(f.tsan_fiber);
  f.cont = std::move(f.cont).resume();
  if (f.done) san::tsan_switch(sched_tsan_);
  san::finish_switch(sched_fake_, nullptr, nullptr);
  f.eh_caught = g->caught;
  f.eh_uncaught = g->uncaught;
  *g = mine;
  current_ = nullptr;
  running_id_.store(0, std::memory_order_relaxed);
  if (f.done) finish(f);
}

void scheduler::finish(fiber& f) {
  // Only a fiber dropped for want of a stack ran on the spare, and Boost gave
  // the spare back as it ended: the next such fiber is dropped on it.
  if (f.no_stack && !starved_.empty() && stacks_.spare_free()) {
    run_.push_back(starved_.front());
    starved_.pop_front();
  }
  san::tsan_destroy(f.tsan_fiber);
  f.tsan_fiber = nullptr;
  (f.live_prev != nullptr ? f.live_prev->live_next : live_head_) = f.live_next;
  if (f.live_next != nullptr) f.live_next->live_prev = f.live_prev;
  f.live_prev = f.live_next = nullptr;
  {
    std::lock_guard<lock_t> hold(f.mu);
    f.finished.store(true);
    wake_all(f.joiners);
  }
  rt_.fiber_ended(f);  // may drop the last reference: `f` is not touched after
}

const char* scheduler::stack_top_of(const fiber& f, std::size_t new_ones_before) const {
  // A new fiber takes its stack from the pool when it starts: the new ones
  // ahead of it in the run queue take theirs first.
  return f.started ? static_cast<const char*>(f.stack.sp) : stacks_.next_top(new_ones_before);
}

// Reads a byte of stacks that may hold a finished fiber's leftover poison
// (the top of a pooled stack): a hint, so not checked by ASan.
__attribute__((no_sanitize("address"))) void scheduler::warm_ahead(bool after_a_new_one) {
  // With tens of thousands of parked fibers (64,000 single-flight waiters)
  // neither a fiber's record nor its stack is cached when its turn comes, nor
  // is its stack's page in the TLB, and its resume waits on each line in
  // turn: jump_fcontext on the saved registers, then every frame it returns
  // through. So the next fibers' lines are asked for while the current one
  // runs. A prefetch that misses the TLB is dropped on these machines (with
  // prefetches alone the answer phase stayed at ~750 ns a waiter; with the
  // page read first, ~510), so the pages are read first, 16 at once so their
  // walks overlap.
  constexpr std::size_t batch = 16;
  const std::size_t new_before_next = after_a_new_one ? 1 : 0;
  if (touched_ < 2) {
    const std::size_t end = std::min(run_.size(), touched_ + batch);
    for (std::size_t i = 0, new_ones = new_before_next; i < end; ++i) {
      const fiber& g = *run_[i];
      if (i >= touched_) {
        if (const char* top = stack_top_of(g, new_ones)) (void)*reinterpret_cast<const volatile char*>(top - 64);
      }
      if (!g.started) ++new_ones;
    }
    touched_ = end;
  }
  const fiber& next = *run_.front();
  const char* record = reinterpret_cast<const char*>(&next);
  for (std::size_t at = 0; at < sizeof(fiber); at += 64) __builtin_prefetch(record + at, 1);
  const char* top = stack_top_of(next, new_before_next);
  if (top == nullptr) return;
  // A started fiber's frames lie between where it parked and the top (its
  // saved registers a little below); a new one's first frames at the top.
  constexpr std::ptrdiff_t below_park = 256, most = 2048, first_frames = 1024;
  const char* from = next.started ? static_cast<const char*>(next.parked_sp) - below_park : top - first_frames;
  if (top - from > most) from = top - most;
  for (const char* at = from; at < top; at += 64) __builtin_prefetch(at, 1);
}

void scheduler::switch_to_scheduler(fiber& f) {
  f.parked_sp = __builtin_frame_address(0);
  struct back_guard {  // also runs if Boost's forced unwind leaves resume()
    scheduler* s;
    fiber* f;
    ~back_guard() { san::finish_switch(f->asan_fake, &s->sched_bottom_, &s->sched_size_); }
  } guard{this, &f};
  san::start_switch(&f.asan_fake, sched_bottom_, sched_size_);
  san::tsan_switch(sched_tsan_);
  f.caller = std::move(f.caller).resume();
}

wake_reason scheduler::suspend(std::unique_lock<lock_t>* lock, std::optional<std::int64_t> deadline,
                               wait_mode mode) {
  fiber& f = *current_;
  f.reason = wake_reason::none;
  f.waiting.store(mode);
  // Pairs with cancel(): it sets the flag, then tries to claim a cancellable
  // wait. Both are seq_cst, so either it saw this wait or we see its flag.
  if (mode == cancellable && should_unwind()) {
    if (f.waiting.exchange(not_waiting) != not_waiting) return wake_reason::cancelled;
    // Someone claimed the wait first and has enqueued us: park to take that
    // resume, or it would come at a later, wrong moment.
  }
  if (deadline) timers_.push(f, *deadline);
  if (lock != nullptr) lock->unlock();
  switch_to_scheduler(f);
  timers_.remove(f);  // woken before its deadline: the entry goes now
  if (lock != nullptr) lock->lock();
  return f.reason;
}

void scheduler::yield() {
  fiber& f = *current_;
  run_.push_back(&f);
  switch_to_scheduler(f);
}

}  // namespace lockstep::threads::detail
