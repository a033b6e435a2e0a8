#include "tools/cli/shrinker.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tools/cli/explore_summary.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/crash_report.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

// A named namespace, not an anonymous one: the CLI is one translation unit
// (a unity build), where every file's anonymous namespace is the same one.
namespace shrink_impl {

using nlohmann::json;

// The kinds of step that carry items, and so a count and a key.
constexpr const char* item_kinds[] = {"route", "submit", "try_submit", "join"};

/// The one object a step is made of ({"submit": {...}}), or null for a step
/// without parameters (sleep_ns) or one that is not an object.
json* item_body(json& step) {
  if (!step.is_object()) return nullptr;
  for (const char* k : item_kinds) {
    auto it = step.find(k);
    if (it != step.end() && it->is_object()) return &*it;
  }
  return nullptr;
}

const json* item_body(const json& step) { return item_body(const_cast<json&>(step)); }

json& actors_of(json& doc) { return doc["workload"]["actors"]; }

}  // namespace shrink_impl

case_size scenario_size(const nlohmann::json& scenario) {
  using namespace shrink_impl;
  case_size s;
  const json* actors = nullptr;
  if (scenario.contains("workload") && scenario["workload"].contains("actors")) actors = &scenario["workload"]["actors"];
  if (actors == nullptr || !actors->is_array()) return s;
  std::set<std::uint64_t> fixed;
  std::uint64_t random_below = 0;  // keys drawn below the largest bound: 0 .. bound-1
  s.actors = actors->size();
  for (const json& a : *actors) {
    if (!a.contains("steps") || !a["steps"].is_array()) continue;
    s.steps += a["steps"].size();
    for (const json& step : a["steps"]) {
      const json* body = item_body(step);
      if (body == nullptr) continue;
      s.items += body->contains("count") && (*body)["count"].is_number_unsigned() ? (*body)["count"].get<std::uint64_t>()
                                                                                   : 1;
      if (!body->contains("key")) continue;
      const json& key = (*body)["key"];
      if (key.is_number_unsigned()) fixed.insert(key.get<std::uint64_t>());
      if (key.is_object() && key.contains("random_below") && key["random_below"].is_number_unsigned()) {
        random_below = std::max(random_below, key["random_below"].get<std::uint64_t>());
      }
    }
  }
  s.keys = random_below;
  for (const std::uint64_t k : fixed) s.keys += k >= random_below ? 1 : 0;
  return s;
}

std::string failure_signature(const sim::failure& f) {
  // The same grouping as explore's "failures by reason": kind, and the oracle's name.
  return failure_reason(std::string(sim::to_string(f.kind)), f.message);
}

namespace shrink_impl {

using clock = std::chrono::steady_clock;

class search {
 public:
  search(const failure_record& rec, const shrink_limits& limits)
      : rec_(rec), limits_(limits), started_(clock::now()), best_(rec.scenario) {
    signature_ = failure_signature(*rec.result.failed);
    base_ = rec.config;
    base_.trace = sim::trace_mode::hash;
    base_.record_decisions = true;
    if (base_.strategy == "replay") {
      // A record with no seed behind it (one shrink wrote): candidates follow
      // its decisions where they still fit, and never diverge.
      base_.strategy = "guided";
      base_.options.decisions = rec.result.decisions;
    }
    best_result_ = rec.result;
  }

