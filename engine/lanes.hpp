// engine/lanes.hpp — the lane router (velo's LaneRouter, DESIGN.md §5):
// per-key ordering lanes.
//
// Items are partitioned by key. Each key gets an unbounded channel and one
// consumer fiber (its *lane*), created on first use, so items of one key are
// consumed strictly in route order while distinct keys run in parallel. A lane
// with `idle_ttl_ns` set reaps itself after that long without an item; the
// reap runs on the lane's own fiber, so `pending` has a single decrementer.
//
// Invariants (what the tests in engine/tests/test_lanes*.cpp hold us to):
// * route() does everything — find-or-create, read pending, admit, increment
//   pending, send — inside one critical section of the map lock, and a reap
//   removes an entry only under that lock with pending == 0. So a reap never
//   races a half-finished route: either it sees the item or no route touched
//   the lane.
// * pending counts items routed and not yet *finished* by the consumer; it is
//   decremented after the consumer returns, so a lane running a long handler
//   over an empty queue is never idle.
// * the map holds the only sender of each lane, and a lane's entry leaves the
//   map before its receiver is destroyed. Hence at most one lane per key ever
//   holds work, and a mapped lane never silently drops an item.
// * lanes hold the map only weakly: dropping the router drops every sender,
//   and each lane drains what it had queued and then exits.
//
// Where we part from the seed: a lane whose idle timeout finds the router gone
// does not exit on the spot but goes back to its channel, which reports the
// end once drained — on a real multi-core backend an item routed between the
// timeout and the drop would otherwise be dropped unhandled. The exit guard
// lives in the fiber's body object, so it also runs for a lane cancelled
// before its first step.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plant.hpp"
#include "probes.hpp"
#include "runtime.hpp"
#include "stable_hash.hpp"

namespace lockstep {

/// Hooks fired as lanes come and go (metrics, tests). Called on fibers of the
/// router: lane_created() from route() while the map lock is held, so it must
/// not route or suspend; lane_closed() from the ending lane's fiber.
class lane_observer {
 public:
  virtual ~lane_observer() = default;
  /// A lane was spawned for a key that had none.
  virtual void lane_created() = 0;
  /// A lane's fiber ended: reaped, drained after the router was dropped,
  /// cancelled, or left by an exception from the consumer.
  virtual void lane_closed() = 0;
};

/// How a lane_router is set up.
template <class K>
struct lane_router_config {
  /// How long a lane may wait without an item before it reaps itself; unset
  /// means lanes live until the router is dropped.
  std::optional<std::int64_t> idle_ttl_ns;
  /// Optional lifecycle hooks, shared with the lanes (they may outlive the router).
  std::shared_ptr<lane_observer> observer;
  /// Which core a new lane's fiber runs on (taken modulo rt.cores()); unset
  /// spawns it on the core of the fiber that routed the key's first item.
  std::function<std::uint32_t(const K&)> place;
};

/// What route() did: admitted at `depth` (unhandled items before this one),
/// or refused with the item handed back in `returned`.
template <class T>
struct route_result {
  std::size_t depth = 0;
  std::optional<T> returned;
  [[nodiscard]] bool ok() const { return !returned.has_value(); }
};

namespace detail {

/// Per-lane state shared by the producers (through the map) and the lane.
template <Runtime R>
struct lane_state {
  explicit lane_state(R& rt) : pending(rt, 0) {}
  /// Routed and not yet finished by the consumer. Incremented under the map
  /// lock; decremented by the lane after the consumer returns.
  typename R::template atomic<std::size_t> pending;
};

/// One map entry: the lane's only sender and its state (the identity a reap
/// or an exit guard compares against).
template <Runtime R, class T>
struct lane_entry {
  typename R::template channel<T>::sender tx;
  std::shared_ptr<lane_state<R>> state;
};

/// stable_hash as a hasher (never std::hash: see stable_hash.hpp).
struct stable_hasher {
  template <class K>
  std::size_t operator()(const K& key) const {
    return static_cast<std::size_t>(stable_hash(key));
  }
};

/// The lane map's container. A key with a stable hash gets a hash table: at
/// 4,096 keys the producer's std::map walk (12 levels, nodes written by
/// both workers' reaps) was 16 % of the K=4096 profile (issue 8). Nothing
/// iterates the map except its destructor, which fixes its own order.
template <class K, class V>
struct lane_table {
  using type = std::map<K, V>;
  static constexpr bool hashed = false;
};
template <class K, class V>
requires StablyHashable<K> && std::totally_ordered<K>
struct lane_table<K, V> {
  using type = std::unordered_map<K, V, stable_hasher>;
  static constexpr bool hashed = true;
};

/// The map and its lock: the router owns it, lanes see it through a weak_ptr.
template <Runtime R, class K, class T>
struct lane_map {
  using table = typename lane_table<K, lane_entry<R, T>>::type;
  explicit lane_map(R& r) : rt(r), mu(r) {}
  lane_map(const lane_map&) = delete;
  lane_map& operator=(const lane_map&) = delete;
  ~lane_map() {
    if constexpr (lane_table<K, lane_entry<R, T>>::hashed) drop_in_key_order();
  }
  R& rt;  // for probes only
  typename R::mutex mu;
  table lanes;

