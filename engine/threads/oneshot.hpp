// R::oneshot<T> on the threads backend: one value, once; the receiver
// learns when the sender was dropped without sending.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

template <class T>
class oneshot {
  struct state {
    detail::lock_t mu;
    std::optional<T> value;
    bool sender_alive = true;
    bool receiver_alive = true;
    detail::wait_list waiters;
  };

 public:
  class sender {
   public:
    explicit sender(std::shared_ptr<state> s) : s_(std::move(s)) {}
    sender(sender&&) noexcept = default;
    /// Drops the sender assigned over (its receiver sees nullopt).
    sender& operator=(sender&& o) noexcept {
      if (this != &o) {
        release();
        s_ = std::move(o.s_);
      }
      return *this;
    }
    ~sender() { release(); }
    /// False (and `v` dropped) when the receiver is gone or a value was sent.
    bool send(T v) {
      std::lock_guard<detail::lock_t> hold(s_->mu);
      if (!s_->receiver_alive || s_->value.has_value()) return false;
      s_->value = std::move(v);
      detail::wake_all(s_->waiters);
      return true;
    }

   private:
    void release() {
      if (!s_) return;
      {
        std::lock_guard<detail::lock_t> hold(s_->mu);
        s_->sender_alive = false;
        detail::wake_all(s_->waiters);
      }
      s_.reset();
    }
    std::shared_ptr<state> s_;
  };

  class receiver {
   public:
    explicit receiver(std::shared_ptr<state> s) : s_(std::move(s)) {}
    receiver(receiver&&) noexcept = default;
    /// Drops the receiver assigned over (its sender's send fails).
    receiver& operator=(receiver&& o) noexcept {
      if (this != &o) {
        release();
        s_ = std::move(o.s_);
      }
      return *this;
    }
    ~receiver() { release(); }
    /// Await point; nullopt when the sender was dropped without sending.
    std::optional<T> recv() {
      detail::require_fiber("oneshot::receiver::recv");
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        if (s.value.has_value()) {
          std::optional<T> v = std::move(s.value);
          s.value.reset();
          return v;
        }
        if (!s.sender_alive) return std::nullopt;
        detail::waiter& w = detail::fresh_waiter("oneshot::receiver::recv");
        detail::wait_on(hold, s.waiters, w, std::nullopt, detail::cancellable);
        if (detail::should_unwind()) detail::unwind();
      }
    }

   private:
    void release() {
      if (!s_) return;
      std::optional<T> dropped;  // destroyed after the lock is released
      {
        std::lock_guard<detail::lock_t> hold(s_->mu);
        s_->receiver_alive = false;
        dropped = std::move(s_->value);
      }
      s_.reset();
    }
    std::shared_ptr<state> s_;
  };

  template <class R>
  static std::pair<sender, receiver> make(R& /*rt*/) {
    auto s = std::make_shared<state>();
    return {sender(s), receiver(s)};
  }
};

}  // namespace lockstep::threads
