// std::mutex, std::timed_mutex, std::recursive_mutex, std::recursive_timed_mutex
// and std::call_once, simulated. Unlike sim::mutex (first come, first served,
// for the engine's exact traces) these may be barged, as real mutexes are:
// unlock frees the mutex and wakes one waiter, and whichever thread the
// schedule runs first takes it (the unlocking thread included). Unlocking a
// mutex one does not own, locking a non-recursive one twice and destroying a
// locked one fail the run, naming the threads and lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "../executor.hpp"
#include "chrono.hpp"
#include "context.hpp"

namespace lockstep::sim_std {

// The lock types and tags work with any of these mutexes as they are.
using std::adopt_lock;
using std::adopt_lock_t;
using std::defer_lock;
using std::defer_lock_t;
using std::try_to_lock;
using std::try_to_lock_t;

namespace detail {

template <class Rep, class Period>
std::int64_t deadline_in(sim::executor& ex, const std::chrono::duration<Rep, Period>& d) {
  const auto ns = std::chrono::ceil<std::chrono::nanoseconds>(d).count();
  return ns <= 0 ? ex.now() : lockstep::deadline_after(ex.now(), ns);
}
template <class Duration>
std::int64_t deadline_at(const std::chrono::time_point<chrono::steady_clock, Duration>& t) {
  return std::chrono::ceil<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// What the four mutexes share: an owner, a recursion count, waiters.
class mutex_core {
 public:
  mutex_core(const mutex_core&) = delete;
  mutex_core& operator=(const mutex_core&) = delete;

 protected:
  mutex_core(const char* type, bool recursive, const site& created, const char* name)
      : ex_(&running(type, created)), id_(ex_->next_object_id()), type_(type), name_(name), created_(created),
        recursive_(recursive) {
    label(*ex_, id_, type, name, created);
  }
  ~mutex_core() {
    if ((owner_ != sim::no_fiber || !waiters_.empty()) && !stolen_) [[unlikely]] destroyed_in_use();
  }

  /// Takes the mutex, waiting until `deadline` at most; false when it passed.
  bool acquire(const char* op, const site& where, std::optional<std::int64_t> deadline) {
    sim::executor& ex = *ex_;
    at(ex, op, where);
    ex.schedule_point(id_);
    ex.touch(id_);
    const sim::fiber_id me = ex.current().id;
    if (owner_ == me) {
      if (recursive_) {
        ++depth_;
        return true;
      }
      self_deadlock(ex, op, where);
      return false;
    }
    while (owner_ != sim::no_fiber) {
      if (ex.current().cancel_requested) {
        // The run is over and being torn down (nothing else cancels a
        // sim_std thread): a thread waiting here, as in a deadlock, may never
        // get the mutex, and may be in a destructor, where a throw would end
        // the process. It takes the mutex anyway and runs on to its next
        // await point; ownership is not checked from here on.
        stolen_ = true;
        break;
      }
      if (deadline && ex.now() >= *deadline) return false;
      ex.block(op, id_, &waiters_, deadline, true, false);
    }
    owner_ = me;
    depth_ = 1;
    if (sim::happens_before* hb = ex.clocks()) hb->acquire(me, id_);  // after the last unlock
    return true;
  }

  bool try_acquire(const char* op, const site& where) {
    sim::executor& ex = *ex_;
    at(ex, op, where);
    ex.schedule_point(id_);
    ex.touch(id_);
    const sim::fiber_id me = ex.current().id;
    if (owner_ == me && recursive_) {
      ++depth_;
      return true;
    }
    if (owner_ != sim::no_fiber) return false;  // a failed try_lock orders nothing
    owner_ = me;
    depth_ = 1;
    if (sim::happens_before* hb = ex.clocks()) hb->acquire(me, id_);
    return true;
  }

  void release(const site& where) {
    sim::executor& ex = *ex_;
    at(ex, "mutex.unlock", where);
    ex.schedule_point(id_);
    ex.touch(id_);
    const sim::fiber_id me = ex.current().id;
    if (owner_ != me && !stolen_) [[unlikely]] {
      foreign_unlock(ex, where);
      return;
    }
    if (owner_ == me && --depth_ > 0) return;
    if (sim::happens_before* hb = ex.clocks()) hb->release(me, id_);  // what the next lock acquires
    owner_ = sim::no_fiber;
    ex.wake_one(waiters_, false);  // it competes for the mutex with whoever runs first
  }

  // The misuse reports, out of line: built inline, their strings made every
  // lock, unlock and destruction save registers for a path almost never taken.
  [[gnu::cold, gnu::noinline]] void destroyed_in_use() const {
    if (owner_ != sim::no_fiber) {
      ex_->misuse(object_name(type_, created_, name_) + " destroyed while locked by #" + std::to_string(owner_));
    } else {
      ex_->misuse(object_name(type_, created_, name_) + " destroyed while threads wait to lock it");
    }
  }
  [[gnu::cold, gnu::noinline]] void self_deadlock(sim::executor& ex, const char* op, const site& where) const {
    ex.misuse(std::string(op) + " at " + sim::site(where) + " by " + ex.current_label() + " of " +
              object_name(type_, created_, name_) + ", which it holds already (a self-deadlock)");
  }
  [[gnu::cold, gnu::noinline]] void foreign_unlock(sim::executor& ex, const site& where) const {
    ex.misuse("unlock at " + sim::site(where) + " by " + ex.current_label() + " of " + object_name(type_, created_, name_) +
              (owner_ == sim::no_fiber ? ", which is not locked" : ", which #" + std::to_string(owner_) + " holds"));
  }

  sim::executor* ex_;
  std::uint64_t id_;
  const char* type_;
  const char* name_;  // the program's, or null
  site created_;
  bool recursive_;
  sim::fiber_id owner_ = sim::no_fiber;
  std::uint32_t depth_ = 0;
  bool stolen_ = false;  // taken in teardown by a thread that waited for it
  sim::wait_queue waiters_;
};

}  // namespace detail

class mutex : detail::mutex_core {
 public:
  explicit mutex(detail::site created = detail::site()) : mutex_core("mutex", false, created, nullptr) {}
  /// Named in reports: "mutex 'accounts' created at bank.cpp:12" (a string that outlives it).
  explicit mutex(const char* name, detail::site created = detail::site()) : mutex_core("mutex", false, created, name) {}
  void lock(detail::site where = detail::site()) { acquire("mutex.lock", where, std::nullopt); }
  bool try_lock(detail::site where = detail::site()) { return try_acquire("mutex.try_lock", where); }
  void unlock(detail::site where = detail::site()) { release(where); }
};

class recursive_mutex : detail::mutex_core {
 public:
  explicit recursive_mutex(detail::site created = detail::site())
      : mutex_core("recursive_mutex", true, created, nullptr) {}
  explicit recursive_mutex(const char* name, detail::site created = detail::site())
      : mutex_core("recursive_mutex", true, created, name) {}
  void lock(detail::site where = detail::site()) { acquire("mutex.lock", where, std::nullopt); }
  bool try_lock(detail::site where = detail::site()) { return try_acquire("mutex.try_lock", where); }
  void unlock(detail::site where = detail::site()) { release(where); }
};

namespace detail {
/// timed_mutex and recursive_timed_mutex: waits bounded by the virtual clock.
template <bool Recursive>
class timed_mutex_of : mutex_core {
 public:
  explicit timed_mutex_of(site created = site())
      : mutex_core(Recursive ? "recursive_timed_mutex" : "timed_mutex", Recursive, created, nullptr) {}
  explicit timed_mutex_of(const char* name, site created = site())
      : mutex_core(Recursive ? "recursive_timed_mutex" : "timed_mutex", Recursive, created, name) {}
  void lock(site where = site()) { acquire("mutex.lock", where, std::nullopt); }
  bool try_lock(site where = site()) { return try_acquire("mutex.try_lock", where); }
  void unlock(site where = site()) { release(where); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d, site where = site()) {
    return acquire("mutex.try_lock_for", where, deadline_in(*ex_, d));
  }
  template <class Duration>
  bool try_lock_until(const std::chrono::time_point<chrono::steady_clock, Duration>& t, site where = site()) {
    return acquire("mutex.try_lock_until", where, deadline_at(t));
  }
};
}  // namespace detail

using timed_mutex = detail::timed_mutex_of<false>;
using recursive_timed_mutex = detail::timed_mutex_of<true>;

namespace detail {
/// m.lock(where) when the mutex takes the caller's line (sim_std's do), else m.lock().
template <class M>
void lock_at(M& m, const site& where) {
  if constexpr (requires { m.lock(where); }) {
    m.lock(where);
  } else {
    m.lock();
  }
}
template <class M>
void unlock_at(M& m, const site& where) {
  if constexpr (requires { m.unlock(where); }) {
    m.unlock(where);
  } else {
    m.unlock();
  }
}
template <class M>
bool try_lock_at(M& m, const site& where) {
  if constexpr (requires { m.try_lock(where); }) {
    return m.try_lock(where);
  } else {
    return m.try_lock();
  }
}
}  // namespace detail

/// std::lock_guard, taking the caller's line: a report names the line of the
/// guard, not a line inside the standard library's header. Its unlock is
/// reported at the same line.
template <class M>
class lock_guard {
 public:
  using mutex_type = M;
  explicit lock_guard(M& m, detail::site where = detail::site()) : m_(m), where_(where) { detail::lock_at(m, where); }
  lock_guard(M& m, adopt_lock_t, detail::site where = detail::site()) : m_(m), where_(where) {}
  ~lock_guard() { detail::unlock_at(m_, where_); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  M& m_;
  detail::site where_;
};

namespace detail {

/// Several lockables taken and given back at one line of the caller's: the
/// algorithm of std::lock and std::try_lock, written here so that each lock,
/// try and unlock is reported at that line (std's report a line inside
/// <mutex>).
template <class... Ms>
class lock_set {
 public:
  lock_set(std::tuple<Ms&...> ms, site where) : ms_(ms), where_(where) {}

