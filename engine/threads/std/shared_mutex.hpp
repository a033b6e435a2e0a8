// std::shared_mutex and std::shared_timed_mutex on the threads backend, as a
// monitor (monitor.hpp): one writer or many readers; a waiting writer keeps
// new readers out, so writers are not starved by a stream of readers.
#pragma once

#include <chrono>
#include <cstdint>
#include <shared_mutex>  // std::shared_lock

#include "chrono.hpp"
#include "context.hpp"
#include "monitor.hpp"

namespace lockstep::threads_std {

using std::shared_lock;

namespace detail {

template <bool Timed>
class shared_mutex_of {
 public:
  shared_mutex_of() = default;
  explicit shared_mutex_of(const char* /*name*/) {}
  shared_mutex_of(const shared_mutex_of&) = delete;
  shared_mutex_of& operator=(const shared_mutex_of&) = delete;
  ~shared_mutex_of() {
    if (writer_ || readers_ != 0) misuse("a shared_mutex was destroyed while locked");
  }

  void lock() { (void)lock_until(std::nullopt); }
  bool try_lock() {
    return state_.under_lock([this] { return take_exclusive(); });
  }
  void unlock() {
    const bool held = state_.update([this] {
      if (!writer_ || !(owner_ == holder::caller())) return false;
      writer_ = false;
      owner_ = holder{};
      return true;
    });
    if (!held) misuse("a shared_mutex was unlocked by a caller that does not hold it exclusively");
  }
  void lock_shared() { state_.acquire("shared_mutex::lock_shared", [this] { return take_shared(); }); }
  bool try_lock_shared() {
    return state_.under_lock([this] { return take_shared(); });
  }
  void unlock_shared() {
    const bool held = state_.update([this] {
      if (readers_ == 0) return false;
      --readers_;
      return true;
    });
    if (!held) misuse("a shared_mutex was unlocked_shared with no reader inside");
  }

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d)
    requires Timed
  {
    return lock_until(deadline_in(d));
  }
  template <class Duration>
  bool try_lock_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t)
    requires Timed
  {
    return lock_until(deadline_at(t));
  }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d)
    requires Timed
  {
    return state_.acquire("shared_mutex::lock_shared", [this] { return take_shared(); }, deadline_in(d));
  }
  template <class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t)
    requires Timed
  {
    return state_.acquire("shared_mutex::lock_shared", [this] { return take_shared(); }, deadline_at(t));
  }

 private:
  /// A writer announces itself while it waits (so readers let it in), and
  /// withdraws if its deadline passes.
  bool lock_until(std::optional<std::int64_t> deadline) {
    state_.update([this] { ++writers_waiting_; });
    struct withdraw {  // on every way out, fiber_cancelled included
      shared_mutex_of& m;
      ~withdraw() {
        m.state_.update([this] { --m.writers_waiting_; });
      }
    } done{*this};
    return state_.acquire("shared_mutex::lock", [this] { return take_exclusive(); }, deadline);
  }
  bool take_exclusive() {
    if (writer_ || readers_ != 0) return false;
    writer_ = true;
    owner_ = holder::caller();
    return true;
  }
  bool take_shared() {
    if (writer_ || writers_waiting_ != 0) return false;
    ++readers_;
    return true;
  }

  monitor state_;
  bool writer_ = false;
  holder owner_;
  std::uint64_t readers_ = 0;
  std::uint64_t writers_waiting_ = 0;
};

}  // namespace detail

using shared_mutex = detail::shared_mutex_of<false>;
using shared_timed_mutex = detail::shared_mutex_of<true>;

}  // namespace lockstep::threads_std
