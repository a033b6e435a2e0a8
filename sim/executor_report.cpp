// How a run fails and says so: the first failure with where it happened,
// the blocked fibers of a deadlock, and the scheduler's invariants (checked
// by the tests).
#include "sim/executor.hpp"

#include <stdexcept>

namespace lockstep::sim {

void executor::fail(failure_kind kind, std::string message, code_site at) {
  if (failed_) return;  // the first failure is the one worth reporting
  // Where it happened goes at the end of the first line: a report's further
  // lines (each fiber's last operations) follow it.
  const std::size_t eol = message.find('\n');
  message.insert(eol == std::string::npos ? message.size() : eol, " [" + where() + "]");
  failed_ = failure{kind, std::move(message), step_, at};
  stop_ = true;
  quiet_until_ = 0;  // choose_next's own path reads neither flag
  if (trace_.on()) trace_.begin("fail").field("t", now_).field("kind", to_string(kind)).end();
}

void executor::misuse(std::string message) { fail_here(failure_kind::abort, "misuse: " + std::move(message)); }

void executor::fail_here(failure_kind kind, std::string message) {
  fail(kind, std::move(message));
  if (current_ == nullptr || destroying_) return;
  // A scheduling point that always switches: the run has stopped, so the
  // scheduler (or teardown) takes over and runs this fiber on only to unwind.
  fiber& f = *current_;
  f.state = fiber_state::preempted;
  f.ready_seq = ++seq_;
  ++candidates_total_;
  switch_away(f);
}

std::string site(const code_site& where) {
  if (where.file == nullptr) return "an unknown line";
  return std::string(where.file) + ":" + std::to_string(where.line);
}

std::string executor::current_label() const {
  if (current_ == nullptr) return "the scheduler";
  return "#" + std::to_string(current_->id) + " '" + current_->name_text() + "'";
}

std::string executor::where() const {
  return "seed " + std::to_string(config_.seed) + ", strategy " + std::string(strategy_->name()) +
         ", step " + std::to_string(step_) + ", t=" + std::to_string(now_) + " ns";
}

std::string executor::describe_blocked() const {
  std::string s = "Blocked fibers:";
  for (const auto& owned : fibers_) {
    if (!owned || owned->state != fiber_state::blocked) continue;
    s += " #" + std::to_string(owned->id) + " '" + owned->name_text() + "' waits";
    if (const fiber::operation* op = owned->last_operation()) s += " at " + site(op->where());
    s += " on ";
    // A join's object is a fiber's number, not an object's: said as such, so
    // that two different things are never both "object 1".
    if (std::string_view(owned->waiting_on) == "join") {
      s += "the end of fiber #" + std::to_string(owned->waiting_object);
    } else if (const std::string label = object_label(owned->waiting_object); !label.empty()) {
      s += std::string(owned->waiting_on) + " of " + label;
    } else {
      s += std::string(owned->waiting_on) + " (object " + std::to_string(owned->waiting_object) + ")";
    }
    s += ";";
  }
  // What each did last, after the one-line summary above.
  for (const auto& owned : fibers_) {
    if (!owned || owned->state != fiber_state::blocked || owned->op_count == 0) continue;
    s += "\n  #" + std::to_string(owned->id) + " '" + owned->name_text() + "' last did:" + history_of(owned->id);
  }
  return s;
}

namespace {
std::string listed(const std::array<fiber::operation, fiber::history_length>& history, std::uint32_t count) {
  std::string s;
  const std::uint32_t n = count < fiber::history_length ? count : fiber::history_length;
  for (std::uint32_t i = count - n; i != count; ++i) {
    const fiber::operation& op = history[i % fiber::history_length];
    s += "\n    " + std::string(op.name) + " at " + site(op.where());
  }
  return s;
}
}  // namespace

void executor::label_object(std::uint64_t id, const char* type, const char* name, code_site created) {
  // Ids come in order, so this appends (resize() was an out-of-line call
  // per object, and the name a string built even when there is none).
  while (labels_.size() <= id) labels_.emplace_back();
  labelled_object& o = labels_[id];
  o.run = labels_run_;
  o.type = type;
  if (name != nullptr) {
    o.name.assign(name);
  } else {
    o.name.clear();
  }
  o.created = created;
}

std::string executor::object_label(std::uint64_t id) const {
  if (id >= labels_.size() || labels_[id].run != labels_run_ || labels_[id].type == nullptr) return "";
  const labelled_object& o = labels_[id];
  return std::string(o.type) + (o.name.empty() ? "" : " '" + o.name + "'") + " created at " + site(o.created);
}

std::string executor::history_of(fiber_id id) const {
  if (const fiber* f = find(id)) return listed(f->history, f->op_count);
  if (id < ended_.size()) return listed(ended_[id].history, ended_[id].op_count);
  return "";
}

std::string executor::label_of(fiber_id id) const {
  const fiber* f = find(id);
  if (f != nullptr) return "#" + std::to_string(id) + " '" + f->name_text() + "'";
  if (id < ended_.size() && !ended_[id].name.empty()) return "#" + std::to_string(id) + " '" + ended_[id].name + "' (ended)";
  return "#" + std::to_string(id) + " (ended)";
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
    if (c.candidates != (c.active != nullptr ? 1 : c.ready.size())) {
      throw std::logic_error("a core's candidate count is not its active fiber or its ready ones");
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
