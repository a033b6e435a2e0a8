// std::shared_mutex and std::shared_timed_mutex, simulated: one writer or
// many readers; waiters of either kind compete when it is released, as with
// the other sim_std mutexes (no fairness is promised, as the standard promises
// none). Unlocking what one does not hold fails the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>

#include "../executor.hpp"
#include "chrono.hpp"
#include "context.hpp"
#include "mutex.hpp"

namespace lockstep::sim_std {

using std::shared_lock;

namespace detail {

template <bool Timed>
class shared_mutex_of {
 public:
  explicit shared_mutex_of(site created = site()) : shared_mutex_of(nullptr, created) {}
  explicit shared_mutex_of(const char* name, site created = site())
      : ex_(&running("shared_mutex", created)), id_(ex_->next_object_id()), created_(created), name_(name) {
    label(*ex_, id_, "shared_mutex", name, created);
  }
  shared_mutex_of(const shared_mutex_of&) = delete;
  shared_mutex_of& operator=(const shared_mutex_of&) = delete;
  ~shared_mutex_of() {
    if (!stolen_ && (writer_ != sim::no_fiber || !readers_.empty())) {
      ex_->misuse(object_name("shared_mutex", created_, name_) + " destroyed while locked");
    }
  }

  void lock(site where = site()) { exclusive("shared_mutex.lock", where, std::nullopt); }
  bool try_lock(site where = site()) {
    enter("shared_mutex.try_lock", where);
    if (writer_ != sim::no_fiber || !readers_.empty()) return false;
    writer_ = me();
    acquired(true);
    return true;
  }
  void unlock(site where = site()) {
    enter("shared_mutex.unlock", where);
    if (writer_ != me() && !stolen_) return refuse("unlock", where, "does not hold it exclusively");
    if (sim::happens_before* hb = ex_->clocks()) hb->release(me(), id_);  // for readers and writers
    writer_ = sim::no_fiber;
    ex_->wake_all(waiters_, false);
  }
  void lock_shared(site where = site()) { shared("shared_mutex.lock_shared", where, std::nullopt); }
  bool try_lock_shared(site where = site()) {
    enter("shared_mutex.try_lock_shared", where);
    if (writer_ != sim::no_fiber) return false;
    ++readers_[me()];
    acquired(false);
    return true;
  }
  void unlock_shared(site where = site()) {
    enter("shared_mutex.unlock_shared", where);
    const auto it = readers_.find(me());
    if (it == readers_.end()) {
      if (!stolen_) refuse("unlock_shared", where, "does not hold it shared");
      return;
    }
    // A reader's section happens before the next writer's, not before
    // other readers': readers publish under a key of their own.
    if (sim::happens_before* hb = ex_->clocks()) hb->release_merge(me(), readers_key());
    if (--it->second == 0) readers_.erase(it);
    if (readers_.empty()) ex_->wake_all(waiters_, false);
  }
  template <class Rep, class Period, bool T = Timed, class = std::enable_if_t<T>>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d, site where = site()) {
    return exclusive("shared_mutex.try_lock_for", where, deadline_in(*ex_, d));
  }
  template <class Duration, bool T = Timed, class = std::enable_if_t<T>>
  bool try_lock_until(const std::chrono::time_point<chrono::steady_clock, Duration>& t, site where = site()) {
    return exclusive("shared_mutex.try_lock_until", where, deadline_at(t));
  }
  template <class Rep, class Period, bool T = Timed, class = std::enable_if_t<T>>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d, site where = site()) {
    return shared("shared_mutex.try_lock_shared_for", where, deadline_in(*ex_, d));
  }
  template <class Duration, bool T = Timed, class = std::enable_if_t<T>>
  bool try_lock_shared_until(const std::chrono::time_point<chrono::steady_clock, Duration>& t,
                             site where = site()) {
    return shared("shared_mutex.try_lock_shared_until", where, deadline_at(t));
  }

 private:
  sim::fiber_id me() const { return ex_->current().id; }
  void enter(const char* op, const site& where) {
    at(*ex_, op, where);
    ex_->schedule_point(id_);
    ex_->touch(id_);
  }
  void refuse(const char* op, const site& where, const char* why) {
    ex_->misuse(std::string(op) + " at " + sim::site(where) + " by " + ex_->current_label() + " of " +
                object_name("shared_mutex", created_, name_) + ", which it " + why);
  }
  bool exclusive(const char* op, const site& where, std::optional<std::int64_t> deadline) {
    enter(op, where);
    if (writer_ == me() || readers_.contains(me())) {
      refuse(op, where, "holds already (a self-deadlock)");
      return false;
    }
    while (writer_ != sim::no_fiber || !readers_.empty()) {
      if (ex_->current().cancel_requested) {  // teardown: as sim_std::mutex, taken anyway
        stolen_ = true;
        break;
      }
      if (deadline && ex_->now() >= *deadline) return false;
      ex_->block(op, id_, &waiters_, deadline, true, false);
    }
    writer_ = me();
    acquired(true);
    return true;
  }
  bool shared(const char* op, const site& where, std::optional<std::int64_t> deadline) {
    enter(op, where);
    if (writer_ == me()) {
      refuse(op, where, "holds exclusively already (a self-deadlock)");
      return false;
    }
    while (writer_ != sim::no_fiber) {
      if (ex_->current().cancel_requested) {
        stolen_ = true;
        break;
      }
      if (deadline && ex_->now() >= *deadline) return false;
      ex_->block(op, id_, &waiters_, deadline, true, false);
    }
    ++readers_[me()];
    acquired(false);
    return true;
  }
  /// The race detector's key for what readers publish (id_ is the writers').
  [[nodiscard]] std::uint64_t readers_key() const { return id_ | (std::uint64_t{1} << 58); }
  /// Ordered after the last writer, and a writer after the readers too.
  void acquired(bool exclusive) {
    sim::happens_before* hb = ex_->clocks();
    if (hb == nullptr) return;
    hb->acquire(me(), id_);
    if (exclusive) hb->acquire(me(), readers_key());
  }

  sim::executor* ex_;
  std::uint64_t id_;
  site created_;
  const char* name_;  // the program's, or null
  sim::fiber_id writer_ = sim::no_fiber;
  bool stolen_ = false;  // taken in teardown by a thread that waited for it (see sim_std::mutex)
  std::map<sim::fiber_id, std::uint32_t> readers_;  // ordered: nothing here reaches a trace, but keep it so
  sim::wait_queue waiters_;
};

}  // namespace detail

using shared_mutex = detail::shared_mutex_of<false>;
using shared_timed_mutex = detail::shared_mutex_of<true>;

}  // namespace lockstep::sim_std
