// How a run fails and says so: the first failure with where it happened,
// the blocked fibers of a deadlock, and the scheduler's invariants (checked
// by the tests).
#include "sim/executor.hpp"

#include <stdexcept>

namespace lockstep::sim {

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

void executor::step_budget_exhausted() {
  fail(failure_kind::step_budget,
       "step budget of " + std::to_string(config_.max_steps) +
           " exhausted: a livelock (fibers keep running without finishing), or a budget too "
           "small for this program");
}

}  // namespace lockstep::sim
