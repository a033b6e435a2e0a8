// std::counting_semaphore, std::binary_semaphore, std::latch and
// std::barrier, simulated: each operation a scheduling point, each wait a
// block on the virtual clock's terms.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "../executor.hpp"
#include "chrono.hpp"
#include "context.hpp"
#include "mutex.hpp"

namespace lockstep::sim_std {

namespace detail {

/// A count and the threads waiting for it to change.
class counted {
 public:
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;

 protected:
  counted(const char* type, std::ptrdiff_t n, const site& created)
      : ex_(&running(type, created)), id_(ex_->next_object_id()), count_(n) {
    label(*ex_, id_, type, nullptr, created);
  }
  void enter(const char* op, const site& where) {
    at(*ex_, op, where);
    ex_->schedule_point(id_);
    ex_->touch(id_);
  }
  sim::wake_reason wait(const char* op, std::optional<std::int64_t> deadline = std::nullopt) {
    return ex_->block(op, id_, &waiters_, deadline, true);
  }
  // For the race detector: a release, count_down or arrival publishes what
  // the thread did; the acquire, wait or phase it lets through receives it.
  void publish() {
    if (sim::happens_before* hb = ex_->clocks()) hb->release_merge(ex_->current().id, id_);
  }
  void receive() {
    if (sim::happens_before* hb = ex_->clocks()) hb->acquire(ex_->current().id, id_);
  }
  sim::executor* ex_;
  std::uint64_t id_;
  std::ptrdiff_t count_;
  sim::wait_queue waiters_;
};

}  // namespace detail

template <std::ptrdiff_t LeastMaxValue = 0x7fffffff>
class counting_semaphore : detail::counted {
 public:
  explicit counting_semaphore(std::ptrdiff_t desired, detail::site created = detail::site())
      : counted("counting_semaphore", desired, created) {}
  static constexpr std::ptrdiff_t max() noexcept { return LeastMaxValue; }

  void release(std::ptrdiff_t update = 1, detail::site where = detail::site()) {
    enter("semaphore.release", where);
    if (update < 0 || count_ > LeastMaxValue - update) {
      ex_->misuse("semaphore.release(" + std::to_string(update) + ") at " + sim::site(where) +
                  " would take the count " + std::to_string(count_) + " outside [0, max()] (std: undefined)");
      return;
    }
    publish();
    count_ += update;
    for (std::ptrdiff_t i = 0; i < update && ex_->wake_one(waiters_, false); ++i) {
    }
  }
  void acquire(detail::site where = detail::site()) {
    enter("semaphore.acquire", where);
    while (count_ == 0) wait("semaphore.acquire");
    --count_;
    receive();
  }
  bool try_acquire(detail::site where = detail::site()) {
    enter("semaphore.try_acquire", where);
    if (count_ == 0) return false;
    --count_;
    receive();
    return true;
  }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& d, detail::site where = detail::site()) {
    return acquire_until(detail::deadline_in(*ex_, d), where);
  }
  template <class Duration>
  bool try_acquire_until(const std::chrono::time_point<chrono::steady_clock, Duration>& t,
                         detail::site where = detail::site()) {
    return acquire_until(detail::deadline_at(t), where);
  }

 private:
  bool acquire_until(std::int64_t deadline, const detail::site& where) {
    enter("semaphore.try_acquire", where);
    while (count_ == 0) {
      if (ex_->now() >= deadline) return false;
      wait("semaphore.acquire", deadline);
    }
    --count_;
    receive();
    return true;
  }
};

using binary_semaphore = counting_semaphore<1>;

class latch : detail::counted {
 public:
  explicit latch(std::ptrdiff_t expected, detail::site created = detail::site())
      : counted("latch", expected, created) {}
  static constexpr std::ptrdiff_t max() noexcept { return 0x7fffffff; }
  void count_down(std::ptrdiff_t n = 1, detail::site where = detail::site()) {
    enter("latch.count_down", where);
    if (n < 0 || n > count_) {
      ex_->misuse("latch.count_down(" + std::to_string(n) + ") at " + sim::site(where) + " with the count at " +
                  std::to_string(count_) + " (std: undefined)");
      return;
    }
    publish();
    count_ -= n;
    if (count_ == 0) ex_->wake_all(waiters_, false);
  }
  [[nodiscard]] bool try_wait(detail::site where = detail::site()) {
    enter("latch.try_wait", where);
    if (count_ != 0) return false;
    receive();
    return true;
  }
  void wait(detail::site where = detail::site()) {
    enter("latch.wait", where);
    while (count_ != 0) counted::wait("latch.wait");
    receive();
  }
  void arrive_and_wait(std::ptrdiff_t n = 1, detail::site where = detail::site()) {
    count_down(n, where);
    wait(where);
  }
};

/// std::barrier: phases of `expected` arrivals; the completion function runs
/// on the thread whose arrival ends a phase, before anyone is released.
template <class CompletionFunction = void (*)() noexcept>
class barrier : detail::counted {
 public:
  class arrival_token {
    friend class barrier;
    std::uint64_t phase_ = 0;
  };

  explicit barrier(std::ptrdiff_t expected, CompletionFunction f = nullptr_completion(),
                   detail::site created = detail::site())
      : counted("barrier", expected, created), expected_(expected), completion_(std::move(f)) {}
  static constexpr std::ptrdiff_t max() noexcept { return 0x7fffffff; }

  [[nodiscard]] arrival_token arrive(std::ptrdiff_t n = 1, detail::site where = detail::site()) {
    enter("barrier.arrive", where);
    arrival_token t;
    t.phase_ = phase_;
    if (n <= 0 || n > count_) {
      ex_->misuse("barrier.arrive(" + std::to_string(n) + ") at " + sim::site(where) + " with " +
                  std::to_string(count_) + " arrivals left in the phase (std: undefined)");
      return t;
    }
    publish();
    count_ -= n;
    if (count_ == 0) complete();
    return t;
  }
  void wait(arrival_token&& t, detail::site where = detail::site()) {
    enter("barrier.wait", where);
    while (phase_ == t.phase_) counted::wait("barrier.wait");
    receive();
  }
  void arrive_and_wait(detail::site where = detail::site()) { wait(arrive(1, where), where); }
  void arrive_and_drop(detail::site where = detail::site()) {
    enter("barrier.arrive_and_drop", where);
    publish();
    --expected_;
    if (--count_ == 0) complete();
  }

 private:
  static CompletionFunction nullptr_completion() {
    if constexpr (std::is_pointer_v<CompletionFunction>) {
      return nullptr;
    } else {
      return CompletionFunction();
    }
  }
  void complete() {
    receive();  // the completion runs after every arrival of the phase
    if constexpr (std::is_pointer_v<CompletionFunction>) {
      if (completion_ != nullptr) completion_();
    } else {
      completion_();
    }
    publish();  // and before every thread the phase lets go
    ++phase_;
    count_ = expected_;
    ex_->wake_all(waiters_, false);
  }
  std::ptrdiff_t expected_;
  CompletionFunction completion_;
  std::uint64_t phase_ = 0;
};

}  // namespace lockstep::sim_std
