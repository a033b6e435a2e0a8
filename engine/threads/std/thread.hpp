// std::thread and std::this_thread on the threads backend. A thread is a
// fiber of the running threads::runtime, started on the next core in turn
// (round robin from the spawning fiber's core), so threads run in parallel
// as OS threads would. Misuse the standard answers with std::terminate
// (destroying or assigning over a joinable thread) ends the process with a
// line naming the thread; joining a thread that is not joinable, or itself,
// throws std::system_error, as std's join does. An exception that escapes a
// thread's function ends that fiber only: runtime::run() rethrows the first
// one after its teardown (std would terminate).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <ostream>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../runtime.hpp"
#include "chrono.hpp"
#include "context.hpp"

namespace lockstep::threads_std {

class thread {
 public:
  class id {
   public:
    id() noexcept = default;
    friend bool operator==(id a, id b) noexcept { return a.v_ == b.v_; }
    friend auto operator<=>(id a, id b) noexcept { return a.v_ <=> b.v_; }
    friend std::ostream& operator<<(std::ostream& os, id i) {
      return i.v_ == 0 ? os << "thread::id of a non-executing thread" : os << i.v_;
    }
    /// The fiber's id (threads::runtime::current_fiber_id): from 1 in spawn order.
    [[nodiscard]] std::uint64_t value() const noexcept { return v_; }

    /// The id of the fiber numbered `v` (0: no thread).
    explicit id(std::uint64_t v) noexcept : v_(v) {}

   private:
    std::uint64_t v_ = 0;
  };

  thread() noexcept = default;
  template <class F, class... Args,
            class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, thread>>>
  explicit thread(F&& f, Args&&... args) {
    threads::runtime& rt = detail::running("thread");
    // Decayed copies, as std::thread makes: the caller's arguments may die first.
    auto call = [fn = std::decay_t<F>(std::forward<F>(f)),
                 tuple = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)]() mutable {
      std::apply([&fn](auto&... a) { std::invoke(std::move(fn), std::move(a)...); }, tuple);
    };
    task_ = rt.spawn_on(next_core(rt), "thread", std::move(call));
    id_ = task_.fiber_id();
  }
  thread(thread&& o) noexcept : task_(std::move(o.task_)), id_(o.id_) { o.id_ = 0; }
  thread& operator=(thread&& o) noexcept {
    if (joinable()) detail::misuse("joinable thread " + label() + " was assigned over (std terminates there)");
    task_ = std::move(o.task_);
    id_ = o.id_;
    o.id_ = 0;
    return *this;
  }
  thread(const thread&) = delete;
  thread& operator=(const thread&) = delete;
  ~thread() {
    // Unwinding (the runtime's teardown cancelling the fiber that owns this
    // thread, or an exception already in flight): let it go, detached, as
    // ending the process there would hide the first failure.
    if (joinable() && std::uncaught_exceptions() == 0) {
      detail::misuse("thread " + label() + " was destroyed while joinable (neither joined nor detached)");
    }
  }

  [[nodiscard]] bool joinable() const noexcept { return id_ != 0; }
  [[nodiscard]] id get_id() const noexcept { return id(id_); }
  void join() {
    if (!joinable()) throw std::system_error(std::make_error_code(std::errc::invalid_argument), "thread::join");
    const threads::detail::fiber* me = threads::detail::this_fiber();
    if (me != nullptr && me->id == id_) {
      throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur), "thread::join");
    }
    // Joined from here on, even if this join is cancelled by the teardown.
    threads::task joined = std::exchange(task_, threads::task());
    id_ = 0;
    if (me == nullptr) {
      while (!joined.finished()) std::this_thread::yield();
    } else {
      joined.join();
    }
  }
  void detach() {
    if (!joinable()) throw std::system_error(std::make_error_code(std::errc::invalid_argument), "thread::detach");
    task_ = threads::task();  // dropping the handle detaches the fiber
    id_ = 0;
  }
  void swap(thread& o) noexcept {
    std::swap(task_, o.task_);
    std::swap(id_, o.id_);
  }
  /// The runtime's cores (off its fibers: the machine's CPUs).
  [[nodiscard]] static unsigned hardware_concurrency() noexcept {
    const threads::detail::fiber* f = threads::detail::this_fiber();
    return f != nullptr ? f->rt.cores() : std::thread::hardware_concurrency();
  }

 private:
  [[nodiscard]] std::string label() const { return "#" + std::to_string(id_) + " 'thread'"; }
  /// Round robin over the cores, starting after the spawning core.
  static std::uint32_t next_core(threads::runtime& rt) {
    static thread_local std::uint32_t turn = 0;
    return (rt.current_core() + 1 + turn++) % rt.cores();
  }

  threads::task task_;
  std::uint64_t id_ = 0;
};

inline void swap(thread& a, thread& b) noexcept { a.swap(b); }

namespace this_thread {

/// The calling fiber's thread::id (off the runtime's fibers: an id that
/// equals no thread's).
inline thread::id get_id() noexcept {
  const threads::detail::fiber* f = threads::detail::this_fiber();
  return thread::id(f != nullptr ? f->id : 0);
}

/// Gives the core to its other fibers (off a fiber: std::this_thread::yield).
/// Not noexcept, unlike std's: an await point, which the teardown cancels.
inline void yield() {
  threads::detail::fiber* f = threads::detail::this_fiber();
  if (f != nullptr) {
    f->rt.yield_now();
  } else {
    std::this_thread::yield();
  }
}

template <class Duration>
void sleep_until(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t) {
  threads::detail::fiber* f = threads::detail::this_fiber();
  if (f == nullptr) {
    std::this_thread::sleep_until(t);
    return;
  }
  f->rt.sleep_until(detail::deadline_at(t));
}

template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d) {
  threads::detail::fiber* f = threads::detail::this_fiber();
  if (f == nullptr) {
    std::this_thread::sleep_for(d);
    return;
  }
  f->rt.sleep_until(detail::deadline_in(d));
}

}  // namespace this_thread

}  // namespace lockstep::threads_std

/// As std::thread::id has: ids key unordered containers (the fiber's number).
template <>
struct std::hash<lockstep::threads_std::thread::id> {
  std::size_t operator()(lockstep::threads_std::thread::id i) const noexcept {
    return static_cast<std::size_t>(i.value());
  }
};
