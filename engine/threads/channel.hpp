// R::channel<T> on the threads backend: MPSC, bounded or unbounded, with
// tokio's semantics (engine/runtime.hpp): send parks while full; a closed or
// dropped receiver refuses sends and hands the value back; recv drains what
// is queued, then reports the end once every sender is gone or the receiver
// closed. An attached notify is signalled on every arrival and at the end.
//
// One lock per channel guards everything; lock order is channel, then the
// attached notify (a wake then pushes onto a scheduler's lock-free inbox,
// under neither). An unbounded channel's receiver takes the whole queue in
// one hold of the lock and serves it from its own deque (taken_), so a
// consumer behind its producer meets it on the lock once per batch, not once
// per item: at one key the lane router went from 16.3 to 21.2 M items/s with
// the producer beside the lane's core, and at 64 keys from 5.2 to 11.9 M
// (medians of three alternating runs, results/threads.md). A bounded channel
// keeps taking one at a time: what the receiver holds would not count
// against the bound, and senders would get room too early.
//
// Wakes mean "look again": a value stays queued until a receiver takes it,
// so a cancelled receiver loses nothing; a sender woken for room that leaves
// by cancellation passes the wake on to the next blocked sender.
#pragma once

#include <cstddef>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "../runtime.hpp"
#include "fiber.hpp"
#include "notify.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

template <class T>
class channel {
  struct state {
    explicit state(std::size_t cap) : capacity(cap) {}
    detail::lock_t mu;
    const std::size_t capacity;
    std::deque<T> items;
    std::size_t senders = 1;
    bool receiver_alive = true;
    bool closed = false;
    notify* attached = nullptr;
    detail::wait_list recv_waiters;
    detail::wait_list send_waiters;
    [[nodiscard]] bool refuses() const { return !receiver_alive || closed; }
    [[nodiscard]] bool ended() const { return senders == 0 || closed; }
    void arrived() {
      detail::wake_one(recv_waiters);
      if (attached != nullptr) attached->signal();
    }
  };

 public:
  class sender {
   public:
    sender() = default;
    explicit sender(std::shared_ptr<state> s) : s_(std::move(s)) {}
    sender(const sender& o) : s_(o.s_) {
      if (s_) {
        std::lock_guard<detail::lock_t> hold(s_->mu);
        ++s_->senders;
      }
    }
    sender(sender&& o) noexcept = default;
    sender& operator=(sender o) noexcept {
      std::swap(s_, o.s_);
      return *this;
    }
    ~sender() { reset(); }

    /// Await point while full; `closed` hands `v` back.
    send_outcome<T> send(T v) {
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        if (s.refuses()) return {send_status::closed, std::move(v)};
        if (s.items.size() < s.capacity) return push(s, std::move(v));
        detail::waiter& w = detail::fresh_waiter("channel::sender::send");
        detail::wait_on(hold, s.send_waiters, w, std::nullopt, detail::cancellable);
        if (detail::should_unwind()) {
          if (w.signal == detail::waiter::one && s.items.size() < s.capacity) detail::wake_one(s.send_waiters);
          detail::unwind();
        }
      }
    }
    /// Never parks: `full` or `closed` hands `v` back.
    send_outcome<T> try_send(T v) {
      state& s = *s_;
      std::lock_guard<detail::lock_t> hold(s.mu);
      if (s.refuses()) return {send_status::closed, std::move(v)};
      if (s.items.size() >= s.capacity) return {send_status::full, std::move(v)};
      return push(s, std::move(v));
    }
    [[nodiscard]] bool is_closed() const {
      if (!s_) return true;
      std::lock_guard<detail::lock_t> hold(s_->mu);
      return s_->refuses();
    }
    /// Drops this sender now (as destroying it would).
    void reset() {
      if (!s_) return;
      {
        std::lock_guard<detail::lock_t> hold(s_->mu);
        if (--s_->senders == 0) {
          detail::wake_all(s_->recv_waiters);
          if (s_->attached != nullptr) s_->attached->signal();
        }
      }
      s_.reset();
    }

   private:
    static send_outcome<T> push(state& s, T v) {
      s.items.push_back(std::move(v));
      s.arrived();
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
      taken_ = std::move(o.taken_);
      return *this;
    }
    ~receiver() { release(); }

