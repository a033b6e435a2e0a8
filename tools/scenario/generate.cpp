#include "tools/scenario/generate.hpp"

#include <stdexcept>

namespace lockstep::scenario::generate {
namespace {

using json = nlohmann::json;

/// The draws of one document. Every helper gives its simplest value at choice 0.
class draws {
 public:
  explicit draws(choices& c) : c_(c) {}
  std::uint64_t below(std::uint64_t n) { return c_.below(n); }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  /// True `percent` times in a hundred; false at choice 0.
  bool chance(std::uint64_t percent) { return below(100) >= 100 - percent; }
  /// One of `v`: the first at choice 0, so the simplest goes first.
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[below(v.size())]; }

  /// A fixed duration, or a range the run draws from.
  json duration(std::uint64_t max_ns) {
    const std::uint64_t lo = below(max_ns + 1);
    if (!chance(50)) return lo;
    return json{{"range", {lo, between(lo, max_ns)}}};
  }
  /// A fixed key, or {"random_below": keys}.
  json key(std::uint64_t keys) {
    if (!chance(70)) return below(keys);
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
  /// Up to `max` outcome rules over `outcomes` (the first, the plain one, at choice 0).
  json rules(std::uint64_t keys, std::uint64_t max, const std::vector<std::string>& outcomes) {
    json out = json::array();
    for (std::uint64_t r = below(max + 1); r > 0; --r) out.push_back({{"when", when(keys)}, {"outcome", one_of(outcomes)}});
    return out;
  }

 private:
  choices& c_;
};

bool has_outcome(const json& rules, const char* outcome) {
  for (const json& r : rules) {
    if (r["outcome"] == outcome) return true;
  }
  return false;
}

/// Actors on the system's cores, each with 1 to 4 steps from `step(draws, last)`.
/// `observe`: an observe step whose count holds before anything has run (0
/// lanes, 0 flights, nothing started), which a lone actor may take first: the
/// one moment a generated workload knows a count without a wait.
template <class Step>
json actors(draws& d, std::uint64_t cores, Step&& step, const json& observe = nullptr) {
  json out = json::array();
  const std::uint64_t n = d.between(1, 3);
  for (std::uint64_t a = 0; a < n; ++a) {
    const std::uint64_t core = d.below(cores);
    json steps = json::array();
    if (n == 1 && !observe.is_null() && d.chance(30)) steps.push_back({{"observe", observe}});
    const std::uint64_t m = d.between(1, 4);
    for (std::uint64_t s = 0; s < m; ++s) steps.push_back(step(d, s + 1 == m));
    out.push_back({{"name", "a" + std::to_string(a)}, {"core", core}, {"steps", steps}});
  }
  return out;
}

json sleep_step(draws& d) { return {{"sleep_ns", d.between(1, 2000)}}; }

/// The router's settings: idle ttl, capacity, placement.
json lanes_config(draws& d) {
  json lanes = {{"idle_ttl_ns", d.chance(50) ? json(d.between(50, 3000)) : json(nullptr)},
                {"capacity", d.chance(60) ? json(d.between(1, 4)) : json(nullptr)}};
  if (d.chance(30)) lanes["placement"] = "key";
  return lanes;
}

/// A route step. `ttl`: the router's idle ttl (0: none); a gap of exactly
/// the ttl sends the next item as the lane's idle timer fires (the seed's
/// route-meets-reap race), which gaps drawn at random almost never do.
json route_step(draws& d, std::uint64_t keys, bool own_capacity, std::uint64_t ttl = 0) {
  const std::uint64_t gap = ttl > 0 && d.chance(25) ? ttl : d.below(100);
  json route = {{"key", d.key(keys)}, {"count", d.between(1, 12)}, {"gap_ns", gap}};
  if (own_capacity && d.chance(15)) route["capacity"] = d.chance(50) ? json(d.between(1, 4)) : json(nullptr);
  return {{"route", route}};
}

/// The lane consumer: a duration, outcomes (errors, panics). `may_escape`:
/// a panic may escape the consumer (contain false) — and then ends only its
/// lane, as under tokio; a panic that fails the run is no engine bug.
json consumer(draws& d, std::uint64_t keys, bool may_escape) {
  json c = {{"duration_ns", d.duration(300)}};
  const json rules = d.rules(keys, 2, {"ok", "error", "panic"});
  if (!rules.empty()) c["outcomes"] = rules;
  if (may_escape && d.chance(20)) {
    c["contain"] = false;
    if (has_outcome(rules, "panic") || d.chance(50)) c["escaped_panic"] = "ends_lane";
  }
  return c;
}

json lanes(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 4);
  const json lanes = lanes_config(d);
  const bool reaps = !lanes["idle_ttl_ns"].is_null();
  const std::uint64_t ttl = reaps ? lanes["idle_ttl_ns"].get<std::uint64_t>() : 0;
  const json system = {{"cores", cores}, {"lanes", lanes}};
  const json consumer_of = consumer(d, keys, true);
  auto step = [keys, reaps, ttl](draws& g, bool last) -> json {
    const std::uint64_t k = g.below(100);
    if (k < 55) return route_step(g, keys, true, ttl);
    if (k < 70) return reaps && g.chance(25) ? json{{"sleep_ns", ttl}} : sleep_step(g);
    if (k < 80) return {{"cancel_lane", {{"key", g.key(keys)}, {"after_ns", g.duration(1500)}}}};
    // With an idle ttl every lane is reaped once the routes stop: a count every run reaches.
    if (k < 88 && reaps) return {{"wait_until", {{"lane_count", 0}, {"poll_ns", g.between(1, 200)}}}};
    if (last) return {{"drop_router", json::object()}};
    return route_step(g, keys, true);
  };
  return {{"system", system},
          {"behaviour", {{"consumer", consumer_of}}},
          {"workload", {{"actors", actors(d, cores, step, json{{"lane_count", 0}})}}}};
}

json worker(draws& d, std::uint64_t keys) {
  json w = {{"duration_ns", d.duration(200)}};
  json rules = d.rules(keys, 3, {"ok", "error", "panic", "stops_early"});
  for (json& rule : rules) {
    if ((rule["outcome"] == "ok" || rule["outcome"] == "error") && d.chance(50)) rule["value"] = d.below(1000);
  }
  if (!rules.empty()) w["outcomes"] = rules;
  return w;
}

json flights(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 4);
  const json worker_of = worker(d, keys);
  // Join ids drawn so far (any actor's: a leave may name another actor's join).
  std::vector<std::string> ids;
  auto step = [keys, &ids](draws& g, bool) -> json {
    const std::uint64_t k = g.below(100);
    if (k < 50 || (k >= 85 && ids.empty())) {
      json join = {{"key", g.key(keys)}, {"count", g.between(1, 10)}, {"gap_ns", g.below(80)}};
      if (g.chance(30)) join["leave_after_ns"] = g.between(1, 300);
      if (g.chance(25)) {
        ids.push_back("j" + std::to_string(ids.size()));
        join["id"] = ids.back();
      }
      return {{"join", join}};
    }
    if (k < 65) return sleep_step(g);
    if (k < 75) return {{"cancel_worker", {{"key", g.key(keys)}, {"after_ns", g.duration(300)}}}};
    // Every flight ends (workers' durations are finite): a count every run reaches.
    if (k < 85) return {{"wait_until", {{"in_flight", 0}, {"poll_ns", g.between(1, 200)}}}};
    return {{"leave", {{"join", g.one_of(ids)}}}};
  };
  return {{"system", {{"cores", cores}, {"single_flight", json::object()}}},
          {"behaviour", {{"worker", worker_of}}},
          {"workload", {{"actors", actors(d, cores, step, json{{"in_flight", 0}})}}}};
}

