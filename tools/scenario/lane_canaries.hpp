// tools/scenario/lane_canaries.hpp — what the lane router race tests
// (engine/tests/test_lanes_races.cpp) and the scenario lane drivers
// (lane_parts.hpp) share: a lane consumer wrapper broken on purpose (the
// consumer_* scenario canaries, in front of the real router; the router's
// own planted bugs are switches in it, engine/plant.hpp); and the oracle the race
// tests feed from producers, consumer and lane observer (scenarios check the
// event log instead, lane_oracles.hpp).
//
// Oracles: strict order per (key, producer); every admitted item handled
// exactly once and every refused one never (a refusal hands the very item
// back, and an uncapped route never refuses); at most one lane per key
// holding work (no two consumer calls of a key overlap, and the lane a key is
// served by never goes back to an older one); capacity never exceeded; with
// one key, its only live lane never closes while an item is unfinished.
//
// Failure reporting: a broken rule goes to the caller's violate(oracle,
// message) — a record in the tests. lane_closed runs in a lane's exit guard (a destructor), where
// nothing may throw: it only records the first such break in `deferred`,
// which the caller reports once the run has settled.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/lanes.hpp"
#include "sim/runtime.hpp"

namespace lockstep::models::velo {

using sim::runtime;

/// One routed item: producer `producer` sends its seq-th item, with run-wide
/// index `id` (0 .. items-1), to `key`.
struct item {
  std::uint64_t key;
  std::uint64_t producer;
  std::uint64_t seq;
  std::uint64_t id;
};

// --- the canary consumer wrapper ------------------------------------------------

/// A lane consumer wrapper broken on purpose, in front of the real router
/// (the consumer_* scenario canaries). It contains the consumer's panic as a
/// correct wrapper does, but then mishandles the lane's next item: LosesNext
/// drops it unhandled; ReordersNext holds it back and hands it over after the
/// item that follows it (or never, when none follows). Plain fields: the
/// simulator is one OS thread (the threads backend refuses lane canaries).
template <class Item>
class consumer_canary {
 public:
  enum class flaw : std::uint8_t { loses_next, reorders_next };
  explicit consumer_canary(flaw f) : flaw_(f) {}

  /// Hands `it`, arriving on `lane`, to `consume` (which returns true when
  /// the call panicked and was contained) — or, after a panic, does not.
  template <class Consume>
  void feed(std::uint64_t lane, const Item& it, Consume&& consume) {
    per_lane& l = lanes_[lane];
    if (l.after_panic) {
      l.after_panic = false;
      if (flaw_ == flaw::reorders_next) l.held = it;
      return;  // the flaw: this item is lost, or comes after the next one
    }
    bool panicked = consume(it);
    if (l.held) {
      const Item late = *l.held;
      l.held.reset();
      panicked = consume(late) || panicked;
    }
    l.after_panic = panicked;
  }

 private:
  struct per_lane {
    bool after_panic = false;
    std::optional<Item> held;
  };
  flaw flaw_;
  std::map<std::uint64_t, per_lane> lanes_;
};

// --- the oracle ---------------------------------------------------------------

inline std::string str(std::uint64_t n) { return std::to_string(n); }

/// The oracles' bookkeeping, fed by producers (routed), the consumer
/// (consume_begin/end) and the lane observer. Plain fields: the simulator is
/// one OS thread. Item has key, producer, seq and id (0 .. items-1).
template <class Item>
struct oracle final : lane_observer {
  enum class fate : std::uint8_t { unrouted, admitted, refused, finished };
  using violate_fn = std::function<void(const char* oracle, const std::string& message)>;

  oracle(std::size_t items, bool one_key, std::optional<std::size_t> cap, violate_fn v)
      : fates(items, fate::unrouted), handled(items, 0), single_key(one_key), capacity(cap), violate(std::move(v)) {}

  // An item counts as admitted from whichever comes first: route() returning
  // ok or the consumer seeing it. Both follow the router's own admission, and
  // "finished" precedes the router's decrement, so the count never overstates
  // what the router holds.
  void admit(const Item& it) {
    if (fates[it.id] != fate::unrouted) return;
    fates[it.id] = fate::admitted;
    const std::uint64_t now = ++outstanding[it.key];
    if (capacity && now > *capacity)
      violate("capacity never exceeded",
              "key " + str(it.key) + " holds " + str(now) + " unfinished items, capacity " + str(*capacity));
  }

  void routed(const Item& it, const route_result<Item>& r) {
    if (r.ok()) {
      if (capacity && r.depth >= *capacity)
        violate("capacity never exceeded", "item " + str(it.id) + " admitted at depth " + str(r.depth));
      admit(it);
      return;
    }
    if (!capacity) violate("an uncapped route never refuses", "item " + str(it.id) + " refused");
    if (fates[it.id] != fate::unrouted) {
      violate("refused items are never handled", "item " + str(it.id) + " was refused but reached the consumer");
      return;
    }
    if (!(r.returned && r.returned->id == it.id)) violate("a refusal hands the very item back", "item " + str(it.id));
    fates[it.id] = fate::refused;
    ++refusals;
  }

  void consume_begin(const Item& it, sim::fiber_id lane) {
    admit(it);
    if (++handled[it.id] != 1) violate("every admitted item handled exactly once", "item " + str(it.id) + " handled twice");
    if (++in_consumer[it.key] != 1)
      violate("at most one lane per key holding work", "two lanes of key " + str(it.key) + " in the consumer at once");
    const std::uint64_t g = generation.try_emplace(lane, generation.size()).first->second;
    const auto [newest, first] = newest_generation.try_emplace(it.key, g);
    if (!first && g < newest->second)
      violate("at most one lane per key holding work", "key " + str(it.key) + " went back to an older lane");
    if (g > newest->second) newest->second = g;
    const auto [last, none] = last_seq.try_emplace({it.key, it.producer}, it.seq);
    if (!none && last->second >= it.seq)
      violate("strict per-key order", "key " + str(it.key) + " producer " + str(it.producer) + ": seq " +
                                          str(it.seq) + " after " + str(last->second));
    last->second = it.seq;
  }

  void consume_end(const Item& it) {
    --in_consumer[it.key];
    fates[it.id] = fate::finished;
    --outstanding[it.key];
  }

  void lane_created() override { ++created; }
  void lane_closed() override {
    // With one key, the last live lane is the only one that can hold its work.
    if (single_key && created - closed == 1 && outstanding[0] > 0 && deferred.empty())
      deferred = "the key's only lane closed with " + str(outstanding[0]) + " unfinished items";
    ++closed;
  }

  [[nodiscard]] bool all_settled() const {
    for (fate f : fates)
      if (f == fate::admitted) return false;
    return true;
  }

  /// After the run: every admitted item handled once, every refused one never.
  void final_checks() {
    for (std::size_t id = 0; id < fates.size(); ++id) {
      const bool refused = fates[id] == fate::refused;
      if (handled[id] != (refused ? 0 : 1))
        violate("every admitted item handled exactly once",
                "item " + str(id) + (refused ? " (refused)" : "") + " handled " + std::to_string(handled[id]) + " times");
    }
  }

  std::vector<fate> fates;
  std::vector<int> handled;
  bool single_key;
  std::optional<std::size_t> capacity;
  violate_fn violate;
  std::map<std::uint64_t, std::uint64_t> outstanding, in_consumer, newest_generation;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> last_seq;
  std::map<sim::fiber_id, std::uint64_t> generation;
  std::uint64_t created = 0, closed = 0, refusals = 0;
  std::string deferred;  // "no reap while work is pending", broken in a destructor
};

}  // namespace lockstep::models::velo