 private:
  // Dropping a lane's last sender wakes the lane, and in the simulator the
  // order of those wakes is part of the schedule: so the senders go in
  // descending key order — the order std::map's destructor (libstdc++) took
  // before the map was hashed, so every trace stays the same — never in
  // bucket order.
  void drop_in_key_order() noexcept {
    using node = typename table::node_type;
    std::vector<node> nodes;
    try {
      nodes.reserve(lanes.size());
    } catch (const std::bad_alloc&) {
      // No room to sort: take the largest key each time (quadratic, but
      // only when memory is already gone).
      while (!lanes.empty()) {
        auto top = lanes.begin();
        for (auto it = lanes.begin(); it != lanes.end(); ++it) {
          if (top->first < it->first) top = it;
        }
        lanes.erase(top);
      }
      return;
    }
    while (!lanes.empty()) nodes.push_back(lanes.extract(lanes.begin()));
    std::sort(nodes.begin(), nodes.end(), [](const node& a, const node& b) { return b.key() < a.key(); });
    for (node& n : nodes) n = node();  // one at a time, in that order
  }
};

/// Removes `key`'s entry if it still is `state`'s lane and is idle (pending
/// == 0), under the map lock. Returns true when it did. A router that is gone
/// has nothing to remove: false, and the lane learns of it from its channel.
template <Runtime R, class K, class T>
bool try_reap(const std::weak_ptr<lane_map<R, K, T>>& weak, const K& key,
              const std::shared_ptr<lane_state<R>>& state) {
  // Declared before the lock: if the router was dropped meanwhile, the map is
  // destroyed here, after the lock is released.
  const std::shared_ptr<lane_map<R, K, T>> map = weak.lock();
  if (!map) return false;
  std::lock_guard<typename R::mutex> hold(map->mu);
  auto it = map->lanes.find(key);
  // Defensive: while a lane runs, the key's entry is its own (only the lane
  // itself removes it), but never evict a successor on a mistaken premise.
  if (it == map->lanes.end() || it->second.state != state) return false;
  if (it->second.state->pending.load() != 0) {
    LOCKSTEP_PROBE(map->rt, "lanes.reap_found_pending");
    return false;
  }
  map->lanes.erase(it);  // drops the lane's only sender
  LOCKSTEP_PROBE(map->rt, "lanes.reaped");
  return true;
}

/// Runs however a lane's fiber ends (reap, router dropped, consumer
/// exception, cancellation, or a body dropped before it ever ran): takes the
/// entry out of the map if it is still this lane — ignoring pending, since
/// nobody will receive from it again — and fires lane_closed().
template <Runtime R, class K, class T>
class lane_exit_guard {
 public:
  lane_exit_guard(K key, std::shared_ptr<lane_state<R>> state, std::weak_ptr<lane_map<R, K, T>> map,
                  std::shared_ptr<lane_observer> observer)
      : key_(std::move(key)), state_(std::move(state)), map_(std::move(map)), observer_(std::move(observer)) {}
  lane_exit_guard(const lane_exit_guard&) = delete;
  lane_exit_guard& operator=(const lane_exit_guard&) = delete;
  ~lane_exit_guard() {
    // The planted bug lanes_exit_guard_keeps_entry: the entry stays, and its
    // dead sender black-holes the key's later items (what velo's guard prevents).
    if (const auto map = LOCKSTEP_PLANT(lanes_exit_guard_keeps_entry) ? nullptr : map_.lock()) {
      std::lock_guard<typename R::mutex> hold(map->mu);
      auto it = map->lanes.find(key_);
      if (it != map->lanes.end() && it->second.state == state_) map->lanes.erase(it);
    }
    if (observer_) observer_->lane_closed();
  }

 private:
  K key_;
  std::shared_ptr<lane_state<R>> state_;
  std::weak_ptr<lane_map<R, K, T>> map_;
  std::shared_ptr<lane_observer> observer_;
};

/// A lane's fiber body. Owned by the fiber; destroying it (after run() or
/// instead of it) fires the exit guard *before* the receiver goes, so a
/// mapped sender never points at a dead receiver.
template <Runtime R, class K, class T>
class lane_task {
 public:
  using consumer_fn = std::function<void(T)>;