  /// std::lock: lock one, try the others; on a failure release what was
  /// taken and begin again with the one that failed. Two threads taking the
  /// same mutexes in opposite orders do not deadlock.
  void lock_all() {
    if constexpr (sizeof...(Ms) == 1) {
      lock_at(std::get<0>(ms_), where_);
    } else if constexpr (sizeof...(Ms) > 1) {
      std::size_t first = 0;
      for (;;) {
        lock_index(first);
        std::size_t failed = sizeof...(Ms);
        for (std::size_t i = 0; i < sizeof...(Ms) && failed == sizeof...(Ms); ++i) {
          if (i != first && !try_index(i)) failed = i;
        }
        if (failed == sizeof...(Ms)) return;
        for (std::size_t i = 0; i < sizeof...(Ms); ++i) {  // release what was taken, then begin at the failure
          if (i == first || i < failed) unlock_index(i);
        }
        first = failed;
      }
    }
  }
  /// std::try_lock: try each in order; -1 when all were taken, else the
  /// index of the first that was not (those before it released again).
  int try_all() {
    for (std::size_t i = 0; i < sizeof...(Ms); ++i) {
      if (!try_index(i)) {
        for (std::size_t j = 0; j < i; ++j) unlock_index(j);
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  void unlock_all() {
    std::apply([this](auto&... m) { (unlock_at(m, where_), ...); }, ms_);
  }

 private:
  template <std::size_t... I>
  void for_index(std::size_t i, std::index_sequence<I...>, int what) {
    (void)((I == i ? (act(std::get<I>(ms_), what), true) : false) || ...);
  }
  template <class M>
  void act(M& m, int what) {
    if (what == 0) lock_at(m, where_);
    if (what == 1) last_try_ = try_lock_at(m, where_);
    if (what == 2) unlock_at(m, where_);
  }
  void lock_index(std::size_t i) { for_index(i, std::index_sequence_for<Ms...>{}, 0); }
  bool try_index(std::size_t i) {
    for_index(i, std::index_sequence_for<Ms...>{}, 1);
    return last_try_;
  }
  void unlock_index(std::size_t i) { for_index(i, std::index_sequence_for<Ms...>{}, 2); }

  std::tuple<Ms&...> ms_;
  site where_;
  bool last_try_ = false;
};

}  // namespace detail

/// std::scoped_lock, taking the caller's line as lock_guard does. Several
/// mutexes are taken as std::lock takes them (detail::lock_set), so two
/// scoped_locks naming the same mutexes in opposite orders do not deadlock;
/// every lock, try and unlock is reported at the guard's line.
template <class... Ms>
class scoped_lock {
 public:
  explicit scoped_lock(Ms&... ms, detail::site where = detail::site()) : set_(std::tie(ms...), where) {
    set_.lock_all();
  }
  scoped_lock(adopt_lock_t, Ms&... ms, detail::site where = detail::site()) : set_(std::tie(ms...), where) {}
  ~scoped_lock() { set_.unlock_all(); }
  scoped_lock(const scoped_lock&) = delete;
  scoped_lock& operator=(const scoped_lock&) = delete;

 private:
  detail::lock_set<Ms...> set_;
};
template <class... Ms>
scoped_lock(Ms&...) -> scoped_lock<Ms...>;
template <class... Ms>
scoped_lock(adopt_lock_t, Ms&...) -> scoped_lock<Ms...>;

/// std::lock(a, b, ...) at the caller's line. A function cannot take the
/// caller's line after a pack of lockables, so this is a class whose
/// constructor does the work: `cc::lock(a, b);` reads as std's call and
/// leaves the mutexes locked (the temporary does nothing when it goes).
template <class M1, class M2, class... Ms>
class lock {
 public:
  lock(M1& a, M2& b, Ms&... ms, detail::site where = detail::site()) {
    detail::lock_set<M1, M2, Ms...>(std::tie(a, b, ms...), where).lock_all();
  }
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;
};
template <class M1, class M2, class... Ms>
lock(M1&, M2&, Ms&...) -> lock<M1, M2, Ms...>;

/// std::try_lock(a, b, ...) at the caller's line, a class for the same
/// reason as lock: it converts to std's result, -1 when every one was
/// locked, else the index of the first that was not.
template <class M1, class M2, class... Ms>
class try_lock {
 public:
  try_lock(M1& a, M2& b, Ms&... ms, detail::site where = detail::site())
      : result_(detail::lock_set<M1, M2, Ms...>(std::tie(a, b, ms...), where).try_all()) {}
  operator int() const { return result_; }  // NOLINT: converts as std's int result reads

 private:
  int result_;
};
template <class M1, class M2, class... Ms>
try_lock(M1&, M2&, Ms&...) -> try_lock<M1, M2, Ms...>;

/// std::unique_lock, whose locking constructor takes the caller's line (the
/// rest is std's: deferred, try, adopted and timed locking, unlock, release).
template <class M>
class unique_lock : public std::unique_lock<M> {
  using base = std::unique_lock<M>;

 public:
  using base::base;
  unique_lock() noexcept = default;
  explicit unique_lock(M& m, detail::site where = detail::site()) : base(locked(m, where), std::adopt_lock) {}

 private:
  static M& locked(M& m, const detail::site& where) {
    detail::lock_at(m, where);
    return m;
  }
};

/// std::once_flag: the first caller runs the function while later callers
/// wait; a call that throws lets the next caller try again.
class once_flag {
 public:
  once_flag() noexcept = default;
  once_flag(const once_flag&) = delete;
  once_flag& operator=(const once_flag&) = delete;

 private:
  template <class F, class... Args>
  friend void call_once(once_flag& flag, F&& f, Args&&... args);
  enum class state : std::uint8_t { idle, running, done };
  state state_ = state::idle;
  std::uint64_t id_ = 0;
  sim::wait_queue waiters_;
};

template <class F, class... Args>
void call_once(once_flag& flag, F&& f, Args&&... args) {
  sim::executor& ex = detail::running("call_once", detail::site());
  if (flag.id_ == 0) flag.id_ = ex.next_object_id();
  ex.schedule_point(flag.id_);
  ex.touch(flag.id_);
  while (flag.state_ == once_flag::state::running) {
    ex.block("call_once", flag.id_, &flag.waiters_, std::nullopt, true);
  }
  if (flag.state_ == once_flag::state::done) {
    // The call that completed happens before every call that returns here.
    if (sim::happens_before* hb = ex.clocks()) hb->acquire(ex.current().id, flag.id_);
    return;
  }
  flag.state_ = once_flag::state::running;
  try {
    std::invoke(std::forward<F>(f), std::forward<Args>(args)...);
  } catch (...) {
    flag.state_ = once_flag::state::idle;
    ex.wake_one(flag.waiters_, false);  // an exceptional call: the next caller tries
    throw;
  }
  ex.schedule_point(flag.id_);
  ex.touch(flag.id_);
  flag.state_ = once_flag::state::done;
  if (sim::happens_before* hb = ex.clocks()) hb->release(ex.current().id, flag.id_);
  ex.wake_all(flag.waiters_, false);
}

}  // namespace lockstep::sim_std