  shrink_outcome run() {
    shrink_outcome out;
    out.oracle = signature_;
    out.before = scenario_size(rec_.scenario);
    out.before.cores = rec_.config.cores;
    out.before.decisions = rec_.result.decisions.size();
    out.before.preemptions = count_preemptions(rec_.scenario, rec_.result.decisions).preemptions.size();

    // The scenario to its fixpoint, then the schedule, then the scenario
    // again (fewer preemptions may let more of it go), until neither changes
    // or a budget runs out. A file with exact expectations keeps its fifo schedule.
    bool schedule_changed = false;
    for (bool first = true; !exhausted(); first = false) {
      ++rounds_;
      if (!shrink_scenario() && !first) break;
      if (best_.contains("expect") || exhausted() || !shrink_schedule()) break;
      schedule_changed = true;
      // Later scenario candidates follow the shrunk schedule where it fits,
      // not the seed's, which would bring the preemptions back.
      base_.strategy = "guided";
      base_.options.decisions = best_result_.decisions;
    }

    failure_record shrunk = rec_;
    shrunk.path.clear();
    shrunk.scenario = best_;
    shrunk.result = best_result_;
    shrunk.result.trace_text.clear();
    // A schedule that was edited is no seed's: its decisions are the run.
    if (schedule_changed) shrunk.config.strategy = "replay";
    shrunk.config.cores = base_.cores;
    out.shrunk = std::move(shrunk);
    out.after = scenario_size(best_);
    out.after.cores = base_.cores;
    out.after.decisions = best_result_.decisions.size();
    out.after.preemptions = count_preemptions(best_, best_result_.decisions).preemptions.size();
    out.runs = runs_;
    out.kept = kept_;
    out.rounds = rounds_;
    out.out_of_runs = out_of_runs_;
    out.out_of_time = out_of_time_;
    return out;
  }

 private:
  bool exhausted() {
    if (runs_ >= limits_.max_runs) out_of_runs_ = true;
    if (limits_.time_ms > 0 && clock::now() - started_ >= std::chrono::milliseconds(limits_.time_ms)) {
      out_of_time_ = true;
    }
    return out_of_runs_ || out_of_time_;
  }

  /// One pass of every scenario edit, repeated until none is kept.
  bool shrink_scenario() {
    bool any = false;
    for (bool again = true; again && !exhausted();) {
      again = false;
      again = remove_actors() || again;
      again = remove_steps() || again;
      again = lower_counts() || again;
      again = simplify_keys() || again;
      again = shorten_times() || again;
      again = simplify_system() || again;
      again = simplify_submissions() || again;
      any = any || again;
    }
    return any;
  }

  /// The candidate as a runnable scenario, or null when the reader refuses it.
  std::shared_ptr<const prepared> read(const json& doc) const { return read(doc, base_.cores); }

  std::shared_ptr<const prepared> read(const json& doc, std::uint32_t cores) const {
    try {
      // Through its text, so the reader sees exactly what it would in a file.
      scenario::scenario s = scenario::read_scenario(parse_strict(doc.dump(), rec_.path), rec_.path, "/scenario");
      scenario::check_run_settings(s, rec_.config.strategy, cores, "/scenario");
      s.source = rec_.scenario_file;
      return std::make_shared<const prepared>(prepare_scenario(std::move(s)));
    } catch (const input_error&) {
      return nullptr;  // not a scenario: skipped, never reported
    }
  }

  sim::run_result run_once_described(const prepared& p, const sim::run_config& c) {
    crash_report::describe("lockstep: crashed in a candidate run while shrinking " + rec_.path + " (" +
                           run_summary(p, c) + ", candidate " + std::to_string(runs_) + ")\n");
    auto r = run_once(p, c);
    crash_report::clear();
    return r;
  }

  bool same_failure(const sim::run_result& r) const {
    return r.failed && r.failed->kind != sim::failure_kind::replay_divergence &&
           failure_signature(*r.failed) == signature_;
  }

  /// Runs the candidate with the record's seed and strategy; keeps it if it
  /// fails the same oracle.
  /// `cores`: the candidate also runs on that many cores (system.cores shrinks with the run's).
  bool attempt(json candidate, std::optional<std::uint32_t> cores = std::nullopt) {
    if (exhausted()) return false;
    sim::run_config c = base_;
    if (cores) c.cores = *cores;
    const auto p = read(candidate, c.cores);
    if (!p) return false;
    ++runs_;
    auto r = run_once_described(*p, c);
    if (!same_failure(r)) return false;
    best_ = std::move(candidate);
    best_result_ = std::move(r);
    base_.cores = c.cores;
    ++kept_;
    return true;
  }