  lane_task(R& rt, K key, typename R::template channel<T>::receiver rx, std::shared_ptr<lane_state<R>> state,
            std::weak_ptr<lane_map<R, K, T>> map, std::shared_ptr<const consumer_fn> consumer,
            std::optional<std::int64_t> idle_ttl_ns, std::shared_ptr<lane_observer> observer)
      : rt_(rt),
        key_(key),
        state_(state),
        map_(map),
        consumer_(std::move(consumer)),
        idle_ttl_ns_(idle_ttl_ns),
        rx_(std::move(rx)),
        guard_(std::move(key), std::move(state), std::move(map), std::move(observer)) {}

  /// Consumes items in order until reaped or the channel ends.
  void run() {
    // Only to mark how the lane ended; nothing suspends in these handlers.
    try {
      consume();
    } catch (const fiber_cancelled&) {
      LOCKSTEP_PROBE(rt_, "lanes.ended_by_cancel");
      throw;
    } catch (const run_aborted&) {
      throw;
    } catch (...) {
      LOCKSTEP_PROBE(rt_, "lanes.ended_by_consumer_exception");
      throw;
    }
  }

 private:
  void consume() {
    while (true) {
      std::optional<T> item;
      if (idle_ttl_ns_) {
        auto got = rx_.recv_for(*idle_ttl_ns_);
        if (got.status == recv_status::timed_out) {
          if (try_reap<R, K, T>(map_, key_, state_)) return;
          continue;
        }
        if (got.status != recv_status::item) {  // every sender gone: router dropped
          LOCKSTEP_PROBE(rt_, "lanes.ended_by_router_drop");
          return;
        }
        item = std::move(got.item);
      } else {
        item = rx_.recv();
        if (!item) {
          LOCKSTEP_PROBE(rt_, "lanes.ended_by_router_drop");
          return;
        }
      }
      // The planted bug lanes_decrement_at_dequeue: the item stops counting as work before it is done.
      if (LOCKSTEP_PLANT(lanes_decrement_at_dequeue)) state_->pending.fetch_sub(1);
      (*consumer_)(std::move(*item));
      // Only now: until the consumer returns, the item still counts as work.
      if (!LOCKSTEP_PLANT(lanes_decrement_at_dequeue)) state_->pending.fetch_sub(1);
    }
  }

  R& rt_;
  K key_;
  std::shared_ptr<lane_state<R>> state_;
  std::weak_ptr<lane_map<R, K, T>> map_;
  std::shared_ptr<const consumer_fn> consumer_;
  std::optional<std::int64_t> idle_ttl_ns_;
  typename R::template channel<T>::receiver rx_;
  lane_exit_guard<R, K, T> guard_;  // last member: destroyed first
};

}  // namespace detail

/// Routes items to per-key lanes: one consumer fiber per key, strict order
/// within a key, distinct keys in parallel.
///
/// The consumer runs on the lane's fiber and may suspend. The router does not
/// catch its exceptions: one that escapes ends that lane (its exit guard takes
/// it out of the map; items still queued on it are dropped, and the next route
/// for the key builds a fresh lane) and, in the simulator, fails the run as an
/// uncaught exception. A consumer that must survive its own failures catches
/// them itself (but lets lockstep::fiber_cancelled through).
template <Runtime R, class K, class T>
class lane_router {
 public:
  using consumer_fn = std::function<void(T)>;
  using config = lane_router_config<K>;

  /// A router whose lanes hand each item to `consumer`.
  lane_router(R& rt, consumer_fn consumer, config cfg = {})
      : rt_(rt),
        map_(std::make_shared<detail::lane_map<R, K, T>>(rt)),
        consumer_(std::make_shared<const consumer_fn>(std::move(consumer))),
        config_(std::move(cfg)) {}

  lane_router(const lane_router&) = delete;
  lane_router& operator=(const lane_router&) = delete;

  /// Drops every lane's sender; each lane drains its queue and exits. Never suspends.
  ~lane_router() = default;

