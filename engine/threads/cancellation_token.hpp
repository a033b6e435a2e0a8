// R::cancellation_token on the threads backend: copies share one flag;
// cancelled() is an await point that returns once any copy was cancelled.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

class cancellation_token {
  struct state {
    detail::lock_t mu;
    std::atomic<bool> cancelled{false};
    detail::wait_list waiters;
  };

 public:
  explicit cancellation_token(runtime& /*rt*/) : s_(std::make_shared<state>()) {}

  void cancel() {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    s_->cancelled.store(true);
    detail::wake_all(s_->waiters);
  }
  [[nodiscard]] bool is_cancelled() const { return s_->cancelled.load(); }
  /// Await point until some copy is cancelled.
  void cancelled() {
    detail::require_fiber("cancellation_token::cancelled");
    state& s = *s_;
    std::unique_lock<detail::lock_t> hold(s.mu);
    while (!s.cancelled.load()) {
      detail::waiter w;
      detail::wait_on(hold, s.waiters, w, std::nullopt, detail::cancellable);
      if (detail::should_unwind()) detail::unwind();
    }
  }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace lockstep::threads