    /// Await point; nullopt once the channel is closed or senderless and drained.
    std::optional<T> recv() {
      if (holds_taken()) return take_local();
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        if (!s.items.empty()) return pop(s);
        if (s.ended()) return std::nullopt;
        detail::waiter& w = detail::fresh_waiter("channel::receiver::recv");
        detail::wait_on(hold, s.recv_waiters, w, std::nullopt, detail::cancellable);
        if (detail::should_unwind()) detail::unwind();
      }
    }
    recv_outcome<T> try_recv() {
      if (holds_taken()) return {recv_status::item, take_local()};
      state& s = *s_;
      std::lock_guard<detail::lock_t> hold(s.mu);
      if (!s.items.empty()) return {recv_status::item, pop(s)};
      if (s.ended()) return {recv_status::closed, std::nullopt};
      return {recv_status::empty, std::nullopt};
    }
    /// Await point until an item arrives, the channel ends, or steady_clock
    /// reaches `deadline_ns`.
    recv_outcome<T> recv_until(std::int64_t deadline_ns) {
      return timed_recv("channel::receiver::recv_until", deadline_ns, 0);
    }
    /// As recv_until(now() + ttl_ns), but the clock is read only if the
    /// receive has to wait, and the ttl runs from then.
    recv_outcome<T> recv_for(std::int64_t ttl_ns) {
      return timed_recv("channel::receiver::recv_for", std::nullopt, ttl_ns);
    }
    /// Refuses further sends; what is queued still drains.
    void close() {
      std::lock_guard<detail::lock_t> hold(s_->mu);
      s_->closed = true;
      detail::wake_all(s_->send_waiters);
    }
    /// Signal `n` on every arrival and when the channel ends.
    void attach(notify& n) {
      std::lock_guard<detail::lock_t> hold(s_->mu);
      s_->attached = &n;
    }
    [[nodiscard]] std::size_t size() const {
      std::lock_guard<detail::lock_t> hold(s_->mu);
      return s_->items.size() + (taken_ ? taken_->size() : 0);
    }

   private:
    // A deadline the caller fixed, or (when unset) `ttl_ns` from the moment
    // the queue is first found empty. A lane with an idle ttl calls this once
    // per item and mostly finds one queued: its clock read up front was most
    // of the 8.7 % of samples clock_gettime took at 64 keys with a ttl, now
    // 0.9 % (issue 8; 8.5 -> 9.2-10.1 M items/s).
    recv_outcome<T> timed_recv(const char* what, std::optional<std::int64_t> deadline_ns, std::int64_t ttl_ns) {
      if (holds_taken()) return {recv_status::item, take_local()};
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        if (!s.items.empty()) return {recv_status::item, pop(s)};
        if (s.ended()) return {recv_status::closed, std::nullopt};
        const std::int64_t now = detail::steady_now();
        if (!deadline_ns) deadline_ns = deadline_after(now, ttl_ns);
        if (now >= *deadline_ns) return {recv_status::timed_out, std::nullopt};
        detail::waiter& w = detail::fresh_waiter(what);
        detail::wait_on(hold, s.recv_waiters, w, *deadline_ns, detail::cancellable);
        if (detail::should_unwind()) detail::unwind();
      }
    }
    T take_local() {
      T v = std::move(taken_->front());
      taken_->pop_front();
      return v;
    }
    T pop(state& s) {
      if (s.capacity == std::numeric_limits<std::size_t>::max() && s.items.size() > 1) {
        // Unbounded: take the whole queue in this one hold of the lock (the
        // deques swap), and serve the rest from taken_ without it. No sender
        // ever waits for room here. taken_ is made at the first batch, not
        // with the receiver: a std::deque allocates twice when it is made,
        // and a lane that lives for one item (reaped by its idle ttl) never
        // needs it.
        if (!taken_) taken_.emplace();
        taken_->swap(s.items);
        return take_local();
      }
      T v = std::move(s.items.front());
      s.items.pop_front();
      detail::wake_one(s.send_waiters);
      return v;
    }
    void release() {
      if (!s_) return;
      taken_.reset();
      bool left_queued = false;
      {
        std::lock_guard<detail::lock_t> hold(s_->mu);
        s_->receiver_alive = false;
        s_->attached = nullptr;
        left_queued = !s_->items.empty();
        detail::wake_all(s_->send_waiters);
      }
      // Queued values go with the receiver, destroyed unlocked. No sender
      // adds to the queue once the receiver is gone, so it is moved out in a
      // second hold only when it held something: a std::deque allocates when
      // it is made, and most receivers (a lane reaped by its ttl) leave none.
      if (left_queued) {
        std::deque<T> dropped;
        {
          std::lock_guard<detail::lock_t> hold(s_->mu);
          dropped.swap(s_->items);
        }
      }
      s_.reset();
    }
    std::shared_ptr<state> s_;
    // Taken from an unbounded channel's queue and not yet received: only
    // this receiver's fiber touches it.
    std::optional<std::deque<T>> taken_;
    [[nodiscard]] bool holds_taken() const { return taken_ && !taken_->empty(); }
  };

  /// A channel holding at most `capacity` (> 0) queued items.
  template <class R>
  static std::pair<sender, receiver> bounded(R& /*rt*/, std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("a bounded channel needs a capacity > 0");
    auto s = std::make_shared<state>(capacity);
    return {sender(s), receiver(s)};
  }
  template <class R>
  static std::pair<sender, receiver> unbounded(R& /*rt*/) {
    auto s = std::make_shared<state>(std::numeric_limits<std::size_t>::max());
    return {sender(s), receiver(s)};
  }
};

}  // namespace lockstep::threads