  /// Enqueues `item` on `key`'s lane, spawning the lane if the key has none;
  /// refuses (hands `item` back) when `capacity` is set and the lane already
  /// holds that many unfinished items. Never waits for room: the channel is
  /// unbounded and capacity is only an admission check.
  route_result<T> route(K key, T item, std::optional<std::size_t> capacity = std::nullopt) {
    // All of it under the map lock — do not send after releasing it: a lane
    // could reap in between, and the item would land on a dead lane while a
    // successor serves the key.
    std::unique_lock<typename R::mutex> hold(map_->mu);
    auto it = map_->lanes.find(key);
    if (LOCKSTEP_PLANT(lanes_replace_lane_on_route) && it != map_->lanes.end()) {
      map_->lanes.erase(it);  // the planted bug: the old lane drains its queue while a new one starts
      it = map_->lanes.end();
    }
    if (it == map_->lanes.end()) {
      LOCKSTEP_PROBE(rt_, "lanes.route_opened_lane");
      it = open_lane(std::move(key));
    }
    detail::lane_entry<R, T>& lane = it->second;
    if (LOCKSTEP_PLANT(lanes_send_after_unlock)) return send_after_unlock(lane, hold, std::move(item), capacity);
    // Producers of this key are serialised by the lock, so load-then-add is
    // exact; a concurrent decrement only frees room (depth may read high,
    // never low: we can refuse early, never admit past capacity).
    const std::size_t depth = lane.state->pending.load();
    if (capacity && depth >= *capacity) {
      LOCKSTEP_PROBE(rt_, "lanes.route_refused_at_capacity");
      return {depth, std::move(item)};
    }
    if (depth > 0) LOCKSTEP_PROBE(rt_, "lanes.route_queued_behind_work");
    lane.state->pending.fetch_add(1);
    auto sent = lane.tx.send(std::move(item));
    // lanes_exit_guard_keeps_entry is velo's route without its exit guard:
    // velo ignores a failed send (`let _ = lane.tx.send(item)`), so a dead
    // lane's mapped sender swallows the key's items; this router's own check
    // would abort first, and the planted variant drops it with the guard.
    if (!sent.ok() && !LOCKSTEP_PLANT(lanes_exit_guard_keeps_entry)) {
      rt_.abort("lane_router: a mapped lane's channel refused an item");
    }
    return {depth, std::nullopt};
  }

  /// Number of lanes in the map (live and not yet reaped). Takes the map lock.
  [[nodiscard]] std::size_t lane_count() {
    std::lock_guard<typename R::mutex> hold(map_->mu);
#ifdef LOCKSTEP_SELFCHECK
    if (LOCKSTEP_PLANT(lanes_lane_count_only_grows)) return opened_;  // reaped and ended lanes still count
#endif
    return map_->lanes.size();
  }

 private:
  /// The planted bug lanes_send_after_unlock: the lane's sender and state
  /// copied out, the lock released, and only then admitted and sent — the
  /// race route() warns about (a reap in between, and the item lands on a
  /// dead lane and is lost).
  route_result<T> send_after_unlock(detail::lane_entry<R, T>& lane, std::unique_lock<typename R::mutex>& hold, T item,
                                    std::optional<std::size_t> capacity) {
    auto tx = lane.tx;
    const std::shared_ptr<detail::lane_state<R>> state = lane.state;
    hold.unlock();
    const std::size_t depth = state->pending.load();
    if (capacity && depth >= *capacity) return {depth, std::move(item)};
    state->pending.fetch_add(1);
    (void)tx.send(std::move(item));  // to a reaped lane: refused, and the item is lost
    return {depth, std::nullopt};
  }

  using map_iterator = typename detail::lane_map<R, K, T>::table::iterator;

  // Called with the map lock held and `key` absent.
  map_iterator open_lane(K key) {
    auto [tx, rx] = R::template channel<T>::unbounded(rt_);
    auto state = std::make_shared<detail::lane_state<R>>(rt_);
    if (config_.observer) config_.observer->lane_created();
    const std::uint32_t core = config_.place ? config_.place(key) % rt_.cores() : rt_.current_core();
    auto task = std::make_unique<detail::lane_task<R, K, T>>(
        rt_, key, std::move(rx), state, std::weak_ptr<detail::lane_map<R, K, T>>(map_), consumer_,
        config_.idle_ttl_ns, config_.observer);
#ifdef LOCKSTEP_SELFCHECK
    ++opened_;
#endif
    if (LOCKSTEP_PLANT(lanes_lane_holds_map)) {
      // The planted bug: the lane keeps the map, and with it its own sender, alive (velo's lanes hold a Weak).
      rt_.spawn_on(core, "lane", [task = std::move(task), map = map_] { task->run(); });
    } else {
      rt_.spawn_on(core, "lane", [task = std::move(task)] { task->run(); });
    }
    return map_->lanes.emplace(std::move(key), detail::lane_entry<R, T>{std::move(tx), std::move(state)}).first;
  }

  R& rt_;
  std::shared_ptr<detail::lane_map<R, K, T>> map_;
  std::shared_ptr<const consumer_fn> consumer_;
  config config_;
#ifdef LOCKSTEP_SELFCHECK
  std::size_t opened_ = 0;  // lanes opened, under the map lock: only lanes_lane_count_only_grows reads it
#endif
};

}  // namespace lockstep
