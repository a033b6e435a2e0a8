#include "sim/race_detector.hpp"

#include "sim/executor.hpp"

#include <string_view>

namespace lockstep::sim {

shadow_cell::shadow_cell(executor& ex, code_site created, std::string name)
    : ex_(&ex), id_(ex.next_object_id()), created_(created), name_(std::move(name)) {
  happens_before& hb = ex.start_race_detection();
  write_ = access{hb.now(ex.current().id), created};  // construction is its first write
}

void shadow_cell::enter(const char* op, code_site where) {
  if (first_use_.file == nullptr) first_use_ = where;
  ex_->current().record_operation(op, where);
  ex_->schedule_point(id_);
  ex_->touch(id_);
}

void shadow_cell::read(code_site where) {
  enter("var.read", where);
  if (ex_->tearing_down()) return;  // a run's unwinding is not judged
  happens_before& hb = *ex_->clocks();
  const fiber_id me = ex_->current().id;
  if (!hb.ordered_before(write_.when, me)) return report(write_, true, false, where);
  // Reads this one follows are covered by it; concurrent ones stay.
  std::erase_if(reads_, [&](const access& r) { return hb.ordered_before(r.when, me); });
  reads_.push_back(access{hb.now(me), where});
}

void shadow_cell::write(code_site where) {
  enter("var.write", where);
  if (ex_->tearing_down()) return;
  happens_before& hb = *ex_->clocks();
  const fiber_id me = ex_->current().id;
  if (!hb.ordered_before(write_.when, me)) return report(write_, true, true, where);
  for (const access& r : reads_) {
    if (!hb.ordered_before(r.when, me)) return report(r, false, true, where);
  }
  reads_.clear();
  write_ = access{hb.now(me), where};
}

namespace {

// A line in the standard library's headers (libstdc++'s and libc++'s both
// live under .../include/c++/): where a container constructs its elements.
bool in_standard_library(const code_site& s) {
  return s.file != nullptr && std::string_view(s.file).find("/include/c++/") != std::string_view::npos;
}

}  // namespace

std::string shadow_cell::label() const {
  const std::string named = "var " + (name_.empty() ? std::string() : "'" + name_ + "' ");
  if (!in_standard_library(created_)) return named + "created at " + site(created_);
  // A container's element: its creation line is the library's, so the
  // program's first use of it says which one it is.
  const std::string_view file(created_.file);
  const std::string header(file.substr(file.rfind('/') + 1));
  return named + "created by the standard library (" + header + ":" + std::to_string(created_.line) +
         ": a container's element?)" +
         (first_use_.file != nullptr ? ", first used at " + site(first_use_) : std::string());
}

void shadow_cell::report(const access& earlier, bool earlier_wrote, bool now_writes, code_site where) {
  const fiber_id me = ex_->current().id;
  const fiber_id other = earlier.when.fiber;
  std::string message = "data race on " + label() + ": " + (earlier_wrote ? "write" : "read") + " by " +
                        ex_->label_of(other) + " at " + site(earlier.where) + ", then " +
                        (now_writes ? "write" : "read") + " by " + ex_->label_of(me) + " at " + site(where) +
                        ", with nothing ordering them (no lock, atomic release/acquire, join or other "
                        "synchronisation between the two)";
  const std::string before = ex_->history_of(other);
  if (!before.empty()) message += "\n  " + ex_->label_of(other) + " last did:" + before;
  message += "\n  " + ex_->label_of(me) + " last did:" + ex_->history_of(me);
  ex_->fail_here(failure_kind::data_race, std::move(message));
}

}  // namespace lockstep::sim
