// The executor's waits: wait queues, blocking and waking fibers (by a
// notify, a timer or a cancellation), joins. The scheduler that picks among
// the woken is executor.cpp; the rules are in executor.hpp.
#include "sim/executor.hpp"

namespace lockstep::sim {

namespace {

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

// --- wait_queue -------------------------------------------------------------

void wait_queue::detach_all() {
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

// --- cores and readiness ----------------------------------------------------

wake_reason executor::block(const char* what, std::uint64_t object, wait_queue* queue,
                            std::optional<std::int64_t> deadline, bool cancellable, bool cancel_throws) {
  fiber& f = *current_;
  if (cancellable && cancel_throws) check_cancel();
  if (deadline && *deadline <= now_ && queue == nullptr) {
    // Already due: a timer that fires "now" still lets others run first.
    yield_now();
    return wake_reason::timed_out;
  }
  if (deadline) {
    access(clock_key);  // a timed wait's end depends on the clock
    if (config_.timer_jitter_ns > 0) *deadline += jitter(*deadline);
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
  // The step that resumes it depends on what woke it: the object (its
  // waker touched it), the clock, or a cancellation of this fiber. Touched,
  // not accessed: what a wake-up orders for the race detector is the waker's
  // to say (wake's `orders`), so that sim_std's waits stay exact.
  if (object != 0) touch(object);
  if (r == wake_reason::timed_out) touch(clock_key);
  if (r == wake_reason::cancelled) touch(fiber_key(f.id));
  // An await point leaves by unwinding as soon as cancellation is asked for.
  // A non-cancellable wait (mutex::lock) never throws, not even in teardown:
  // destructors take mutexes on ordinary scope exits, where a throw would
  // terminate the process.
  if (cancellable && cancel_throws) check_cancel();
  return r;
}

void executor::wake(fiber& f, wake_reason reason, bool orders) {
  if (f.state != fiber_state::blocked) return;
  if (clocks_ != nullptr && orders && reason == wake_reason::notified && current_ != nullptr && !tearing_down_) {
    clocks_->transfer(current_->id, f.id);
  }
  // Whoever wakes it touched what it waits on, and its next step follows
  // this one. (A timer is nobody's step: the clock orders those.)
  if (reason != wake_reason::timed_out) {
    if (f.waiting_object != 0) touch(f.waiting_object);
    access(enable_key(f.id));
  }
  if (f.queue != nullptr) f.queue->unlink(f);
  ++f.wait_generation;
  f.reason = reason;
  if (trace_.on()) trace_wake(f, reason);
  make_ready(f);
}

bool executor::wake_one(wait_queue& q, bool orders) {
  if (q.empty()) return false;
  wake(*q.front(), wake_reason::notified, orders);
  return true;
}

bool executor::wake_chosen(wait_queue& q, const char* what, bool orders) {
  if (q.empty()) return false;
  fiber* f = q.front();
  if (f->q_next != nullptr) {  // two or more: which one is a decision
    for (std::size_t i = choose(q.size(), what); i > 0; --i) f = f->q_next;
  }
  wake(*f, wake_reason::notified, orders);
  return true;
}

void executor::wake_each(wait_queue& q, bool orders) {
  while (!q.empty()) wake(*q.front(), wake_reason::notified, orders);
}

void executor::cancel(fiber_id id) {
  fiber* f = find(id);
  access(fiber_key(id));
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
  access(fiber_key(id));  // its end (or, when it has ended, the run so far) orders this step
  while (fiber* f = find(id)) {
    block("join", id, &f->joiners, std::nullopt, true);
    access(fiber_key(id));
  }
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

}  // namespace lockstep::sim
