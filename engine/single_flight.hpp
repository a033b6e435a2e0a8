// engine/single_flight.hpp — the single-flight table (DESIGN.md §5, probation's
// SingleFlight): however many requests want one key's upstream work, one piece
// of it runs, and every request that joined it reads the same outcome.
//
// A request calls join(key): under the table lock it finds the key's slot or
// inserts a fresh one (then it is the leader and must get the work started),
// and is counted as a waiter by the `waiter` guard it gets back. Whoever does
// the work holds a `resolution` guard, which answers the waiters and retires
// the slot on every way out of the worker: a normal return, an exception, or
// the worker's fiber being cancelled.
//
// Invariants (check_invariants, one comparison per check):
// * a slot's waiter count only changes under the table lock — the lock join
//   takes — so it never underflows, and no request can join a slot between
//   its last waiter leaving and that slot's removal.
// * a slot's state leaves `running` at most once, by compare-exchange: to
//   `cancelled` (won by the last waiter to leave) or to `publishing` (won by
//   the worker just before its point of no return). The loser is refused, so
//   no publication begins after a cancellation and no cancellation abandons a
//   publication that began.
// * a slot in the table is never `cancelled`, and has a waiter unless it is
//   `publishing` (its resolution will retire it).
// * an entry leaves the table only if it still maps to the very slot being
//   retired (identity check), so a stale worker never removes a newer flight.
// * a resolution always stores an outcome with send_replace — which stores
//   even while nobody is subscribed — so a waiter that joined but has not yet
//   subscribed still reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "plant.hpp"
#include "probes.hpp"
#include "runtime.hpp"

namespace lockstep {

/// What happened to one flight, in the order it happened; for traces and oracles.
enum class flight_event : std::uint8_t {
  started,     ///< a join found no slot and inserted one: its caller leads
  cancelled,   ///< the last waiter left before publication began
  publishing,  ///< the worker passed its point of no return
  answered,    ///< the resolution stored the worker's outcome
  abandoned,   ///< the resolution ended unanswered and stored the abandoned value
  retired,     ///< the resolution is done with the slot (removed if still current)
};

template <Runtime R, class K, class V>
class single_flight {
  struct table;

 public:
  /// Called right after each flight_event, from the fiber that caused it
  /// (sometimes under the table lock, sometimes from a destructor): it must
  /// neither throw nor suspend.
  using observer = std::function<void(const K& key, std::uint64_t flight, flight_event event)>;

  /// One piece of work, shared by every request that joined it.
  class slot {
   public:
    slot(R& rt, K key, std::uint64_t id, std::shared_ptr<const observer> obs)
        : rt_(rt),
          key_(std::move(key)),
          id_(id),
          obs_(std::move(obs)),
          state_(rt, state_running),
          waiters_(rt, std::size_t{0}),
          cancel_(rt),
          outcome_(rt, std::nullopt) {}
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;

    /// The worker, once, just before its point of no return; false: the last waiter already cancelled.
    bool begin_publishing() {
      std::uint8_t expected = state_running;
      if (!state_.compare_exchange(expected, state_publishing)) {
        LOCKSTEP_PROBE(rt_, "flight.publish_lost_to_cancel");
        return false;
      }
      LOCKSTEP_PROBE(rt_, "flight.published");
      if constexpr (R::single_threaded) published_ = true;
      emit(flight_event::publishing);
      return true;
    }

    /// The last waiter to leave (the waiter guard calls it); false: publication already began and must finish.
    bool begin_cancel() {
      std::uint8_t expected = state_running;
      if (!state_.compare_exchange(expected, state_cancelled)) {
        LOCKSTEP_PROBE(rt_, "flight.cancel_lost_to_publish");
        return false;
      }
      LOCKSTEP_PROBE(rt_, "flight.cancelled");
      emit(flight_event::cancelled);
      return true;
    }

    /// Await point until the last waiter has left; for a worker that can abandon its work part way.
    void cancelled() { cancel_.cancelled(); }

    /// Await point until the outcome is stored; nullopt only if the outcome's sender is gone without one.
    std::optional<V> wait() {
      auto outcome = outcome_.subscribe();
#ifdef LOCKSTEP_SELFCHECK
      // Counted only for the planted bug that reads it (a plain count: the simulator's).
      struct subscription {
        slot* counted;
        ~subscription() {
          if (counted) --counted->subscribers_;
        }
      } const subscribed{LOCKSTEP_PLANT(flights_send_skips_without_subscribers) ? this : nullptr};
      if (subscribed.counted) ++subscribers_;
#endif
      while (true) {
        std::optional<V> done = outcome.borrow_and_update();
        if (done.has_value()) return done;
        if (!outcome.changed()) return std::nullopt;
      }
    }

