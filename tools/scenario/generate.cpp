#include "tools/scenario/generate.hpp"

#include <stdexcept>

#include "sim/prng.hpp"

namespace lockstep::scenario::generate {
namespace {

using json = nlohmann::json;

/// The draws of one document: its own stream, apart from the run's (the
/// run's strategy draws from the seed too; a constant keeps them unrelated).
class draws {
 public:
  explicit draws(std::uint64_t seed) : rng_(seed ^ 0x67656e6572617465ULL) {}  // "generate"
  std::uint64_t below(std::uint64_t n) { return rng_.below(n); }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + rng_.below(hi - lo + 1); }
  bool chance(std::uint64_t percent) { return rng_.below(100) < percent; }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[rng_.below(v.size())]; }

  /// A fixed duration, or a range the run draws from.
  json duration(std::uint64_t max_ns) {
    const std::uint64_t lo = below(max_ns + 1);
    if (chance(50)) return lo;
    return json{{"range", {lo, between(lo, max_ns)}}};
  }
  /// A fixed key, or {"random_below": keys}.
  json key(std::uint64_t keys) {
    if (chance(30)) return below(keys);
    return json{{"random_below", keys}};
  }
  /// "when" of an outcome rule: a key, the Nth call, or a chance.
  json when(std::uint64_t keys) {
    switch (below(3)) {
      case 0: return json{{"key", below(keys)}};
      case 1: return json{{"nth_call", between(1, 20)}};
      default: return json{{"percent", between(1, 40)}};
    }
  }

 private:
  sim::prng rng_;
};

/// Actors on the system's cores, each with 1 to 4 steps from `step`.
template <class Step>
json actors(draws& d, std::uint64_t cores, Step&& step) {
  json out = json::array();
  const std::uint64_t n = d.between(1, 3);
  for (std::uint64_t a = 0; a < n; ++a) {
    json steps = json::array();
    const std::uint64_t m = d.between(1, 4);
    for (std::uint64_t s = 0; s < m; ++s) steps.push_back(step(d, s + 1 == m));
    out.push_back({{"name", "a" + std::to_string(a)}, {"core", d.below(cores)}, {"steps", steps}});
  }
  return out;
}

json sleep_step(draws& d) { return {{"sleep_ns", d.between(1, 2000)}}; }

json lanes(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 4);
  json system = {{"cores", cores},
                 {"lanes", {{"idle_ttl_ns", d.chance(50) ? json(nullptr) : json(d.between(50, 3000))},
                            {"capacity", d.chance(40) ? json(nullptr) : json(d.between(1, 4))}}}};
  json consumer = {{"duration_ns", d.duration(300)}};
  json rules = json::array();
  for (std::uint64_t r = d.below(3); r > 0; --r) {
    rules.push_back({{"when", d.when(keys)}, {"outcome", d.one_of<std::string>({"ok", "error", "panic"})}});
  }
  if (!rules.empty()) consumer["outcomes"] = rules;
  auto step = [keys](draws& g, bool last) -> json {
    const std::uint64_t k = g.below(100);
    if (last && k < 10) return {{"drop_router", json::object()}};
    if (k < 20) return sleep_step(g);
    if (k < 28) return {{"cancel_lane", {{"key", g.key(keys)}, {"after_ns", g.duration(1500)}}}};
    json route = {{"key", g.key(keys)}, {"count", g.between(1, 12)}, {"gap_ns", g.below(100)}};
    if (g.chance(15)) route["capacity"] = g.chance(50) ? json(nullptr) : json(g.between(1, 4));
    return {{"route", route}};
  };
  return {{"system", system}, {"behaviour", {{"consumer", consumer}}}, {"workload", {{"actors", actors(d, cores, step)}}}};
}

