// A simulated cancellation token: copies share one flag; cancelled() is an
// await point that returns once any copy has been cancelled.
#pragma once

#include <memory>

#include "executor.hpp"

namespace lockstep::sim {

class cancellation_token {
  struct state {
    explicit state(executor& e) : ex(e), id(e.next_object_id()) {}
    executor& ex;
    std::uint64_t id;
    bool cancelled = false;
    wait_queue waiters;
  };

 public:
  explicit cancellation_token(executor& ex) : s_(std::make_shared<state>(ex)) {}
  template <class R>
  explicit cancellation_token(R& rt) : cancellation_token(rt.exec()) {}

  void cancel() {
    s_->ex.schedule_point(s_->id);
    s_->ex.access(s_->id);
    s_->cancelled = true;
    s_->ex.wake_all(s_->waiters);
  }
  [[nodiscard]] bool is_cancelled() const { return s_->cancelled; }
  void cancelled() {
    state& s = *s_;
    s.ex.schedule_point(s.id);
    s.ex.access(s.id);
    while (!s.cancelled) s.ex.block("cancellation_token", s.id, &s.waiters, std::nullopt, true);
  }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace lockstep::sim