  /// The values to try below `v` towards `floor`: the floor itself, half
  /// way, one less (each once, smaller first).
  static std::vector<std::uint64_t> lower_steps(std::uint64_t v, std::uint64_t floor) {
    std::vector<std::uint64_t> out;
    for (const std::uint64_t to : {floor, std::max(floor, v / 2), v - 1}) {
      if (to >= floor && to < v && (out.empty() || to > out.back())) out.push_back(to);
    }
    return out;
  }

  /// Lowers the unsigned value at `where` towards `floor` while the failure stays.
  bool lower_value(const json::json_pointer& where, std::uint64_t floor) {
    bool any = false;
    while (!exhausted() && best_.contains(where) && best_.at(where).is_number_unsigned()) {
      bool kept = false;
      for (const std::uint64_t to : lower_steps(best_.at(where).get<std::uint64_t>(), floor)) {
        json candidate = best_;
        candidate.at(where) = to;
        if (attempt(std::move(candidate))) {
          kept = true;
          break;
        }
      }
      if (!kept) break;
      any = true;
    }
    return any;
  }

  /// Tries the document without the field at `where` (its default: off, none).
  bool drop_field(const json::json_pointer& where) {
    if (exhausted() || !best_.contains(where)) return false;
    json candidate = best_;
    candidate.at(where.parent_pointer()).erase(where.back());
    return attempt(std::move(candidate));
  }

  // The system's settings towards the simplest: fewer cores (the run's with
  // the file's) and shards, budgets and capacities towards 1, fewer classes,
  // coalescing and the abort policy off.
  bool simplify_system() {
    bool any = false;
    while (!exhausted() && best_.contains("system") && best_["system"].contains("cores")) {
      bool kept = false;
      for (const std::uint64_t to : lower_steps(base_.cores, 1)) {
        json candidate = best_;
        candidate["system"]["cores"] = to;
        for (json& a : actors_of(candidate)) {
          if (a.contains("core") && a["core"].is_number_unsigned()) a["core"] = a["core"].get<std::uint64_t>() % to;
        }
        if (attempt(std::move(candidate), static_cast<std::uint32_t>(to))) {
          kept = true;
          break;
        }
      }
      if (!kept) break;
      any = true;
    }
    if (best_["system"].contains("shards")) {
      const std::string at = "/system/shards";
      any = lower_value(json::json_pointer(at + "/count"), 1) || any;
      if (best_["system"]["shards"].contains("classes")) {
        any = remove_chunks(json::json_pointer(at + "/classes")) || any;
        for (std::size_t i = 0; i < best_["system"]["shards"]["classes"].size() && !exhausted(); ++i) {
          any = lower_value(json::json_pointer(at + "/classes/" + std::to_string(i) + "/max_inflight"), 1) || any;
        }
      }
      for (const char* knob : {"mailbox_capacity", "max_pending", "admit_batch"}) {
        any = lower_value(json::json_pointer(at + "/" + knob), 1) || any;
      }
      for (const char* knob : {"coalesce_duplicates", "panic_policy"}) {
        any = drop_field(json::json_pointer(at + "/" + knob)) || any;
      }
    }
    if (best_["system"].contains("lanes")) any = lower_value(json::json_pointer("/system/lanes/capacity"), 1) || any;
    return any;
  }