json flights(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 4);
  json worker = {{"duration_ns", d.duration(200)}};
  json rules = json::array();
  for (std::uint64_t r = d.below(4); r > 0; --r) {
    json rule = {{"when", d.when(keys)}, {"outcome", d.one_of<std::string>({"ok", "error", "panic", "stops_early"})}};
    if ((rule["outcome"] == "ok" || rule["outcome"] == "error") && d.chance(50)) rule["value"] = d.below(1000);
    rules.push_back(rule);
  }
  if (!rules.empty()) worker["outcomes"] = rules;
  auto step = [keys](draws& g, bool) -> json {
    const std::uint64_t k = g.below(100);
    if (k < 20) return sleep_step(g);
    if (k < 30) return {{"cancel_worker", {{"key", g.key(keys)}, {"after_ns", g.duration(300)}}}};
    json join = {{"key", g.key(keys)}, {"count", g.between(1, 10)}, {"gap_ns", g.below(80)}};
    if (g.chance(30)) join["leave_after_ns"] = g.between(1, 300);
    return {{"join", join}};
  };
  return {{"system", {{"cores", cores}, {"single_flight", json::object()}}},
          {"behaviour", {{"worker", worker}}},
          {"workload", {{"actors", actors(d, cores, step)}}}};
}

json shards(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 8);
  const std::uint64_t classes = d.between(1, 2);
  json cls = json::array();
  for (std::uint64_t c = 0; c < classes; ++c) cls.push_back({{"max_inflight", d.between(1, 3)}});
  json config = {{"count", d.between(1, 3)},
                 {"classes", cls},
                 {"mailbox_capacity", d.between(1, 8)},
                 {"evict_after_ns", d.between(100, 5000)},
                 {"tick_ns", d.between(100, 2000)},
                 {"coalesce_duplicates", d.chance(40)}};
  if (d.chance(30)) config["max_pending"] = d.between(1, 16);
  json processor = {{"duration_ns", d.duration(300)},
                    {"state", d.one_of<std::string>({"accumulate", "keep", "drop"})}};
  json rules = json::array();
  for (std::uint64_t r = d.below(4); r > 0; --r) {
    rules.push_back({{"when", d.when(keys)},
                     {"outcome", d.one_of<std::string>({"ok", "drop", "error_clean", "error_in_doubt", "panic"})}});
  }
  if (!rules.empty()) processor["outcomes"] = rules;
  auto step = [keys, classes](draws& g, bool last) -> json {
    const std::uint64_t k = g.below(100);
    if (last && k < 10) return {{"shutdown", json::object()}};
    if (k < 20) return sleep_step(g);
    json s = {{"key", g.key(keys)}, {"count", g.between(1, 15)}, {"gap_ns", g.below(120)}};
    if (classes > 1 && g.chance(50)) s["class"] = g.below(classes);
    if (g.chance(40)) s["request_id"] = json{{"random_below", g.between(1, 6)}};
    if (g.chance(30)) s["ttl_ns"] = g.below(2000);
    return {{k < 35 ? "try_submit" : "submit", s}};
  };
  return {{"system", {{"cores", cores}, {"shards", config}}},
          {"behaviour", {{"processor", processor}}},
          {"workload", {{"actors", actors(d, cores, step)}}}};
}

}  // namespace

const std::vector<std::string>& components() {
  static const std::vector<std::string> names = {"lanes", "shards", "flights"};
  return names;
}

json document(const std::string& component, std::uint64_t seed) {
  draws d(seed);
  std::string which = component;
  if (which == "any") which = d.one_of(components());
  const std::uint64_t cores = d.between(1, 3);
  json body;
  if (which == "lanes") {
    body = lanes(d, cores);
  } else if (which == "shards") {
    body = shards(d, cores);
  } else if (which == "flights") {
    body = flights(d, cores);
  } else {
    throw std::invalid_argument("generate: no component '" + component + "'");
  }
  json doc = {{"lockstep", 1},
              {"about", "generated by lockstep explore --generate " + component + " for seed " + std::to_string(seed) +
                            " (" + which + ")"}};
  for (auto it = body.begin(); it != body.end(); ++it) doc[it.key()] = it.value();
  doc["liveness_ns"] = 100'000'000;  // 100 ms of virtual time: far past every drawn duration
  return doc;
}

}  // namespace lockstep::scenario::generate
