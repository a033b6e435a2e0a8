// R::cancellation_token on the threads backend: copies share one flag;
// cancelled() is an await point that returns once any copy was cancelled.
//
// The shared state is made on first need — a copy, a cancel or a wait — and
// installed with a compare-exchange, so two threads that need it at once
// agree on one. A token nobody copies, cancels or waits on (a single-flight
// slot's, on every flight that is answered) costs no allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

class cancellation_token {
  struct state {
    std::atomic<std::uint32_t> refs{1};  // the tokens sharing it
    detail::lock_t mu;
    std::atomic<bool> cancelled{false};
    detail::wait_list waiters;  // guarded by mu
  };

 public:
  explicit cancellation_token(runtime& /*rt*/) {}
  cancellation_token(const cancellation_token& other) : s_(other.shared()) {
    s_.load(std::memory_order_relaxed)->refs.fetch_add(1, std::memory_order_relaxed);
  }
  // A move takes the shared state as it is (made or not): no allocation.
  cancellation_token(cancellation_token&& other) noexcept : s_(other.s_.exchange(nullptr)) {}
  cancellation_token& operator=(const cancellation_token&) = delete;
  ~cancellation_token() {
    state* s = s_.load(std::memory_order_acquire);
    if (s != nullptr && s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
  }

  void cancel() {
    state& s = *shared();
    std::lock_guard<detail::lock_t> hold(s.mu);
    s.cancelled.store(true);
    detail::wake_all(s.waiters);
  }
  [[nodiscard]] bool is_cancelled() const {
    const state* s = s_.load(std::memory_order_acquire);
    return s != nullptr && s->cancelled.load();
  }
  /// Await point until some copy is cancelled.
  void cancelled() {
    detail::require_fiber("cancellation_token::cancelled");
    state& s = *shared();
    std::unique_lock<detail::lock_t> hold(s.mu);
    while (!s.cancelled.load()) {
      detail::waiter& w = detail::fresh_waiter("cancellation_token::cancelled");
      detail::wait_on(hold, s.waiters, w, std::nullopt, detail::cancellable);
      if (detail::should_unwind()) detail::unwind();
    }
  }

 private:
  /// The shared state, made now if no copy, cancel or wait made it before.
  state* shared() const {
    state* s = s_.load(std::memory_order_acquire);
    if (s != nullptr) return s;
    state* fresh = new state;
    if (s_.compare_exchange_strong(s, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) return fresh;
    delete fresh;  // another thread installed one first: `s` holds it
    return s;
  }

  mutable std::atomic<state*> s_{nullptr};
};

}  // namespace lockstep::threads
