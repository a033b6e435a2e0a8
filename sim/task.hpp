// A handle to a spawned fiber. Destroying it detaches the fiber.
#pragma once

#include "executor.hpp"

namespace lockstep::sim {

class task {
 public:
  task() = default;
  task(executor* ex, fiber_id id) : ex_(ex), id_(id) {}

  /// Await point until the fiber has ended (returned, thrown or been cancelled).
  void join() {
    ex_->schedule_point();
    ex_->join(id_);
  }
  /// Requests cancellation: the fiber unwinds from its next await point.
  void cancel() {
    ex_->schedule_point();
    ex_->cancel(id_);
  }
  [[nodiscard]] bool finished() const { return ex_ == nullptr || ex_->finished(id_); }
  [[nodiscard]] fiber_id id() const { return id_; }

 private:
  executor* ex_ = nullptr;
  fiber_id id_ = no_fiber;
};

}  // namespace lockstep::sim
