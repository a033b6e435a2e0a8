// tools/scenario/scenario.hpp — a scenario file (format version 1) as typed
// values, after the reader (scenario_reader.hpp) has checked it against the
// schema and the rules the schema cannot express. A system holds the lane
// router (velo), the shard scheduler (grommet) or the single-flight table
// (probation), alone or composed: lanes in front, whose consumer looks the
// item up in the single-flight table and/or forwards it to the shards, as
// system.wiring says (composed_driver.hpp).
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/plant.hpp"

namespace lockstep::scenario {

/// A duration in ns: fixed (lo == hi) or drawn uniformly from [lo, hi] by rt.random().
struct duration {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

/// A key: fixed, or drawn below random_below (when non-zero) by rt.random().
struct key_spec {
  std::uint64_t value = 0;
  std::uint64_t random_below = 0;
};

struct step {
  enum class kind : std::uint8_t {
    route, sleep, drop_router, submit, try_submit, shutdown, join, leave, cancel_worker, observe, wait_until,
    cancel_lane
  };
  /// observe: what the step reads now and compares with `observed`.
  enum class observable : std::uint8_t { lane_count, in_flight, shard_stat };
  kind what = kind::sleep;
  key_spec key;               ///< route, submit, try_submit, join, cancel_worker, cancel_lane
  duration after_ns;          ///< cancel_worker, cancel_lane: how long the step waits before it cancels (drawn)
  observable watch = observable::lane_count;  ///< observe, wait_until: lane_count(), in_flight() or a shard stat
  /// shard_stat: which published counter or gauge (shard_stat_names()), and of
  /// which shard (none: summed over every shard).
  std::string stat;
  std::optional<std::uint64_t> stat_shard;
  std::uint64_t observed = 0;                 ///< observe: the value it must have; wait_until: the value waited for
  std::uint64_t poll_ns = 10;                 ///< wait_until: how often it reads the value (as the seeds' wait_for polls)
  std::uint64_t count = 1;    ///< route, submit, try_submit, join: items sent (waiters started) by this step
  std::uint64_t gap_ns = 0;   ///< route, submit, try_submit, join: pause between them (0: back to back)
  std::optional<std::uint64_t> leave_after_ns;  ///< join: each waiter leaves (is cancelled) this long after it starts
  /// route: its own capacity for route() (unset: the router's; set to none: uncapped)
  std::optional<std::optional<std::size_t>> route_capacity;
  std::string join_id;        ///< join: its optional id; leave: the id of the join whose waiters leave
  std::uint64_t sleep_ns = 0; ///< sleep
  std::uint32_t cls = 0;                    ///< submit, try_submit: the item's class
  std::optional<std::int64_t> ttl_ns;       ///< submit, try_submit: time to live (none: forever)
  std::optional<key_spec> request_id;       ///< submit, try_submit: fixed or drawn per item
};

/// What an observe or wait_until step may read of the shards' published
/// stats (engine/shard_stats.hpp): their counters, and their gauges
/// (inflight summed over classes).
inline const std::vector<std::string>& shard_stat_names() {
  static const std::vector<std::string> names = {
      "started", "completed", "failed",  "in_doubt", "panicked", "coalesced",  "expired",
      "evicted", "pending",   "inflight", "resident", "flushing", "publications"};
  return names;
}

/// A step's kind as a file spells it (its key in the step object).
constexpr std::string_view name_of(step::kind k) {
  switch (k) {
    case step::kind::route: return "route";
    case step::kind::sleep: return "sleep_ns";
    case step::kind::drop_router: return "drop_router";
    case step::kind::submit: return "submit";
    case step::kind::try_submit: return "try_submit";
    case step::kind::shutdown: return "shutdown";
    case step::kind::join: return "join";
    case step::kind::leave: return "leave";
    case step::kind::cancel_worker: return "cancel_worker";
    case step::kind::cancel_lane: return "cancel_lane";
    case step::kind::observe: return "observe";
    case step::kind::wait_until: return "wait_until";
  }
  return "?";
}

struct actor {
  std::string name;
  std::uint32_t core = 0;
  std::vector<step> steps;
};

/// A planted bug in the lane router (engine/plant.hpp: lanes_<name>, a
/// LOCKSTEP_PLANT switch in engine/lanes.hpp), or, for the consumer_* ones,
/// in the scenario's lane consumer wrapper (lane_canaries.hpp's
/// consumer_canary) in front of the router.
enum class lanes_canary : std::uint8_t {
  none,
  send_after_unlock,
  decrement_at_dequeue,
  replace_lane_on_route,
  consumer_loses_after_panic,
  consumer_reorders_after_panic,
  exit_guard_keeps_entry,
  lane_count_only_grows,
  lane_holds_map,
};

/// A consumer canary runs on the real router: only the wrapper is broken.
constexpr bool is_consumer_canary(lanes_canary c) {
  return c == lanes_canary::consumer_loses_after_panic || c == lanes_canary::consumer_reorders_after_panic;
}

struct lanes_system {
  std::optional<std::int64_t> idle_ttl_ns;
  std::optional<std::size_t> capacity;
  bool place_by_key = false;  ///< lanes on core key % cores, else on the routing fiber's core
  lanes_canary canary = lanes_canary::none;
  /// The engine's planted bug the canary names (none for the consumer_* ones).
  plant::bug plant = plant::bug::none;
};


/// The shard scheduler: `count` shards behind one router (engine/router.hpp),
/// shard i on core i % cores. Defaults follow the seed's ShardConfig::new.
struct shards_system {
  std::size_t count = 1;
  std::vector<std::size_t> max_inflight;  ///< one per class
  std::size_t max_pending = 4096;
  std::int64_t evict_after_ns = 60'000'000'000;
  std::size_t admit_batch = 64;
  std::int64_t tick_ns = 1'000'000'000;
  std::size_t mailbox_capacity = 64;
  bool coalesce_duplicates = false;
  bool panic_abort = false;  ///< panic_policy "abort": a panic ends the run
  /// The planted bug its `canary` names (engine/plant.hpp: shards_<canary>),
  /// active for the run in a selfcheck build; none otherwise.
  plant::bug canary = plant::bug::none;
};

/// A planted bug in the single-flight table (engine/plant.hpp: flights_<name>,
/// a LOCKSTEP_PLANT switch in engine/single_flight.hpp).
enum class flight_canary : std::uint8_t {
  none,
  send_skips_without_subscribers,
  decrement_outside_lock,
  removal_without_identity_check,
  keep_retired_slot,
  abandon_after_answer,
  count_answers_as_abandoned,
  recycled_outcome,
};

/// The single-flight table (engine/single_flight.hpp); it has no settings of its own.
struct flight_system {
  flight_canary canary = flight_canary::none;
  plant::bug plant = plant::bug::none;  ///< the engine's planted bug the canary names
};

/// What a single-flight worker does: answer with a value, answer with an
/// error, panic (throw: its waiters read "abandoned"), or stop early without
/// answering (its waiters read "abandoned").
enum class worker_outcome : std::uint8_t { ok, error, panic, stops_early };

/// One rule of behaviour.worker.outcomes; the first that matches a flight wins.
struct worker_rule {
  enum class when : std::uint8_t { key, nth_call, percent };
  when on = when::key;
  std::uint64_t value = 0;  ///< the key, the run-wide worker number (from 1), or the percent
  worker_outcome outcome = worker_outcome::ok;
  std::optional<std::uint64_t> answer;  ///< ok, error: the value answered (default: the flight's id)
};

struct worker_behaviour {
  duration duration_ns;
  std::vector<worker_rule> outcomes;
};

/// What a lane consumer call does: return normally, return an error (the
/// item is done with; the consumer reports it), or panic (throw). The
/// scenario's consumer contains its own panics, as the seed's
/// OrderedDispatcher wraps its handler in catch_unwind: the lane survives.
enum class consumer_outcome : std::uint8_t { ok, error, panic };

/// One rule of behaviour.consumer.outcomes; the first that matches a call wins.
struct consumer_rule {
  enum class when : std::uint8_t { key, nth_call, percent };
  when on = when::key;
  std::uint64_t value = 0;  ///< the key, the run-wide consumer call number (from 1), or the percent
  consumer_outcome outcome = consumer_outcome::ok;
};

/// What process() does with the key's state when it succeeds.
enum class state_model : std::uint8_t {
  accumulate,  ///< keep(previous + 1), the seed's Recorder
  keep,        ///< keep(the item's run-wide id): the last writer wins
  drop,        ///< drop(): every dispatch reloads
};

/// crash_*: the process itself dies (a null store, abort(), a stack overflow),
/// not a failed run: a test of the harness's crash report, never a user's fault model.
/// What a process() call does: ok (keeps or drops state as behaviour.processor.state says), drop (returns ok
/// but drops the key's state, whatever `state` says), an error, a panic, or a crash.
enum class outcome_kind : std::uint8_t { ok, drop, error_clean, error_in_doubt, panic, crash_segv, crash_abort, crash_overflow };

/// One rule of behaviour.processor.outcomes; the first that matches a call wins.
struct outcome_rule {
  enum class when : std::uint8_t { key, nth_call, percent };
  when on = when::key;
  std::uint64_t value = 0;  ///< the key, the run-wide call number (from 1), or the percent
  outcome_kind outcome = outcome_kind::ok;
};

struct processor_behaviour {
  duration duration_ns;
  state_model state = state_model::accumulate;
  std::vector<outcome_rule> outcomes;
};

/// One process() call as the seed's Log records it: the key and the state it saw.
struct processed_entry {
  std::uint64_t key = 0;
  std::optional<std::uint64_t> state;
  bool operator==(const processed_entry&) const = default;
  auto operator<=>(const processed_entry&) const = default;
};

/// One on_evict call: the key and the state it flushed.
struct flushed_entry {
  std::uint64_t key = 0;
  std::uint64_t value = 0;
  bool operator==(const flushed_entry&) const = default;
  auto operator<=>(const flushed_entry&) const = default;
};

/// Exact counts, checked only under the fifo strategy.
struct expectations {
  std::optional<std::uint64_t> handled, refused, lanes_created, lanes_closed;
  /// Lanes: the items (run-wide ids) whose consumer call returned ok, in
  /// order (the seed's sink), and the calls that returned an error or panicked.
  std::optional<std::vector<std::uint64_t>> consumed;
  std::optional<std::uint64_t> consumer_errors, consumer_panics;
  // Shards: the processed and flushed logs in order, and the shards' counters
  // (summed over shards) plus the items try_submit or submit handed back.
  std::optional<std::vector<processed_entry>> processed;
  std::optional<std::vector<flushed_entry>> flushed;
  std::optional<std::uint64_t> started, completed, failed, in_doubt, panicked, coalesced, expired, evicted,
      handed_back;
  // Single flight: counts over the event log (panicked is shared with shards).
  std::optional<std::uint64_t> flights, joined, answered, left, cancelled, published, abandoned;
  /// Single flight: each waiter's answer in log order, "ok:V", "error:V" or "abandoned".
  std::optional<std::vector<std::string>> answers;
  /// The list expectations (processed, flushed, consumed, answers) to compare
  /// as multisets, as a seed test that sorts its results before it compares.
  std::vector<std::string> any_order;
  [[nodiscard]] bool unordered(std::string_view list) const {
    return std::find(any_order.begin(), any_order.end(), list) != any_order.end();
  }
};

/// A list expectation against what the run did: in order, or (unordered) as
/// multisets — both sorted, so a report shows them side by side.
template <class T>
bool same_list(bool unordered, std::vector<T>& want, std::vector<T>& got) {
  if (unordered) {
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
  }
  return want == got;
}

/// "name" or "name (any order)", for an expect report.
inline std::string list_label(const std::string& name, bool unordered) {
  return unordered ? name + " (any order)" : name;
}

/// The lane router's oracle names, in the order they are checked.
inline const std::vector<std::string>& lane_oracle_names() {
  static const std::vector<std::string> names = {"per_key_order", "exactly_once", "one_lane_per_key", "capacity",
                                                 "lanes_gone",    "lane_survives", "no_black_hole", "counters"};
  return names;
}

/// The shard scheduler's oracle names, in the order they are checked.
inline const std::vector<std::string>& shard_oracle_names() {
  static const std::vector<std::string> names = {"conservation", "state",       "per_key_order",
                                                 "one_in_flight", "class_budget", "pending_cap",
                                                 "fairness",      "request_ids",  "deadlines",
                                                 "eviction",      "backpressure", "placement",
                                                 "counters"};
  return names;
}

/// The single-flight table's oracle names, in the order they are checked.
inline const std::vector<std::string>& flight_oracle_names() {
  static const std::vector<std::string> names = {"one_leader", "cancel_publish", "same_value", "servable",
                                                 "answered",   "counters"};
  return names;
}

/// A component's whole specification, as one oracle name: `spec_lanes`,
/// `spec_shards` or `spec_flights` stands for every rule of that component
/// above (its counters included), each judged over the one event log in log
/// order. A file's default oracles are the spec of each component it holds
/// (plus `delivery` when composed); naming a spec in `oracles` turns on all
/// of its rules, and a violation is still reported under the rule it broke.
struct component_spec {
  const char* name;
  const std::vector<std::string>& (*rules)();
};

inline const std::vector<component_spec>& component_specs() {
  static const std::vector<component_spec> specs = {
      {"spec_lanes", &lane_oracle_names}, {"spec_shards", &shard_oracle_names}, {"spec_flights", &flight_oracle_names}};
  return specs;
}

/// How a composed system's lane consumer uses the other components, for each
/// item it is handed: join the single-flight table on key % lookup_key_mod
/// (when single_flight is present), then, when the lookup answered ok (or
/// there is none), submit the item to the shards (when present) under the
/// lane item's key with forward_class and forward_ttl_ns.
struct wiring_spec {
  std::uint64_t lookup_key_mod = 0;  ///< 0: the lane item's own key
  bool forward_via_try = false;
  std::uint32_t forward_class = 0;
  std::optional<std::int64_t> forward_ttl_ns;
};

/// The composition's own oracle: checked only in a composed system.
inline const std::vector<std::string>& composed_oracle_names() {
  static const std::vector<std::string> names = {"delivery"};
  return names;
}

/// expect_failure: the run must end in this failure (kind, and a text its
/// message contains); ending otherwise, or holding, is itself the failure.
struct failure_expectation {
  std::string kind;      ///< "abort", "oracle", "liveness", "deadlock" or "uncaught_exception"
  std::string contains;  ///< empty: any message
};

struct scenario {
  std::string source;        ///< the file it was read from (for messages and records)
  nlohmann::json document;   ///< the file as read: embedded whole in failure records
  std::string about;
  std::uint32_t cores = 1;
  std::optional<lanes_system> lanes;
  std::optional<shards_system> shards;
  std::optional<flight_system> single_flight;
  std::optional<wiring_spec> wiring;  ///< set exactly when more than one component is present
  duration consumer_duration;
  std::vector<consumer_rule> consumer_outcomes;
  /// false: a consumer panic escapes the consumer into the lane (the run
  /// fails as uncaught_exception); true: the consumer contains it.
  bool consumer_contains = true;
  /// With consumer_contains false: true ("escaped_panic": "ends_lane") makes
  /// the escaping panic a lockstep::task_panic, which ends only the lane's
  /// fiber (tokio's contract) — the run goes on and the oracles judge what
  /// the router does next; false ("fails_run") fails the run as
  /// uncaught_exception.
  bool consumer_escape_ends_lane = false;
  /// Some actor has a cancel_lane step (its lanes can end mid-item).
  bool cancels_lanes = false;
  worker_behaviour worker;
  processor_behaviour processor;
  std::vector<actor> actors;
  std::vector<std::string> oracles;  ///< enabled; every one when the file names none
  /// Coverage probes (engine/probes.hpp) explore must see hit over its seed range.
  std::vector<std::string> must_reach;
  /// must_reach given per strategy (an object): (strategy, probes), in key order; must_reach is then empty.
  std::vector<std::pair<std::string, std::vector<std::string>>> must_reach_by_strategy;
  std::int64_t liveness_ns = 1'000'000'000;
  std::optional<expectations> expect;
  std::optional<failure_expectation> expect_failure;

  [[nodiscard]] bool composed() const { return wiring.has_value(); }

  /// Some route step gives its own capacity (lane_oracle_settings::any_route_capacity).
  [[nodiscard]] bool any_route_capacity() const {
    for (const auto& a : actors)
      for (const auto& st : a.steps)
        if (st.route_capacity) return true;
    return false;
  }

  [[nodiscard]] bool checks(const std::string& oracle) const {
    for (const auto& o : oracles)
      if (o == oracle) return true;
    return false;
  }
};

/// The planted bug a scenario's `canary` fields name (engine/plant.hpp):
/// active for each of its runs, in a selfcheck build.
inline plant::bug plant_of(const scenario& s) {
  if (s.shards && s.shards->canary != plant::bug::none) return s.shards->canary;
  if (s.single_flight && s.single_flight->plant != plant::bug::none) return s.single_flight->plant;
  return s.lanes ? s.lanes->plant : plant::bug::none;
}

}  // namespace lockstep::scenario
