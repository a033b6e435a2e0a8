// R::watch<T> on the threads backend (tokio::sync::watch): the watch object
// is the sender. send_replace always stores, even with no subscriber, so a
// late subscriber still reads the value; changed() reports false once the
// sender is gone and nothing newer was sent.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

template <class T>
class watch {
  struct state {
    explicit state(T v) : value(std::move(v)) {}
    detail::lock_t mu;
    T value;
    std::uint64_t version = 0;
    bool sender_alive = true;
    detail::wait_list waiters;
  };

 public:
  class receiver {
   public:
    receiver(std::shared_ptr<state> s, std::uint64_t seen) : s_(std::move(s)), seen_(seen) {}
    /// The current value, marked as seen.
    T borrow_and_update() {
      std::lock_guard<detail::lock_t> hold(s_->mu);
      seen_ = s_->version;
      return s_->value;
    }
    /// Await point until a value newer than the last seen (true, now seen),
    /// or the sender is gone with nothing newer (false).
    bool changed() {
      detail::require_fiber("watch::receiver::changed");
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        if (s.version != seen_) {
          seen_ = s.version;
          return true;
        }
        if (!s.sender_alive) return false;
        detail::waiter w;
        detail::wait_on(hold, s.waiters, w, std::nullopt, detail::cancellable);
        if (detail::should_unwind()) detail::unwind();
      }
    }

   private:
    std::shared_ptr<state> s_;
    std::uint64_t seen_;
  };

  watch(runtime& /*rt*/, T initial) : s_(std::make_shared<state>(std::move(initial))) {}
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;
  ~watch() {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    s_->sender_alive = false;
    detail::wake_all(s_->waiters);
  }

  /// Stores `v` whether or not anyone is subscribed, and wakes every waiter.
  void send_replace(T v) {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    using std::swap;
    swap(s_->value, v);  // the old value is destroyed after the lock is released
    ++s_->version;
    detail::wake_all(s_->waiters);
  }
  /// A receiver that has seen the current value already.
  receiver subscribe() {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    return receiver(s_, s_->version);
  }
  [[nodiscard]] T borrow() const {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    return s_->value;
  }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace lockstep::threads
