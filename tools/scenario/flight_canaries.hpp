// tools/scenario/flight_canaries.hpp — what the single-flight race tests
// (engine/tests/test_single_flight_races.cpp) and the scenario flights driver
// (flights_driver.cpp) share: the deliberately broken tables their
// canaries run, each flight's story as the table's observer reports it, and
// the ordering oracles checked at the instant each transition happens.
//
// Failure reporting: every broken rule goes to the caller's
// `violate(oracle, message)`. The observer runs under the table lock or in
// destructors, where nothing may throw, so a violate must only record; each
// user reports afterwards (BOOST_TEST in the tests). Invariant: a broken table makes the same primitive operations as
// engine/single_flight.hpp but for its one defect, so a canary changes only
// what that defect touches.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/single_flight.hpp"

namespace lockstep::models::probation {

// --- canaries: the table with one deliberate defect each ----------------------

enum class bug : std::uint8_t {
  send_skips_without_subscribers,  ///< publishes like tokio's `send`, not send_replace
  decrement_outside_lock,          ///< the waiter guard decrements before taking the table lock
  removal_without_identity_check,  ///< a resolution removes whatever slot holds its key
  keep_retired_slot,               ///< a resolution leaves its slot in the table (scenario canary: servable)
  abandon_after_answer,            ///< a resolution also stores "abandoned" after an answer (scenario canary: same_value)
  count_answers_as_abandoned,      ///< abandoned_total() counts every resolution, answered or not (scenario canary: counters)
  recycled_outcome,                ///< a key's next flight starts holding the last answer its key published (scenario canary: same_value)
};

template <class R, class K, class V, bug B>
class broken_flight {
  struct table;

 public:
  using observer = typename single_flight<R, K, V>::observer;

  class slot {
   public:
    slot(R& rt, K key, std::uint64_t id, std::shared_ptr<const observer> obs)
        : key_(key), id_(id), obs_(std::move(obs)), state_(rt, 0), waiters_(rt, 0), cancel_(rt), outcome_(rt, std::nullopt) {}
    bool begin_publishing() { return transition(2, flight_event::publishing); }
    bool begin_cancel() { return transition(1, flight_event::cancelled); }
    void cancelled() { cancel_.cancelled(); }
    std::optional<V> wait() {
      auto outcome = outcome_.subscribe();
      struct subscription {
        int& n;
        explicit subscription(int& c) : n(c) { ++n; }
        ~subscription() { --n; }
      } counted(subscribers_);
      while (true) {
        std::optional<V> done = outcome.borrow_and_update();
        if (done.has_value()) return done;
        if (!outcome.changed()) return std::nullopt;
      }
    }
    [[nodiscard]] std::uint64_t id() const { return id_; }

   private:
    friend class broken_flight;
    bool transition(std::uint8_t to, flight_event e) {
      std::uint8_t expected = 0;
      if (!state_.compare_exchange(expected, to)) return false;
      emit(e);
      return true;
    }
    void emit(flight_event e) const { (*obs_)(key_, id_, e); }
    // tokio's watch::Sender::send: refused, and nothing stored, with no receiver.
    void publish(std::optional<V> v) {
      if (B == bug::send_skips_without_subscribers && subscribers_ == 0) return;
      outcome_.send_replace(std::move(v));
    }
    K key_;
    std::uint64_t id_;
    std::shared_ptr<const observer> obs_;
    typename R::template atomic<std::uint8_t> state_;
    typename R::template atomic<std::size_t> waiters_;
    typename R::cancellation_token cancel_;
    typename R::template watch<std::optional<V>> outcome_;
    int subscribers_ = 0;
  };

  class waiter {
   public:
    waiter(broken_flight f, K key, std::shared_ptr<slot> s) : f_(std::move(f)), key_(key), slot_(std::move(s)) {}
    waiter(waiter&& o) noexcept : f_(o.f_), key_(o.key_), slot_(std::move(o.slot_)) {}
    ~waiter() {
      if (!slot_) return;
      std::size_t before = 0;
      if (B == bug::decrement_outside_lock) before = slot_->waiters_.fetch_sub(1);
      std::lock_guard lock(f_.t_->mu);
      if (B != bug::decrement_outside_lock) before = slot_->waiters_.fetch_sub(1);
      if (before != 1) return;
      if (slot_->begin_cancel()) {
        slot_->cancel_.cancel();
        auto it = f_.t_->inflight.find(key_);
        if (it != f_.t_->inflight.end() && it->second == slot_) f_.t_->inflight.erase(it);
      }
    }

   private:
    broken_flight f_;
    K key_;
    std::shared_ptr<slot> slot_;
  };

  class resolution {
   public:
    resolution(broken_flight f, K key, std::shared_ptr<slot> s, V abandoned, std::string)
        : f_(std::move(f)), key_(key), abandoned_(abandoned), abandoned_value_(abandoned), slot_(std::move(s)) {}
    resolution(resolution&& o)
        : f_(o.f_), key_(o.key_), abandoned_(o.abandoned_), abandoned_value_(o.abandoned_value_), slot_(std::move(o.slot_)) {}
    void answer(V v) {
      if (B == bug::recycled_outcome) {
        std::lock_guard lock(f_.t_->mu);
        f_.t_->last_answer.insert_or_assign(key_, v);  // the cell the key's next flight will start from
      }
      slot_->publish(std::optional<V>(v));
      abandoned_.reset();
      slot_->emit(flight_event::answered);
    }
    ~resolution() {
      if (!slot_) return;
      const bool unanswered = abandoned_.has_value();
      if (abandoned_) {
        slot_->publish(abandoned_);
        slot_->emit(flight_event::abandoned);
      } else if (B == bug::abandon_after_answer) {
        slot_->publish(abandoned_value_);
      }
      std::lock_guard lock(f_.t_->mu);
      if (unanswered || B == bug::count_answers_as_abandoned) ++f_.t_->abandoned;
      auto it = f_.t_->inflight.find(key_);
      const bool identity = B != bug::removal_without_identity_check;
      if (B != bug::keep_retired_slot && it != f_.t_->inflight.end() && (!identity || it->second == slot_))
        f_.t_->inflight.erase(it);
      slot_->emit(flight_event::retired);
    }

