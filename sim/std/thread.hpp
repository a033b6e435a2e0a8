// std::thread and std::this_thread, simulated. A thread is a fiber on a
// simulated core of its own (executor::free_core), so it can be preempted at
// every scheduling point, as an OS thread can; the cooperative model (fibers
// sharing a core, switching only where they block) stays available through
// sim::runtime::spawn. Misuse that std::thread answers with std::terminate or
// a system_error (joining twice, joining oneself, destroying a joinable
// thread) fails the run instead, naming the thread and the line.
//
// Starting and joining a thread are no scheduling points of their own: what
// another thread could run there commutes with them (a start makes a fiber
// runnable that no one else can see yet; a join of an ended thread reads only
// that it ended), so every outcome is reached at the operations before and
// after them, and a join of a thread still running blocks, which is a
// decision anyway. Each was a decision a run that no outcome needed, a
// sixth of a small test's (results/sim_std.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../executor.hpp"
#include "context.hpp"

namespace lockstep::sim_std {

class thread {
 public:
  class id {
   public:
    id() noexcept = default;
    friend bool operator==(id a, id b) noexcept { return a.v_ == b.v_; }
    friend auto operator<=>(id a, id b) noexcept { return a.v_ <=> b.v_; }
    friend std::ostream& operator<<(std::ostream& os, id i) {
      return i.v_ == sim::no_fiber ? os << "thread::id of a non-executing thread" : os << i.v_;
    }
    /// The fiber's number: dense, in spawn order, the same on every replay.
    [[nodiscard]] std::uint32_t value() const noexcept { return v_; }

   private:
    friend class thread;
    friend id current_id();
    explicit id(sim::fiber_id v) : v_(v) {}
    sim::fiber_id v_ = sim::no_fiber;
  };

  thread() noexcept = default;
  template <class F, class... Args,
            class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, thread>>>
  explicit thread(F&& f, Args&&... args) {
    // No line of the caller's here: a default argument cannot follow a pack.
    ex_ = &detail::running("thread", detail::site());
    // Decayed copies, as std::thread makes: the caller's arguments may die first.
    auto call = [fn = std::decay_t<F>(std::forward<F>(f)),
                 tuple = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)]() mutable {
      std::apply([&fn](auto&... a) { std::invoke(std::move(fn), std::move(a)...); }, tuple);
    };
    id_ = ex_->spawn(ex_->free_core(), "thread", sim::unique_function(std::move(call)));
  }
  thread(thread&& o) noexcept : ex_(o.ex_), id_(o.id_) { o.id_ = sim::no_fiber; }
  thread& operator=(thread&& o) noexcept {
    if (joinable()) ex_->misuse("a joinable thread (" + label() + ") was assigned over (the standard library terminates there)");
    ex_ = o.ex_;
    id_ = o.id_;
    o.id_ = sim::no_fiber;
    return *this;
  }
  thread(const thread&) = delete;
  thread& operator=(const thread&) = delete;
  ~thread() {
    // std::thread terminates here; a test run fails instead (unless it failed
    // already and this is its unwinding).
    if (joinable()) [[unlikely]] destroyed_joinable();
  }

  [[nodiscard]] bool joinable() const noexcept { return id_ != sim::no_fiber; }
  [[nodiscard]] id get_id() const noexcept { return id(id_); }
  void join(detail::site where = detail::site()) {
    sim::executor& ex = detail::running("thread::join", where);
    detail::at(ex, "thread.join", where);
    if (!joinable() || id_ == ex.current().id) [[unlikely]] {
      refuse_join(ex, where);
      return;
    }
    const sim::fiber_id target = id_;
    id_ = sim::no_fiber;  // joined from here on, even if this join is cancelled
    ex.join(target);
  }
  void detach(detail::site where = detail::site()) {
    sim::executor& ex = detail::running("thread::detach", where);
    if (!joinable()) {
      ex.misuse("detach at " + sim::site(where) + " by " + ex.current_label() + " of a thread that is not joinable");
      return;
    }
    id_ = sim::no_fiber;
  }
  void swap(thread& o) noexcept {
    std::swap(ex_, o.ex_);
    std::swap(id_, o.id_);
  }
  /// The simulated machine's cores so far (each running thread has its own).
  [[nodiscard]] static unsigned hardware_concurrency() noexcept {
    sim::executor* ex = sim::executor::running();
    return ex != nullptr ? ex->cores() : 1;
  }

 private:
  [[nodiscard]] std::string label() const {
    return "#" + std::to_string(id_) + " 'thread'";
  }
  // The misuse reports, out of line: built inline, their strings made every
  // join and destruction save registers for a path almost never taken.
  [[gnu::cold, gnu::noinline]] void refuse_join(sim::executor& ex, const detail::site& where) const {
    if (!joinable()) {
      ex.misuse("join at " + sim::site(where) + " by " + ex.current_label() +
                " of a thread that is not joinable (joined already, detached, or never started)");
    } else {
      ex.misuse("thread " + label() + " joins itself at " + sim::site(where) + " (std: resource_deadlock_would_occur)");
    }
  }
  [[gnu::cold, gnu::noinline]] void destroyed_joinable() const {
    ex_->misuse("thread " + label() + " destroyed while joinable (neither joined nor detached)");
  }

  sim::executor* ex_ = nullptr;
  sim::fiber_id id_ = sim::no_fiber;
};

inline void swap(thread& a, thread& b) noexcept { a.swap(b); }

/// Names the calling thread in reports and histories ("#2 'consumer-1'");
/// threads start as 'thread'. lockstep's own (std::thread has no name), so
/// code that also builds against std calls it from test code only. The name
/// never reaches a trace: renaming changes no hash.
inline void name_this_thread(std::string name, detail::site where = detail::site()) {
  sim::fiber& f = detail::running("name_this_thread", where).current();
  f.name = std::move(name);
  f.fixed_name = nullptr;
}

inline thread::id current_id() {
  sim::executor* ex = sim::executor::running();
  return thread::id(ex != nullptr && ex->in_fiber() ? ex->current().id : sim::no_fiber);
}

}  // namespace lockstep::sim_std

/// As std::thread::id has: ids key unordered containers. The hash is the
/// fiber's number itself, the same on every replay and with every standard
/// library, so a container keyed by thread ids iterates in the same order
/// run after run (its order still depends on the library's bucket scheme).
template <>
struct std::hash<lockstep::sim_std::thread::id> {  // determinism-rules: allow (a specialisation, no std hash used)
  using id = lockstep::sim_std::thread::id;          // determinism-rules: allow (sim_std's thread, not std's)
  std::size_t operator()(id i) const noexcept { return i.value(); }
};