    /// This flight's number in its table: 1, 2, ... in the order flights started.
    [[nodiscard]] std::uint64_t id() const { return id_; }
    /// The key this flight is for.
    [[nodiscard]] const K& key() const { return key_; }

   private:
    friend class single_flight;

    /// For join's probe only. One thread (the sim) reads a plain copy of the
    /// transition: state_.load() there is a scheduling point, and a probe must
    /// not change the schedule. Elsewhere the atomic itself is read.
    bool publication_began() {
      if constexpr (R::single_threaded) {
        return published_;
      } else {
        return state_.load() == state_publishing;
      }
    }

    void emit(flight_event event) const noexcept {
      if (obs_ && *obs_) (*obs_)(key_, id_, event);
    }

    /// Stores the outcome for every waiter: send_replace, never a send that
    /// skips when nobody is subscribed yet (a request that joined but has not
    /// reached wait() would then subscribe to a value that stays empty, behind
    /// a sender it is itself keeping alive) — but for the planted bug.
    void publish(std::optional<V> v) {
#ifdef LOCKSTEP_SELFCHECK
      if (LOCKSTEP_PLANT(flights_send_skips_without_subscribers) && subscribers_ == 0) return;  // tokio's send
#endif
      outcome_.send_replace(std::move(v));
    }

    R& rt_;  // for probes only
    K key_;
    std::uint64_t id_;
    std::shared_ptr<const observer> obs_;
    typename R::template atomic<std::uint8_t> state_;
    typename R::template atomic<std::size_t> waiters_;
    // Only wakes a worker parked in cancelled(); the decision is state_.
    typename R::cancellation_token cancel_;
    typename R::template watch<std::optional<V>> outcome_;
    bool published_ = false;  // see publication_began()
#ifdef LOCKSTEP_SELFCHECK
    int subscribers_ = 0;  // only flights_send_skips_without_subscribers counts and reads it
#endif
  };

  /// One request's share of one flight (RAII, move-only): destroying it — the
  /// request finished, or its fiber was cancelled — releases that share and,
  /// for the last share of unpublished work, cancels the work.
  class waiter {
   public:
    waiter(waiter&& other) noexcept(std::is_nothrow_move_constructible_v<K>)
        : flight_(handle_of(other)), key_(std::move(other.key_)), slot_(std::move(other.slot_)) {}
    waiter& operator=(waiter&&) = delete;
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    ~waiter() {
      if (!slot_) return;
      // The join lock: a request cannot join between this decrement and the
      // removal (the planted bug flights_decrement_outside_lock decrements first).
      const bool early = LOCKSTEP_PLANT(flights_decrement_outside_lock);
      std::size_t before = early ? slot_->waiters_.fetch_sub(1) : 0;
      std::lock_guard lock(flight_.t_->mu);
      if (!early) before = slot_->waiters_.fetch_sub(1);
      if (before != 1) {
        LOCKSTEP_PROBE(slot_->rt_, "flight.leave_not_last");
        return;
      }
      // The last one out cancels — unless publication began, which then finishes.
      if (slot_->begin_cancel()) {
        slot_->cancel_.cancel();
        flight_.remove_locked(key_, slot_);
      }
    }

   private:
    friend class single_flight;
    // The source's table handle, moved when nothing after it can throw: a
    // waiter moved from has no slot and never reaches the table, and a handle
    // copy is an atomic count on a line other threads share.
    // A throwing key move must leave the source whole, slot and table both.
    static single_flight handle_of(waiter& other) {
      if constexpr (std::is_nothrow_move_constructible_v<K>) {
        return std::move(other.flight_);
      } else {
        return other.flight_;
      }
    }
    waiter(single_flight flight, K key) : flight_(std::move(flight)), key_(std::move(key)) {}

    single_flight flight_;
    K key_;
    std::shared_ptr<slot> slot_;  // null until counted, and once moved from
  };