   private:
    broken_flight f_;
    K key_;
    std::optional<V> abandoned_;
    V abandoned_value_;  // abandon_after_answer stores it even once answered
    std::shared_ptr<slot> slot_;
  };

  struct joined {
    std::shared_ptr<slot> work;
    bool leader;
    waiter guard;
  };

  broken_flight(R& rt, observer obs) : t_(std::make_shared<table>(rt, std::make_shared<const observer>(std::move(obs)))) {}

  joined join(K key) {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    bool leader = false;
    if (it == t_->inflight.end()) {
      it = t_->inflight.emplace(key, std::make_shared<slot>(t_->rt, key, ++t_->next_id, t_->obs)).first;
      if (B == bug::recycled_outcome) {
        // The flaw: a recycled outcome cell is not cleared, so the fresh
        // flight's waiters read the key's last answer before its worker runs.
        if (const auto last = t_->last_answer.find(key); last != t_->last_answer.end()) {
          it->second->publish(std::optional<V>(last->second));
        }
      }
      leader = true;
      it->second->emit(flight_event::started);
    }
    it->second->waiters_.fetch_add(1);
    return joined{it->second, leader, waiter(*this, key, it->second)};
  }
  std::size_t waiting_on(const K& key) const {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    return it == t_->inflight.end() ? 0 : it->second->waiters_.load();
  }
  std::size_t in_flight() const {
    std::lock_guard lock(t_->mu);
    return t_->inflight.size();
  }
  std::uint64_t abandoned_total() const {
    std::lock_guard lock(t_->mu);
    return t_->abandoned;
  }
  void check_invariants() const {
    std::lock_guard lock(t_->mu);
    for (auto& [key, held] : t_->inflight) {
      const std::uint8_t state = held->state_.load();
      if (state == 1) throw std::logic_error("a cancelled slot is still in the table");
      if (held->waiters_.load() == 0 && state != 2) throw std::logic_error("an unpublished slot without waiters is in the table");
    }
  }

 private:
  struct table {
    table(R& r, std::shared_ptr<const observer> o) : rt(r), mu(r), obs(std::move(o)) {}
    R& rt;
    typename R::mutex mu;
    std::map<K, std::shared_ptr<slot>> inflight;
    std::uint64_t next_id = 0;
    std::uint64_t abandoned = 0;
    std::map<K, V> last_answer;  // recycled_outcome: each key's last published answer
    std::shared_ptr<const observer> obs;
  };
  std::shared_ptr<table> t_;
};

// --- the oracles over the observer's reports ------------------------------------

/// What one flight did, in the order the observer saw it.
template <class K>
struct flight_story {
  K key{};
  int started = 0, cancelled = 0, publishing = 0, answered = 0, abandoned = 0, retired = 0;
};

template <class K>
using flight_log = std::map<std::uint64_t, flight_story<K>>;

/// Records transition `e` of flight `id` (of `key`) and checks it against the
/// flight's story so far and against the other flights of its key.
template <class K, class Violate>
void observe(flight_log<K>& flights, const K& key, std::uint64_t id, flight_event e, Violate&& violate) {
  flight_story<K>& s = flights[id];
  const std::string f = "flight " + std::to_string(id) + " of key " + std::to_string(key) + ": ";
  switch (e) {
    case flight_event::started:
      for (const auto& [other, o] : flights)
        if (other != id && o.key == key && o.started && o.cancelled == 0 && o.retired == 0)
          violate("one flight per key", f + "started while flight " + std::to_string(other) + " still held the key");
      s.key = key;
      ++s.started;
      break;
    case flight_event::cancelled:
      if (s.publishing) violate("no cancellation after publication began", f + "cancelled while publishing");
      ++s.cancelled;
      break;
    case flight_event::publishing:
      if (s.cancelled) violate("no publication after a cancellation", f + "began publishing after it was cancelled");
      ++s.publishing;
      break;
    case flight_event::answered:
      if (!s.publishing || s.cancelled) violate("no publication after a cancellation", f + "answered without winning publication");
      if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
      ++s.answered;
      break;
    case flight_event::abandoned:
      if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
      ++s.abandoned;
      break;
    case flight_event::retired:
      if (s.answered + s.abandoned != 1) violate("one outcome per flight", f + "retired without exactly one outcome");
      ++s.retired;
      break;
  }
}

/// Lives in a request between its join and its waiter guard (made just after
/// the join, so destroyed just before the guard, on every way out):
/// while the request counted as a waiter, its flight cannot have been cancelled.
template <class World>
struct still_counted {
  World& w;
  std::uint64_t flight;
  std::size_t i;
  ~still_counted() {
    if (w.flights[flight].cancelled > 0)
      w.violate("no cancellation under a counted waiter",
                "request " + std::to_string(i) + ": flight " + std::to_string(flight) + " was cancelled while it still counted");
  }
};

}  // namespace lockstep::models::probation