  // Submissions: no deadline (else a shorter one), no request id (else a
  // fixed 0, else fewer drawn ids).
  bool simplify_submissions() {
    auto submission = [](json& step) -> json* {
      if (!step.is_object()) return nullptr;
      for (const char* k : {"submit", "try_submit"}) {
        auto it = step.find(k);
        if (it != step.end() && it->is_object()) return &*it;
      }
      return nullptr;
    };
    bool any = false;
    for (const char* field : {"ttl_ns", "request_id"}) {
      any = for_each_step([&](json& step) {
        json* body = submission(step);
        if (body == nullptr || !body->contains(field)) return false;
        body->erase(field);
        return true;
      }) || any;
    }
    any = for_each_step([&](json& step) {
      json* body = submission(step);
      return body != nullptr && lower(*body, "ttl_ns", u64_or(*body, "ttl_ns", 0) / 2);
    }) || any;
    auto drawn_id = [&](json& step) -> json* {
      json* body = submission(step);
      if (body == nullptr || !body->contains("request_id")) return nullptr;
      json& id = (*body)["request_id"];
      return id.is_object() && id.contains("random_below") ? &id : nullptr;
    };
    any = for_each_step([&](json& step) {
      json* id = drawn_id(step);
      if (id == nullptr) return false;
      *id = std::uint64_t{0};
      return true;
    }) || any;
    any = for_each_step([&](json& step) {
      json* id = drawn_id(step);
      return id != nullptr && lower(*id, "random_below", std::max<std::uint64_t>(u64_or(*id, "random_below", 1) / 2, 1));
    }) || any;
    return any;
  }

  /// Removes chunks of the array at `where` (halves first, then quarters,
  /// down to single elements), keeping at least one element.
  bool remove_chunks(const json::json_pointer& where) {
    bool any = false;
    const std::size_t n = best_.at(where).size();
    for (std::size_t chunk = std::max<std::size_t>(n / 2, 1); chunk >= 1 && !exhausted(); chunk /= 2) {
      std::size_t i = 0;
      while (!exhausted()) {
        const std::size_t size = best_.at(where).size();
        if (i >= size || size <= 1) break;
        const std::size_t take = std::min(chunk, size - i);
        if (take >= size) break;  // never all of them
        json candidate = best_;
        auto& arr = candidate.at(where);
        arr.erase(arr.begin() + static_cast<std::ptrdiff_t>(i), arr.begin() + static_cast<std::ptrdiff_t>(i + take));
        if (attempt(std::move(candidate))) {
          any = true;  // the next chunk has moved into place i
        } else {
          i += take;
        }
      }
      if (chunk == 1) break;
    }
    return any;
  }

  bool remove_actors() { return remove_chunks(json::json_pointer("/workload/actors")); }

  bool remove_steps() {
    bool any = false;
    for (std::size_t a = 0; a < actors_of(best_).size() && !exhausted(); ++a) {
      any = remove_chunks(json::json_pointer("/workload/actors/" + std::to_string(a) + "/steps")) || any;
    }
    return any;
  }

  /// Calls `edit(candidate_step)` for every step in turn; `edit` changes the
  /// step and returns true to try it (the candidate is the whole document).
  template <class Edit>
  bool for_each_step(Edit edit) {
    bool any = false;
    for (std::size_t a = 0; a < actors_of(best_).size(); ++a) {
      for (std::size_t s = 0; s < actors_of(best_)[a]["steps"].size(); ++s) {
        // Each step may be edited again while the edit keeps succeeding (halving).
        while (!exhausted()) {
          json candidate = best_;
          if (!edit(actors_of(candidate)[a]["steps"][s])) break;
          if (!attempt(std::move(candidate))) break;
          any = true;
        }
      }
    }
    return any;
  }

  /// Tries `value` for the unsigned field `field` of `obj` when it is smaller.
  static bool lower(json& obj, const char* field, std::uint64_t value) {
    if (!obj.contains(field) || !obj[field].is_number_unsigned()) return false;
    if (obj[field].get<std::uint64_t>() <= value) return false;
    obj[field] = value;
    return true;
  }

  static std::uint64_t u64_or(const json& obj, const char* field, std::uint64_t fallback) {
    return obj.contains(field) && obj[field].is_number_unsigned() ? obj[field].get<std::uint64_t>() : fallback;
  }