struct shard_setup {
  json config;
  std::uint64_t classes = 1;
};

/// The scheduler's settings and its processor; the abort policy only where
/// no processor panics (an abort on a drawn panic is the policy, not a bug).
shard_setup shards_config(draws& d, json& processor, std::uint64_t keys) {
  shard_setup out;
  out.classes = d.between(1, 2);
  json cls = json::array();
  for (std::uint64_t c = 0; c < out.classes; ++c) cls.push_back({{"max_inflight", d.between(1, 3)}});
  out.config = {{"count", d.between(1, 3)},
                {"classes", cls},
                {"mailbox_capacity", d.between(1, 8)},
                {"evict_after_ns", d.between(100, 5000)},
                {"tick_ns", d.between(100, 2000)},
                {"coalesce_duplicates", d.chance(40)}};
  if (d.chance(30)) out.config["max_pending"] = d.between(1, 16);
  if (d.chance(25)) out.config["admit_batch"] = d.between(1, 4);
  processor = {{"duration_ns", d.duration(300)}, {"state", d.one_of<std::string>({"keep", "accumulate", "drop"})}};
  const json rules = d.rules(keys, 3, {"ok", "drop", "error_clean", "error_in_doubt", "panic"});
  if (!rules.empty()) processor["outcomes"] = rules;
  if (!has_outcome(rules, "panic") && d.chance(10)) out.config["panic_policy"] = "abort";
  return out;
}

