// A simulated oneshot channel: one value, once; the receiver learns when the
// sender was dropped without sending.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "executor.hpp"

namespace lockstep::sim {

template <class T>
class oneshot {
  struct state {
    explicit state(executor& e) : ex(e), id(e.next_object_id()) {}
    executor& ex;
    std::uint64_t id;
    std::optional<T> value;
    bool sender_alive = true;
    bool receiver_alive = true;
    wait_queue waiters;
  };

 public:
  class sender {
   public:
    explicit sender(std::shared_ptr<state> s) : s_(std::move(s)) {}
    sender(sender&&) noexcept = default;
    /// Drops the sender assigned over (its receiver sees nullopt), as tokio does.
    sender& operator=(sender&& o) noexcept {
      if (this != &o) {
        release();
        s_ = std::move(o.s_);
      }
      return *this;
    }
    ~sender() { release(); }
    /// False (and `v` dropped) when the receiver is gone.
    bool send(T v) {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      if (!s.receiver_alive || s.value.has_value()) return false;
      s.value = std::move(v);
      s.ex.wake_all(s.waiters);
      return true;
    }

   private:
    void release() {
      if (!s_) return;
      s_->ex.access(s_->id);  // a drop changes what the receiver sees
      s_->sender_alive = false;
      s_->ex.wake_all(s_->waiters);
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
        if (s_) s_->receiver_alive = false;
        s_ = std::move(o.s_);
      }
      return *this;
    }
    ~receiver() {
      if (!s_) return;
      s_->ex.access(s_->id);
      s_->receiver_alive = false;
    }
    /// Await point; nullopt when the sender was dropped without sending.
    std::optional<T> recv() {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      while (true) {
        if (s.value.has_value()) {
          std::optional<T> v = std::move(s.value);
          s.value.reset();
          return v;
        }
        if (!s.sender_alive) return std::nullopt;
        s.ex.block("oneshot.recv", s.id, &s.waiters, std::nullopt, true);
      }
    }

   private:
    std::shared_ptr<state> s_;
  };

  template <class R>
  static std::pair<sender, receiver> make(R& rt) {
    auto s = std::make_shared<state>(rt.exec());
    return {sender(s), receiver(s)};
  }
};

}  // namespace lockstep::sim
