// std::counting_semaphore, std::latch and std::barrier on the threads
// backend, as monitors (monitor.hpp): a wait parks the fiber. Misuse the
// standard leaves undefined (releasing past max(), counting a latch below
// zero, arriving at a barrier more often than expected) ends the process
// with a line naming the fiber.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "chrono.hpp"
#include "context.hpp"
#include "monitor.hpp"

namespace lockstep::threads_std {

template <std::ptrdiff_t LeastMaxValue = 0x7fffffff>
class counting_semaphore {
 public:
  explicit counting_semaphore(std::ptrdiff_t desired) : count_(desired) {
    if (desired < 0 || desired > LeastMaxValue) detail::misuse("a counting_semaphore was created with " + std::to_string(desired));
  }
  counting_semaphore(const counting_semaphore&) = delete;
  counting_semaphore& operator=(const counting_semaphore&) = delete;
  static constexpr std::ptrdiff_t max() noexcept { return LeastMaxValue; }

  void release(std::ptrdiff_t update = 1) {
    const bool fits = state_.update([&] {
      if (update < 0 || update > LeastMaxValue - count_) return false;
      count_ += update;
      return true;
    });
    if (!fits) detail::misuse("counting_semaphore::release(" + std::to_string(update) + ") past max()");
  }
  void acquire() { state_.acquire("counting_semaphore::acquire", [this] { return take(); }); }
  bool try_acquire() noexcept {
    return state_.under_lock([this] { return take(); });
  }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& d) {
    return state_.acquire("counting_semaphore::acquire", [this] { return take(); }, detail::deadline_in(d));
  }
  template <class Duration>
  bool try_acquire_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t) {
    return state_.acquire("counting_semaphore::acquire", [this] { return take(); }, detail::deadline_at(t));
  }

 private:
  bool take() {
    if (count_ == 0) return false;
    --count_;
    return true;
  }
  detail::monitor state_;
  std::ptrdiff_t count_;
};

using binary_semaphore = counting_semaphore<1>;

class latch {
 public:
  explicit latch(std::ptrdiff_t expected) : count_(expected) {
    if (expected < 0) detail::misuse("a latch was created with " + std::to_string(expected));
  }
  latch(const latch&) = delete;
  latch& operator=(const latch&) = delete;
  static constexpr std::ptrdiff_t max() noexcept { return 0x7fffffff; }

  void count_down(std::ptrdiff_t n = 1) {
    const bool fits = state_.update([&] {
      if (n < 0 || n > count_) return false;
      count_ -= n;
      return true;
    });
    if (!fits) detail::misuse("latch::count_down(" + std::to_string(n) + ") below zero");
  }
  [[nodiscard]] bool try_wait() const noexcept {
    return state_.under_lock([this] { return count_ == 0; });
  }
  void wait() const {
    state_.acquire("latch::wait", [this] { return count_ == 0; });
  }
  void arrive_and_wait(std::ptrdiff_t n = 1) {
    count_down(n);
    wait();
  }

 private:
  mutable detail::monitor state_;
  std::ptrdiff_t count_;
};

namespace detail {
/// barrier<>'s completion: nothing.
struct no_completion {
  void operator()() noexcept {}
};
}  // namespace detail

/// Phases of `expected` arrivals; the last arrival of a phase runs the
/// completion function (under the barrier's lock) before anyone waiting
/// for that phase goes on.
template <class CompletionFunction = detail::no_completion>
class barrier {
 public:
  class arrival_token {
   private:
    friend class barrier;
    explicit arrival_token(std::uint64_t phase) : phase_(phase) {}
    std::uint64_t phase_;
  };

  explicit barrier(std::ptrdiff_t expected, CompletionFunction f = CompletionFunction())
      : expected_(expected), left_(expected), completion_(std::move(f)) {
    if (expected < 0) detail::misuse("a barrier was created with " + std::to_string(expected));
  }
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;
  static constexpr std::ptrdiff_t max() noexcept { return 0x7fffffff; }

  [[nodiscard]] arrival_token arrive(std::ptrdiff_t n = 1) { return arrival_token(arrive_n(n, false)); }
  void wait(arrival_token&& t) const {
    state_.acquire("barrier::wait", [&] { return phase_ != t.phase_; });
  }
  void arrive_and_wait() { wait(arrive(1)); }
  void arrive_and_drop() { (void)arrive_n(1, true); }

 private:
  std::uint64_t arrive_n(std::ptrdiff_t n, bool drop) {
    std::uint64_t phase = 0;
    const bool fits = state_.update([&] {
      if (n <= 0 || n > left_) return false;
      phase = phase_;
      left_ -= n;
      if (drop) --expected_;
      if (left_ == 0) {
        if constexpr (std::is_pointer_v<CompletionFunction>) {
          if (completion_ != nullptr) completion_();
        } else {
          completion_();
        }
        left_ = expected_;
        ++phase_;
      }
      return true;
    });
    if (!fits) detail::misuse("barrier::arrive(" + std::to_string(n) + ") past the expected count of the phase");
    return phase;
  }

  mutable detail::monitor state_;
  std::ptrdiff_t expected_;
  std::ptrdiff_t left_;
  std::uint64_t phase_ = 0;
  CompletionFunction completion_;
};

}  // namespace lockstep::threads_std