json shards(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 8);
  json processor;
  const shard_setup setup = shards_config(d, processor, keys);
  const std::uint64_t classes = setup.classes;
  auto step = [keys, classes](draws& g, bool last) -> json {
    const std::uint64_t k = g.below(100);
    if (last && k >= 90) return {{"shutdown", json::object()}};
    if (k >= 65 && k < 80) return sleep_step(g);
    json s = {{"key", g.key(keys)}, {"count", g.between(1, 15)}, {"gap_ns", g.below(120)}};
    if (classes > 1 && g.chance(50)) s["class"] = g.below(classes);
    if (g.chance(40)) s["request_id"] = json{{"random_below", g.between(1, 6)}};
    if (g.chance(30)) s["ttl_ns"] = g.below(2000);
    return {{k >= 50 && k < 65 ? "try_submit" : "submit", s}};
  };
  return {{"system", {{"cores", cores}, {"shards", setup.config}}},
          {"behaviour", {{"processor", processor}}},
          {"workload", {{"actors", actors(d, cores, step, json{{"stat", "started"}, {"value", 0}})}}}};
}

/// Lanes in front of a single-flight table, shards, or both: each consumer
/// looks its item up (key % key_mod) and/or forwards it to the shards.
json composed(draws& d, std::uint64_t cores) {
  const std::uint64_t keys = d.between(1, 6);
  const std::uint64_t behind = d.below(3);  // 0: both, 1: single-flight, 2: shards
  const bool flight = behind != 2;
  const bool shard = behind != 1;
  json system = {{"cores", cores}, {"lanes", lanes_config(d)}};
  const std::uint64_t ttl = system["lanes"]["idle_ttl_ns"].is_null() ? 0 : system["lanes"]["idle_ttl_ns"].get<std::uint64_t>();
  json behaviour = {{"consumer", consumer(d, keys, false)}};
  json wiring = json::object();
  if (flight) {
    system["single_flight"] = json::object();
    wiring["lookup"] = {{"key_mod", d.between(1, 4)}};
    behaviour["worker"] = worker(d, keys);
  }
  if (shard) {
    json processor;
    const shard_setup setup = shards_config(d, processor, keys);
    system["shards"] = setup.config;
    json forward = {{"via", d.one_of<std::string>({"submit", "try_submit"})}, {"class", d.below(setup.classes)}};
    if (d.chance(30)) forward["ttl_ns"] = d.below(2000);
    wiring["forward"] = forward;
    behaviour["processor"] = processor;
  }
  system["wiring"] = wiring;
  auto step = [keys, ttl](draws& g, bool last) -> json {
    const std::uint64_t k = g.below(100);
    if (k < 70) return route_step(g, keys, false, ttl);
    if (k < 88 || !last) return sleep_step(g);
    return {{"drop_router", json::object()}};
  };
  return {{"system", system}, {"behaviour", behaviour}, {"workload", {{"actors", actors(d, cores, step)}}}};
}

}  // namespace

const std::vector<std::string>& components() {
  static const std::vector<std::string> names = {"lanes", "shards", "flights", "composed"};
  return names;
}

json document(const std::string& component, choices& c, const std::string& about) {
  draws d(c);
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
  } else if (which == "composed") {
    body = composed(d, cores);
  } else {
    throw std::invalid_argument("generate: no component '" + component + "'");
  }
  json doc = {{"lockstep", 1}, {"about", about + " (" + which + ")"}};
  for (auto it = body.begin(); it != body.end(); ++it) doc[it.key()] = it.value();
  doc["liveness_ns"] = 100'000'000;  // 100 ms of virtual time: far past every drawn duration
  return doc;
}

json document(const std::string& component, std::uint64_t seed) {
  seeded_choices c(seed);
  return document(component, c, "generated by lockstep explore --generate " + component + " for seed " + std::to_string(seed));
}

}  // namespace lockstep::scenario::generate
