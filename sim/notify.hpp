// A simulated Notify (tokio semantics): notify_one() wakes one waiter or, if
// none waits, stores a single permit for the next notified(); notify_waiters()
// wakes every current waiter and stores nothing.
#pragma once

#include "sim/executor.hpp"

namespace lockstep::sim {

class notify {
 public:
  explicit notify(executor& ex) : ex_(ex), id_(ex.next_object_id()) {}
  template <class R>
  explicit notify(R& rt) : notify(rt.exec()) {}
  notify(const notify&) = delete;
  notify& operator=(const notify&) = delete;

  void notify_one() {
    ex_.schedule_point();
    signal();
  }
  /// notify_one without the scheduling point, for primitives that signal a
  /// notify as part of one of their own operations.
  void signal() {
    permit_ = true;
    ex_.wake_one(waiters_);
  }
  void notify_waiters() {
    ex_.schedule_point();
    ++epoch_;
    ex_.wake_all(waiters_);
  }
  /// Await point until notified.
  void notified() { (void)wait(std::nullopt); }
  /// Await point until notified (true) or until `deadline_ns` (false).
  bool notified_until(std::int64_t deadline_ns) { return wait(deadline_ns); }

 private:
  bool wait(std::optional<std::int64_t> deadline) {
    ex_.schedule_point();
    // A waiter that was handed the permit but leaves by cancellation passes
    // it on, so a notify_one is never lost to a fiber that went away.
    struct pass_on {
      notify* n;
      bool armed = true;
      ~pass_on() {
        if (armed && n->permit_) n->ex_.wake_one(n->waiters_);
      }
    } guard{this};
    const std::uint64_t epoch = epoch_;
    while (!permit_ && epoch_ == epoch) {
      if (deadline && ex_.now() >= *deadline) {
        guard.armed = false;
        return false;
      }
      ex_.block("notify", id_, &waiters_, deadline, true);
    }
    guard.armed = false;
    if (epoch_ == epoch) permit_ = false;  // consumed a notify_one
    return true;
  }

  executor& ex_;
  std::uint64_t id_;
  bool permit_ = false;
  std::uint64_t epoch_ = 0;
  wait_queue waiters_;
};

}  // namespace lockstep::sim
