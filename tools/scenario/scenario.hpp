// tools/scenario/scenario.hpp — a scenario file (format version 1) as typed
// values, after the reader (scenario_reader.hpp) has checked it against the
// schema and the rules the schema cannot express. Only the lane router is
// implemented in this version; the schema refuses every other component.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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
  enum class kind : std::uint8_t { route, sleep, drop_router };
  kind what = kind::sleep;
  key_spec key;               ///< route
  std::uint64_t count = 1;    ///< route: items routed by this step
  std::uint64_t gap_ns = 0;   ///< route: pause between them (0: back to back)
  std::uint64_t sleep_ns = 0; ///< sleep
};

struct actor {
  std::string name;
  std::uint32_t core = 0;
  std::vector<step> steps;
};

/// A planted bug in the lane router (tools/models/velo_model.hpp's canary_router).
enum class lanes_canary : std::uint8_t { none, send_after_unlock, decrement_at_dequeue, replace_lane_on_route };

struct lanes_system {
  std::optional<std::int64_t> idle_ttl_ns;
  std::optional<std::size_t> capacity;
  bool place_by_key = false;  ///< lanes on core key % cores, else on the routing fiber's core
  lanes_canary canary = lanes_canary::none;
};

/// Exact counts, checked only under the fifo strategy.
struct expectations {
  std::optional<std::uint64_t> handled, refused, lanes_created, lanes_closed;
};

/// Every oracle name this version knows, in the order they are checked.
inline const std::vector<std::string>& lane_oracle_names() {
  static const std::vector<std::string> names = {"per_key_order", "exactly_once", "one_lane_per_key", "capacity",
                                                 "lanes_gone"};
  return names;
}

struct scenario {
  std::string source;        ///< the file it was read from (for messages and records)
  nlohmann::json document;   ///< the file as read: embedded whole in failure records
  std::string about;
  std::uint32_t cores = 1;
  std::optional<lanes_system> lanes;
  duration consumer_duration;
  std::vector<actor> actors;
  std::vector<std::string> oracles;  ///< enabled; every one when the file names none
  std::int64_t liveness_ns = 1'000'000'000;
  std::optional<expectations> expect;

  [[nodiscard]] bool checks(const std::string& oracle) const {
    for (const auto& o : oracles)
      if (o == oracle) return true;
    return false;
  }
};

}  // namespace lockstep::scenario
