// A simulated latest-value channel (tokio::sync::watch): the watch object is
// the sender. send_replace always stores, even with no subscriber, so a fiber
// that subscribes late still reads the value; changed() reports false once
// the sender is gone and nothing newer was sent.
#pragma once

#include <memory>
#include <utility>

#include "executor.hpp"

namespace lockstep::sim {

template <class T>
class watch {
  struct state {
    state(executor& e, T v) : ex(e), id(e.next_object_id()), value(std::move(v)) {}
    executor& ex;
    std::uint64_t id;
    T value;
    std::uint64_t version = 0;
    bool sender_alive = true;
    wait_queue waiters;
  };

 public:
  class receiver {
   public:
    receiver(std::shared_ptr<state> s, std::uint64_t seen) : s_(std::move(s)), seen_(seen) {}
    /// The current value, marked as seen.
    T borrow_and_update() {
      s_->ex.schedule_point(s_->id);
      s_->ex.access(s_->id);
      seen_ = s_->version;
      return s_->value;
    }
    /// Await point until a value newer than the last seen (true, and it is
    /// marked seen), or the sender is gone with nothing newer (false).
    bool changed() {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      while (true) {
        if (s.version != seen_) {
          seen_ = s.version;  // as tokio: the newest value now counts as seen
          return true;
        }
        if (!s.sender_alive) return false;
        s.ex.block("watch.changed", s.id, &s.waiters, std::nullopt, true);
      }
    }

   private:
    std::shared_ptr<state> s_;
    std::uint64_t seen_;
  };

  watch(executor& ex, T initial) : s_(std::make_shared<state>(ex, std::move(initial))) {}
  template <class R>
  watch(R& rt, T initial) : watch(rt.exec(), std::move(initial)) {}
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;
  ~watch() {
    s_->ex.access(s_->id);
    s_->sender_alive = false;
    s_->ex.wake_all(s_->waiters);
  }

  /// Stores `v` whether or not anyone is subscribed, and wakes every waiter.
  void send_replace(T v) {
    s_->ex.schedule_point(s_->id);
    s_->ex.access(s_->id);
    s_->value = std::move(v);
    ++s_->version;
    s_->ex.wake_all(s_->waiters);
  }
  /// A receiver that has seen the current value already.
  receiver subscribe() {
    s_->ex.schedule_point(s_->id);
    s_->ex.access(s_->id);
    return receiver(s_, s_->version);
  }
  [[nodiscard]] T borrow() const { return s_->value; }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace lockstep::sim