  // Counts: first straight to 1, then halving, then one less.
  bool lower_counts() {
    bool any = for_each_step([](json& step) {
      json* body = item_body(step);
      return body != nullptr && lower(*body, "count", 1);
    });
    any = for_each_step([](json& step) {
      json* body = item_body(step);
      return body != nullptr && lower(*body, "count", u64_or(*body, "count", 1) / 2);
    }) || any;
    any = for_each_step([](json& step) {
      json* body = item_body(step);
      const std::uint64_t c = body ? u64_or(*body, "count", 1) : 1;
      return c > 1 && lower(*body, "count", c - 1);
    }) || any;
    return any;
  }

  // Keys: a drawn key becomes the fixed key 0, else its range halves; then
  // each fixed key is mapped onto the smallest one, largest first.
  bool simplify_keys() {
    auto drawn = [](json& step) -> json* {
      json* body = item_body(step);
      if (body == nullptr || !body->contains("key")) return nullptr;
      json& key = (*body)["key"];
      return key.is_object() && key.contains("random_below") ? &key : nullptr;
    };
    bool any = for_each_step([&](json& step) {
      json* key = drawn(step);
      if (key == nullptr) return false;
      *key = std::uint64_t{0};  // unsigned, as a parsed file holds it
      return true;
    });
    any = for_each_step([&](json& step) {
      json* key = drawn(step);
      return key != nullptr && lower(*key, "random_below", std::max<std::uint64_t>(u64_or(*key, "random_below", 1) / 2, 1));
    }) || any;
    any = for_each_step([&](json& step) {
      json* key = drawn(step);
      const std::uint64_t m = key ? u64_or(*key, "random_below", 1) : 1;
      return m > 1 && lower(*key, "random_below", m - 1);
    }) || any;

    std::set<std::uint64_t> fixed;
    for (json& a : actors_of(best_)) {
      for (json& step : a["steps"]) {
        const json* body = item_body(step);
        if (body && body->contains("key") && (*body)["key"].is_number_unsigned()) {
          fixed.insert((*body)["key"].get<std::uint64_t>());
        }
      }
    }
    // One fixed key left: the simplest is 0.
    if (fixed.size() == 1 && *fixed.begin() != 0 && !exhausted()) {
      json candidate = best_;
      for (json& a : actors_of(candidate)) {
        for (json& step : a["steps"]) {
          json* body = item_body(step);
          if (body && body->contains("key") && (*body)["key"].is_number_unsigned()) (*body)["key"] = std::uint64_t{0};
        }
      }
      any = attempt(std::move(candidate)) || any;
    }
    if (fixed.size() < 2) return any;
    const std::uint64_t smallest = *fixed.begin();
    for (auto it = fixed.rbegin(); it != fixed.rend() && *it != smallest && !exhausted(); ++it) {
      json candidate = best_;
      for (json& a : actors_of(candidate)) {
        for (json& step : a["steps"]) {
          json* body = item_body(step);
          if (body && body->contains("key") && (*body)["key"] == *it) (*body)["key"] = smallest;
        }
      }
      any = attempt(std::move(candidate)) || any;
    }
    return any;
  }

  // Times: gaps go (back to back), sleeps and leave-after delays go to 0 or
  // halve, a drawn duration becomes its low end, a fixed one goes to 0 or halves.
  bool shorten_times() {
    bool any = for_each_step([](json& step) {
      json* body = item_body(step);
      if (body == nullptr || u64_or(*body, "gap_ns", 0) == 0) return false;
      body->erase("gap_ns");
      return true;
    });
    for (const bool to_zero : {true, false}) {
      any = for_each_step([to_zero](json& step) {
        if (step.is_object() && step.contains("sleep_ns")) {
          return lower(step, "sleep_ns", to_zero ? 0 : u64_or(step, "sleep_ns", 0) / 2);
        }
        json* body = item_body(step);
        return body != nullptr && lower(*body, "leave_after_ns", to_zero ? 0 : u64_or(*body, "leave_after_ns", 0) / 2);
      }) || any;
    }
    for (const char* who : {"consumer", "processor", "worker"}) {
      const json::json_pointer where("/behaviour/" + std::string(who) + "/duration_ns");
      while (!exhausted() && best_.contains(where)) {
        json candidate = best_;
        json& d = candidate.at(where);
        if (d.is_object() && d.contains("range") && d["range"].is_array() && !d["range"].empty()) {
          d = d["range"][0];
        } else if (!(d.is_number_unsigned() && d.get<std::uint64_t>() > 0)) {
          break;
        } else {
          d = d.get<std::uint64_t>() / 2;
        }
        if (!attempt(std::move(candidate))) break;
        any = true;
      }
    }
    return any;
  }