  /// Answers the waiters and retires the slot on every way out of the worker
  /// (RAII, move-only). Unanswered at destruction, it stores the abandoned value.
  class resolution {
   public:
    resolution(single_flight flight, K key, std::shared_ptr<slot> work, V abandoned, std::string subject)
        : flight_(std::move(flight)),
          key_(std::move(key)),
          abandoned_(std::move(abandoned)),
          subject_(std::move(subject)),
          slot_(std::move(work)) {
#ifdef LOCKSTEP_SELFCHECK
      if (LOCKSTEP_PLANT(flights_abandon_after_answer)) abandoned_value_ = abandoned_;
#endif
    }
    resolution(resolution&& other)
        : flight_(other.flight_),
          key_(std::move(other.key_)),
          abandoned_(std::move(other.abandoned_)),
          subject_(std::move(other.subject_)),
#ifdef LOCKSTEP_SELFCHECK
          abandoned_value_(std::move(other.abandoned_value_)),
#endif
          slot_(std::move(other.slot_)) {}
    resolution& operator=(resolution&&) = delete;
    resolution(const resolution&) = delete;
    resolution& operator=(const resolution&) = delete;

    /// Stores the outcome for every waiter, present or yet to subscribe, and disarms the abandonment.
    void answer(V outcome) {
      if (!slot_) return;
#ifdef LOCKSTEP_SELFCHECK
      if (LOCKSTEP_PLANT(flights_recycled_outcome)) {
        std::lock_guard lock(flight_.t_->mu);
        flight_.t_->last_answer.insert_or_assign(key_, outcome);  // the cell the key's next flight starts from
      }
#endif
      slot_->publish(std::optional<V>(std::move(outcome)));
      abandoned_.reset();
      LOCKSTEP_PROBE(slot_->rt_, "flight.answered");
      slot_->emit(flight_event::answered);
    }

    /// The key as a log line should spell it.
    [[nodiscard]] const std::string& subject() const { return subject_; }

    ~resolution() {
      if (!slot_) return;
      const bool abandoned = abandoned_.has_value();
      if (abandoned) {
        // The worker ended without an outcome (threw, was cancelled, or gave
        // up): fail its waiters rather than leave them parked forever.
        slot_->publish(std::move(abandoned_));
        abandoned_.reset();
        LOCKSTEP_PROBE(slot_->rt_, "flight.abandoned");
        slot_->emit(flight_event::abandoned);
      }
#ifdef LOCKSTEP_SELFCHECK
      else if (LOCKSTEP_PLANT(flights_abandon_after_answer)) {
        slot_->publish(abandoned_value_);  // the planted bug: the answer overwritten
      }
#endif
      // Then stop accepting joiners: the next request for the key starts fresh.
      flight_.finish(key_, slot_, abandoned);
    }

   private:
    single_flight flight_;
    K key_;
    std::optional<V> abandoned_;  // engaged until answered: engaged at destruction *is* abandonment
    std::string subject_;
#ifdef LOCKSTEP_SELFCHECK
    std::optional<V> abandoned_value_;  // only flights_abandon_after_answer keeps it past the answer
#endif
    std::shared_ptr<slot> slot_;  // declared last: moved last, so a throwing move leaves the source armed
  };

  /// What join hands back: the flight, whether the caller must start it, and the caller's share.
  struct joined {
    std::shared_ptr<slot> work;
    bool leader;
    waiter guard;
  };

  /// An empty table; copies of the result share it. `obs` sees every flight_event.
  explicit single_flight(R& rt, observer obs = {})
      : t_(std::make_shared<table>(rt, obs ? std::make_shared<const observer>(std::move(obs)) : nullptr)) {}

  /// Joins the key's flight, or starts one (leader == true) if none is in the table.
  joined join(K key) {
    waiter share(*this, key);  // every copy that may throw happens before the count changes
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    bool leader = false;
    if (it == t_->inflight.end()) {
      auto fresh = std::make_shared<slot>(t_->rt, key, t_->next_id + 1, t_->obs);
      if (t_->spare) {  // the last retired entry's node: no allocation
        t_->spare.key() = std::move(key);
        t_->spare.mapped() = std::move(fresh);
        it = t_->inflight.insert(std::move(t_->spare)).position;
      } else {
        it = t_->inflight.emplace(std::move(key), std::move(fresh)).first;
      }
      ++t_->next_id;
#ifdef LOCKSTEP_SELFCHECK
      if (LOCKSTEP_PLANT(flights_recycled_outcome)) {
        // The planted bug: a recycled outcome cell is not cleared, so the fresh
        // flight's waiters read the key's last answer before its worker runs.
        if (const auto last = t_->last_answer.find(it->first); last != t_->last_answer.end()) {
          it->second->publish(std::optional<V>(last->second));
        }
      }
#endif
      leader = true;
      LOCKSTEP_PROBE(t_->rt, "flight.join_started");
      it->second->emit(flight_event::started);
    } else if constexpr (R::probes_enabled) {
      if (it->second->publication_began()) {
        LOCKSTEP_PROBE(t_->rt, "flight.join_state_publishing");
      } else {
        LOCKSTEP_PROBE(t_->rt, "flight.join_state_running");
      }
    }
    it->second->waiters_.fetch_add(1);
    share.slot_ = it->second;
    return joined{it->second, leader, std::move(share)};
  }

