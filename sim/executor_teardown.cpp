// Teardown: the end of a run, cancelling and unwinding every fiber still
// alive, youngest first (the rules are in executor.hpp, "Teardown").
#include "sim/executor.hpp"

namespace lockstep::sim {

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
  quiet_until_ = 0;  // choose_next's own path reads neither flag
  for (core_slot& c : cores_) {
    c.active = nullptr;  // a preempted fiber keeps its state but not its core
    c.candidates = 0;
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

}  // namespace lockstep::sim
