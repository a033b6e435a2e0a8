// A simulated mutex: FIFO hand-off, so a waiter is never overtaken and lock
// order is a pure function of the schedule. An unlock by a fiber that does
// not hold it fails the run (executor::misuse), naming both fibers. lock() suspends but is not an
// await point (it mirrors std::sync::Mutex, which destructors may take).
#pragma once

#include <stdexcept>
#include <string>

#include "executor.hpp"

namespace lockstep::sim {

class mutex {
 public:
  explicit mutex(executor& ex) : ex_(ex), id_(ex.next_object_id()) {}
  template <class R>
  explicit mutex(R& rt) : mutex(rt.exec()) {}
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    ex_.schedule_point(id_);
    ex_.access(id_);
    const fiber_id me = ex_.current().id;
    if (owner_ == me) throw std::logic_error("mutex locked twice by the same fiber (self-deadlock)");
    if (owner_ == no_fiber) {
      owner_ = me;
      return;
    }
    while (owner_ != me) ex_.block("mutex.lock", id_, &waiters_, std::nullopt, false);
  }

  bool try_lock() {
    ex_.schedule_point(id_);
    ex_.access(id_);
    if (owner_ != no_fiber) return false;
    owner_ = ex_.current().id;
    return true;
  }

  void unlock() {
    ex_.schedule_point(id_);
    ex_.access(id_);
    if (owner_ != ex_.current().id) [[unlikely]] {
      misused();
      return;
    }
    if (waiters_.empty()) {
      owner_ = no_fiber;
      return;
    }
    fiber* next = waiters_.front();
    owner_ = next->id;  // hand-off: the woken fiber owns it before it runs
    ex_.wake(*next, wake_reason::notified);
  }

  [[nodiscard]] bool locked() const { return owner_ != no_fiber; }

 private:
  // An unlock by a fiber that does not hold the mutex fails the run (the
  // state is left as it was); out of line, off the unlock's path.
  [[gnu::noinline]] void misused() {
    const fiber* holder = owner_ == no_fiber ? nullptr : ex_.find(owner_);
    ex_.misuse("mutex.unlock by " + ex_.current_label() + " of mutex (object " + std::to_string(id_) + "), which " +
               (owner_ == no_fiber ? std::string("is not locked")
                                   : "#" + std::to_string(owner_) + (holder ? " '" + std::string(holder->name_text()) + "'" : std::string()) +
                                         " holds"));
  }

  executor& ex_;
  std::uint64_t id_;
  fiber_id owner_ = no_fiber;
  wait_queue waiters_;
};

}  // namespace lockstep::sim
