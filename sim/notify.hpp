// A simulated Notify (tokio semantics): notify_one() hands one notification to
// the oldest waiter or, if none waits, stores a single permit for the next
// notified(); notify_waiters() wakes every current waiter and stores nothing.
//
// Invariants: a notification handed to a waiter belongs to it alone (a fiber
// arriving later cannot take it); a waiter that is cancelled after being
// handed one passes it on (to the next waiter, else as the permit), so a
// notify_one is never lost to a fiber that went away. After block() returns,
// a waiter reads only its own stack record: the notify may be gone by then
// (at teardown, the fiber owning it can unwind first), and its destructor
// tells every registered record so.
#pragma once

#include <optional>

#include "../engine/runtime.hpp"
#include "executor.hpp"

namespace lockstep::sim {

class notify {
  // One wait, on the waiting fiber's stack; registered (an intrusive list,
  // so a wake or a cancelled wait costs O(1) at any number of waiters) while
  // it waits.
  struct waiter {
    fiber* self;
    notify* owner;           // null once the notify is destroyed
    bool handed = false;     // notify_one chose this waiter
    bool broadcast = false;  // notify_waiters woke it
    waiter* prev = nullptr;
    waiter* next = nullptr;
  };

 public:
  explicit notify(executor& ex) : ex_(ex), id_(ex.next_object_id()) {}
  template <class R>
  explicit notify(R& rt) : notify(rt.exec()) {}
  notify(const notify&) = delete;
  notify& operator=(const notify&) = delete;
  ~notify() {
    for (waiter* w = registered_; w != nullptr; w = w->next) w->owner = nullptr;
  }

  /// Wakes the oldest waiter, or stores one permit if nobody waits.
  void notify_one() {
    ex_.schedule_point(id_);
    ex_.access(id_);
    signal();
  }
  /// notify_one without the scheduling point, for primitives that signal a
  /// notify as part of one of their own operations.
  void signal() {
    if (waiters_.empty()) {
      permit_ = true;
      return;
    }
    fiber* f = waiters_.front();
    record_of(*f).handed = true;
    ex_.wake(*f, wake_reason::notified);
  }
  /// Wakes every current waiter; stores nothing for later ones.
  void notify_waiters() {
    ex_.schedule_point(id_);
    ex_.access(id_);
    while (!waiters_.empty()) {
      fiber* f = waiters_.front();
      record_of(*f).broadcast = true;
      ex_.wake(*f, wake_reason::notified);
    }
  }
  /// Await point until notified.
  void notified() { (void)wait(std::nullopt); }
  /// Await point until notified (true) or until `deadline_ns` (false).
  bool notified_until(std::int64_t deadline_ns) { return wait(deadline_ns); }

 private:
  bool wait(std::optional<std::int64_t> deadline) {
    executor& ex = ex_;  // `this` may die while we wait; the executor cannot
    ex.schedule_point(id_);
    ex.access(id_);
    if (permit_) {
      permit_ = false;
      return true;
    }
    waiter me{&ex.current(), this};
    me.next = registered_;
    if (registered_ != nullptr) registered_->prev = &me;
    registered_ = &me;
    me.self->wait_record = &me;
    struct registration {  // also on Boost's forced unwind at teardown
      waiter& w;
      ~registration() {
        if (w.owner != nullptr) w.owner->forget(w);
        w.self->wait_record = nullptr;
      }
    } reg{me};
    const std::uint64_t id = id_;
    try {
      while (!me.handed && !me.broadcast) {
        if (deadline && ex.now() >= *deadline) return false;
        ex.block("notify", id, &waiters_, deadline, true);
      }
      return true;
    } catch (const fiber_cancelled&) {
      if (me.handed && me.owner != nullptr) {
        notify* n = me.owner;
        n->forget(me);
        n->signal();
      }
      throw;
    }
  }

  static waiter& record_of(const fiber& f) {
    // Only a registered fiber ever sits in waiters_, and it points at its record.
    return *static_cast<waiter*>(f.wait_record);
  }
  void forget(waiter& w) {
    (w.prev != nullptr ? w.prev->next : registered_) = w.next;
    if (w.next != nullptr) w.next->prev = w.prev;
    w.prev = w.next = nullptr;
    w.owner = nullptr;
  }

  executor& ex_;
  std::uint64_t id_;
  bool permit_ = false;
  wait_queue waiters_;
  waiter* registered_ = nullptr;  // the waits in progress, newest first
};

}  // namespace lockstep::sim
