// A handle to a spawned fiber. Destroying it detaches the fiber; the handle
// keeps only the fiber's record alive, never the fiber itself.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class task {
 public:
  task() = default;
  explicit task(std::shared_ptr<detail::fiber> f) : f_(std::move(f)) {}

  /// Await point until the fiber has ended (returned, thrown or been cancelled).
  void join() {
    if (!f_) return;
    detail::require_fiber("task::join");
    std::unique_lock<detail::lock_t> lock(f_->mu);
    while (!f_->finished.load()) {
      detail::waiter& w = detail::fresh_waiter("task::join");
      detail::wait_on(lock, f_->joiners, w, std::nullopt, detail::cancellable);
      if (detail::should_unwind()) detail::unwind();
    }
  }
  /// Requests cancellation: the fiber's next (or current) await point throws
  /// fiber_cancelled, once. From any thread; a no-op once it has finished.
  void cancel() {
    if (f_) detail::cancel(*f_);
  }
  /// The fiber's id (runtime::current_fiber_id inside it); 0 for an empty handle.
  [[nodiscard]] std::uint64_t fiber_id() const { return f_ ? f_->id : 0; }
  [[nodiscard]] bool finished() const { return !f_ || f_->finished.load(); }
  /// A snapshot: the fiber is parked at a wait right now. For tests that must
  /// know a fiber really blocked before they wake it (instead of sleeping).
  [[nodiscard]] bool is_waiting() const { return f_ && f_->waiting.load() != detail::not_waiting; }

 private:
  std::shared_ptr<detail::fiber> f_;
};

}  // namespace lockstep::threads
