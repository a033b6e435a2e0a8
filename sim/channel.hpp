// Simulated MPSC channels, bounded and unbounded, with tokio's semantics:
// send suspends while full; a closed or dropped receiver refuses sends and
// hands the value back; recv drains what is queued and then reports the end
// once every sender is gone. A receiver may also attach a notify that is
// signalled on every arrival and on disconnect, so one fiber can wait on
// several sources at once (the shard reactor's select).
#pragma once

#include <cstddef>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../engine/runtime.hpp"
#include "executor.hpp"
#include "notify.hpp"

namespace lockstep::sim {

template <class T>
class channel {
  struct state {
    state(executor& e, std::size_t cap) : ex(e), id(e.next_object_id()), capacity(cap) {}
    executor& ex;
    std::uint64_t id;
    std::size_t capacity;
    std::deque<T> items;
    std::size_t senders = 1;
    bool receiver_alive = true;
    bool closed = false;
    notify* attached = nullptr;
    wait_queue recv_waiters;
    wait_queue send_waiters;
    void poke() {
      ex.wake_one(recv_waiters);
      if (attached != nullptr) attached->signal();
    }
  };

 public:
  class sender {
   public:
    sender() = default;
    explicit sender(std::shared_ptr<state> s) : s_(std::move(s)) {}
    sender(const sender& o) : s_(o.s_) {
      if (s_) ++s_->senders;
    }
    sender(sender&& o) noexcept = default;
    sender& operator=(sender o) noexcept {
      std::swap(s_, o.s_);
      return *this;
    }
    ~sender() { reset(); }

    /// Await point while full. closed hands `v` back.
    send_outcome<T> send(T v) {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      while (true) {
        if (!s.receiver_alive || s.closed) return {send_status::closed, std::move(v)};
        if (s.items.size() < s.capacity) return push(std::move(v));
        wait_for_room(s);
      }
    }
    /// Never suspends: full or closed hands `v` back.
    send_outcome<T> try_send(T v) {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      if (!s.receiver_alive || s.closed) return {send_status::closed, std::move(v)};
      if (s.items.size() >= s.capacity) return {send_status::full, std::move(v)};
      return push(std::move(v));
    }
    [[nodiscard]] bool is_closed() const { return !s_ || !s_->receiver_alive || s_->closed; }
    /// Drops this sender now (as destroying it would).
    void reset() {
      if (!s_) return;
      s_->ex.access(s_->id);  // a drop changes what a receiver sees, wakers or not
      if (--s_->senders == 0) {
        s_->ex.wake_all(s_->recv_waiters);
        if (s_->attached != nullptr) s_->attached->signal();
      }
      s_.reset();
    }

   private:
    // A sender woken for a free slot that leaves by cancellation instead of
    // taking it passes the wake on, or the next blocked sender would wait
    // beside a channel with room (tokio's semaphore gives the permit back).
    static void wait_for_room(state& s) {
      executor& ex = s.ex;
      try {
        ex.block("channel.send", s.id, &s.send_waiters, std::nullopt, true);
      } catch (const fiber_cancelled&) {
        // Only a pop wakes with `notified`, and then the state is alive.
        if (ex.current().reason == wake_reason::notified && s.items.size() < s.capacity) {
          ex.wake_one(s.send_waiters);
        }
        throw;
      }
    }
    send_outcome<T> push(T v) {
      s_->items.push_back(std::move(v));
      s_->poke();
      return {send_status::sent, std::nullopt};
    }
    std::shared_ptr<state> s_;
  };

  class receiver {
   public:
    receiver() = default;
    explicit receiver(std::shared_ptr<state> s) : s_(std::move(s)) {}
    receiver(receiver&&) noexcept = default;
    receiver& operator=(receiver&& o) noexcept {
      release();
      s_ = std::move(o.s_);
      return *this;
    }
    ~receiver() { release(); }

    /// Await point; nullopt once the channel is closed or senderless and drained.
    std::optional<T> recv() {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      while (true) {
        if (!s.items.empty()) return pop();
        if (s.senders == 0 || s.closed) return std::nullopt;
        s.ex.block("channel.recv", s.id, &s.recv_waiters, std::nullopt, true);
      }
    }
    recv_outcome<T> try_recv() {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      if (!s.items.empty()) return {recv_status::item, pop()};
      if (s.senders == 0 || s.closed) return {recv_status::closed, std::nullopt};
      return {recv_status::empty, std::nullopt};
    }
    /// Await point until an item arrives, the channel ends, or `deadline_ns`.
    recv_outcome<T> recv_until(std::int64_t deadline_ns) {
      state& s = *s_;
      s.ex.schedule_point(s.id);
      s.ex.access(s.id);
      while (true) {
        if (!s.items.empty()) return {recv_status::item, pop()};
        if (s.senders == 0 || s.closed) return {recv_status::closed, std::nullopt};
        if (s.ex.now() >= deadline_ns) return {recv_status::timed_out, std::nullopt};
        s.ex.block("channel.recv", s.id, &s.recv_waiters, deadline_ns, true);
      }
    }
    /// recv_until(now() + ttl_ns), the clock read before the scheduling point,
    /// exactly as a caller computing the deadline itself would.
    recv_outcome<T> recv_for(std::int64_t ttl_ns) { return recv_until(deadline_after(s_->ex.now(), ttl_ns)); }
    /// Refuses further sends; what is queued still drains.
    void close() {
      s_->ex.schedule_point(s_->id);
      s_->ex.access(s_->id);
      s_->closed = true;
      s_->ex.wake_all(s_->send_waiters);
    }
    /// Signal `n` (without a scheduling point) on every arrival and at the end.
    void attach(notify& n) { s_->attached = &n; }
    [[nodiscard]] std::size_t size() const { return s_->items.size(); }

   private:
    T pop() {
      T v = std::move(s_->items.front());
      s_->items.pop_front();
      s_->ex.wake_one(s_->send_waiters);
      return v;
    }
    void release() {
      if (!s_) return;
      s_->ex.access(s_->id);
      s_->receiver_alive = false;
      s_->attached = nullptr;
      s_->items.clear();  // queued values are dropped with the receiver, as in tokio
      s_->ex.wake_all(s_->send_waiters);
      s_.reset();
    }
    std::shared_ptr<state> s_;
  };

  /// A channel holding at most `capacity` (> 0) queued items.
  template <class R>
  static std::pair<sender, receiver> bounded(R& rt, std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("a bounded channel needs a capacity > 0");
    auto s = std::make_shared<state>(rt.exec(), capacity);
    return {sender(s), receiver(s)};
  }
  template <class R>
  static std::pair<sender, receiver> unbounded(R& rt) {
    auto s = std::make_shared<state>(rt.exec(), std::numeric_limits<std::size_t>::max());
    return {sender(s), receiver(s)};
  }
};

}  // namespace lockstep::sim