  /// How many requests share the key's flight now; 0 when none is in the table.
  std::size_t waiting_on(const K& key) const {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    return it == t_->inflight.end() ? 0 : it->second->waiters_.load();
  }

  /// Whether the key's flight in the table has passed its point of no return.
  bool publishing(const K& key) const {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    return it != t_->inflight.end() && it->second->state_.load() == state_publishing;
  }

  /// How many keys have a flight in the table.
  std::size_t in_flight() const {
    std::lock_guard lock(t_->mu);
    return t_->inflight.size();
  }

  /// How many resolutions ended without an answer (the seed logs each as an error).
  std::uint64_t abandoned_total() const {
    std::lock_guard lock(t_->mu);
    return t_->abandoned;
  }

  /// Throws std::logic_error naming the first broken invariant (see the file comment).
  void check_invariants() const {
    std::lock_guard lock(t_->mu);
    for (auto& [key, held] : t_->inflight) {
      const std::uint8_t state = held->state_.load();
      const std::size_t count = held->waiters_.load();
      if (!(state != state_cancelled)) throw std::logic_error("a cancelled slot is still in the table");
      if (!(count > 0 || state == state_publishing)) throw std::logic_error("an unpublished slot without waiters is in the table");
      if (!(held->id_ <= t_->next_id)) throw std::logic_error("a slot's id was never issued");
    }
  }

 private:
  // A slot's life: state_running until exactly one transition out wins.
  static constexpr std::uint8_t state_running = 0;
  static constexpr std::uint8_t state_cancelled = 1;
  static constexpr std::uint8_t state_publishing = 2;

  struct table {
    table(R& r, std::shared_ptr<const observer> o) : rt(r), mu(r), obs(std::move(o)) {}
    R& rt;
    typename R::mutex mu;
    std::map<K, std::shared_ptr<slot>> inflight;  // guarded by mu, as is every field below
    // One retired entry's node, kept for the next flight: std::map allocates a
    // node per entry where the seed's HashMap allocates none, and a steady
    // stream of flights would pay a malloc and a free for each.
    typename std::map<K, std::shared_ptr<slot>>::node_type spare;
    std::uint64_t next_id = 0;
    std::uint64_t abandoned = 0;
#ifdef LOCKSTEP_SELFCHECK
    std::map<K, V> last_answer;  // only flights_recycled_outcome fills it
#endif
    std::shared_ptr<const observer> obs;  // null without an observer: each slot copies it, and a null copy costs no count
  };

  /// Removes the key's entry only if it is still `held` (a newer flight may own the key). Caller holds mu.
  void remove_locked(const K& key, const std::shared_ptr<slot>& held) const {
    auto it = t_->inflight.find(key);
    if (it == t_->inflight.end() || it->second != held) return;
    auto node = t_->inflight.extract(it);
    node.mapped().reset();  // the table's share of the slot ends here, as an erase would end it
    if (!t_->spare) t_->spare = std::move(node);
  }

  /// The resolution's last act: count an abandonment, retire the slot if still current.
  void finish(const K& key, const std::shared_ptr<slot>& held, bool abandoned) const {
    std::lock_guard lock(t_->mu);
    if (abandoned || LOCKSTEP_PLANT(flights_count_answers_as_abandoned)) ++t_->abandoned;
    if constexpr (R::probes_enabled) {  // a lookup only a probe needs: none where probes are off
      const auto it = t_->inflight.find(key);
      if (it == t_->inflight.end()) {
        LOCKSTEP_PROBE(t_->rt, "flight.resolution_after_removal");
      } else if (it->second != held) {
        LOCKSTEP_PROBE(t_->rt, "flight.stale_resolution_kept_newer");
      }
    }
    if (LOCKSTEP_PLANT(flights_removal_without_identity_check)) {
      // The planted bug: whatever slot holds the key goes, a newer flight's too.
      if (const auto it = t_->inflight.find(key); it != t_->inflight.end()) {
        const std::shared_ptr<slot> current = it->second;
        remove_locked(key, current);
      }
    } else if (!LOCKSTEP_PLANT(flights_keep_retired_slot)) {  // the planted bug: the retired slot stays
      remove_locked(key, held);
    }
    held->emit(flight_event::retired);
  }

  std::shared_ptr<table> t_;
};

}  // namespace lockstep