  // --- the schedule ---------------------------------------------------------

  sim::run_config guided_config(std::vector<std::uint32_t> guide, std::shared_ptr<sim::guided_stats> stats) const {
    sim::run_config c = base_;
    c.strategy = "guided";
    c.options.decisions = std::move(guide);
    c.options.guided = std::move(stats);
    return c;
  }

  /// The preemptions of the run `decisions` describe (one run, outside the budget).
  sim::guided_stats count_preemptions(const json& doc, const std::vector<std::uint32_t>& decisions) {
    const auto p = read(doc);
    if (!p) return {};
    auto stats = std::make_shared<sim::guided_stats>();
    (void)run_once_described(*p, guided_config(decisions, stats));
    return *stats;
  }

  /// Runs `guide` on the shrunk scenario; keeps it if it fails the same
  /// oracle with fewer preemptions than `than`.
  bool attempt_schedule(const prepared& p, std::vector<std::uint32_t> guide, std::size_t than,
                        sim::guided_stats& stats_out) {
    if (exhausted()) return false;
    ++runs_;
    auto stats = std::make_shared<sim::guided_stats>();
    auto r = run_once_described(p, guided_config(std::move(guide), stats));
    if (!same_failure(r) || stats->preemptions.size() >= than) return false;
    best_result_ = std::move(r);
    stats_out = *stats;
    ++kept_;
    return true;
  }

  bool shrink_schedule() {
    const auto p = read(best_);
    if (!p || exhausted()) return false;
    sim::guided_stats now = count_preemptions(best_, best_result_.decisions);
    bool any = false;
    // Cut the list short before its k-th preemption (k from 0: none at all);
    // after the cut the fallback never preempts. The first cut that still
    // fails is the shortest prefix that does.
    for (std::size_t k = 0; k < now.preemptions.size() && !exhausted(); ++k) {
      const auto& d = best_result_.decisions;
      std::vector<std::uint32_t> guide(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(now.preemptions[k].at));
      if (attempt_schedule(*p, std::move(guide), now.preemptions.size(), now)) {
        any = true;
        break;
      }
    }
    // Then one at a time: the preempted fiber continues instead; the rest of
    // the list is followed where it still fits.
    for (std::size_t j = 0; j < now.preemptions.size() && !exhausted();) {
      std::vector<std::uint32_t> guide = best_result_.decisions;
      guide[now.preemptions[j].at] = now.preemptions[j].previous;
      if (attempt_schedule(*p, std::move(guide), now.preemptions.size(), now)) {
        any = true;  // the list changed: look at preemption j of the new run
      } else {
        ++j;
      }
    }
    return any;
  }

  const failure_record& rec_;
  shrink_limits limits_;
  clock::time_point started_;
  std::string signature_;
  sim::run_config base_;
  json best_;
  sim::run_result best_result_;
  std::uint64_t runs_ = 0;
  std::uint64_t kept_ = 0;
  std::uint64_t rounds_ = 0;
  bool out_of_runs_ = false;
  bool out_of_time_ = false;
};

}  // namespace shrink_impl

shrink_outcome shrink_record(const failure_record& rec, const shrink_limits& limits) {
  shrink_impl::search s(rec, limits);
  return s.run();
}

}  // namespace lockstep::cli
