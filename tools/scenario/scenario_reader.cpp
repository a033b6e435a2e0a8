#include "tools/scenario/scenario_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/probes.hpp"
#include "tools/scenario/schema_check.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/strict_json.hpp"
#include "tools/suggest.hpp"

namespace lockstep::scenario {
namespace {

using cli::input_error;
using cli::printable;
using cli::shown;

[[noreturn]] void fail(const std::string& file, const std::string& pointer, const std::string& expected);

/// "must_reach": probes of the components present, each a name in
/// engine/probes.hpp; a list for every strategy, or an object of lists, one
/// per strategy named (the schema admits random, pct and fifo).
void read_must_reach(const std::string& file, const std::string& at, const nlohmann::json& list, scenario& s) {
  if (list.is_object()) {
    for (const auto& [strategy, probes] : list.items()) {
      scenario one;  // the same checks, list by list
      one.lanes = s.lanes;
      one.shards = s.shards;
      one.single_flight = s.single_flight;
      read_must_reach(file, at + "/" + strategy, probes, one);
      // An object's keys arrive sorted: fifo, pct, random.
      s.must_reach_by_strategy.emplace_back(strategy, std::move(one.must_reach));
    }
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string name = list[i].get<std::string>();
    const std::string_view component = lockstep::probes::component_of(name);
    const bool present = (component == "lanes" && s.lanes) || (component == "flight" && s.single_flight) ||
                         (component == "shards" && s.shards);
    if (lockstep::probes::find(name) == lockstep::probes::count || !present) {
      // The closest name among the probes of the components this scenario has.
      std::string_view closest;
      std::size_t best = SIZE_MAX;
      for (const std::string_view n : lockstep::probes::names) {
        const std::string_view c = lockstep::probes::component_of(n);
        if (!((c == "lanes" && s.lanes) || (c == "flight" && s.single_flight) || (c == "shards" && s.shards))) {
          continue;
        }
        const std::size_t d = cli::edit_distance(name, n);  // naming the probe a misspelt name was closest to
        if (d < best) {
          best = d;
          closest = n;
        }
      }
      fail(file, at + "/" + std::to_string(i),
           "a probe of a component in /system (engine/probes.hpp; closest: " + std::string(closest) + "), found " +
               shown(list[i]));
    }
    s.must_reach.push_back(name);
  }
}

[[noreturn]] void fail(const std::string& file, const std::string& pointer, const std::string& expected) {
  throw input_error(file + ": " + printable(pointer.empty() ? "/" : pointer, 200) + ": expected " + expected);
}

// The schema has already fixed every type and range below.
duration duration_of(const nlohmann::json& v, const std::string& file, const std::string& pointer) {
  if (v.is_number_unsigned()) return {v.get<std::uint64_t>(), v.get<std::uint64_t>()};
  const auto lo = v["range"][0].get<std::uint64_t>();
  const auto hi = v["range"][1].get<std::uint64_t>();
  if (lo > hi) fail(file, pointer + "/range", "[lo, hi] with lo <= hi, found " + shown(v["range"]));
  return {lo, hi};
}

key_spec key_of(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return {v.get<std::uint64_t>(), 0};
  return {0, v["random_below"].get<std::uint64_t>()};
}

/// The engine's planted bug a component's `canary` names: `component`_NAME
/// in engine/plant.hpp (the schema lists exactly those; test_plants checks
/// the two agree). In a build without planted bugs a canary is refused.
plant::bug planted_bug(const std::string& file, const std::string& pointer, const std::string& component,
                       const nlohmann::json& canary) {
  const std::string name = canary.get<std::string>();
  const std::optional<plant::bug> b = plant::by_name(component + "_" + name);
  if (!b) throw std::logic_error("scenario reader: the schema's " + component + " canary '" + name + "' is no planted bug");
  if (!plant::compiled_in()) {
    fail(file, pointer,
         "\"none\" in this build: planted bugs are compiled only into a selfcheck build (cmake "
         "-DLOCKSTEP_SELFCHECK=ON; tools/dev builds one), found " + shown(canary));
  }
  return *b;
}

shards_system shards_of(const nlohmann::json& j) {
  shards_system out;
  out.count = j["count"].get<std::size_t>();
  for (const auto& c : j["classes"]) out.max_inflight.push_back(c["max_inflight"].get<std::size_t>());
  out.mailbox_capacity = j["mailbox_capacity"].get<std::size_t>();
  out.max_pending = j.value("max_pending", out.max_pending);
  out.evict_after_ns = j.value("evict_after_ns", out.evict_after_ns);
  out.admit_batch = j.value("admit_batch", out.admit_batch);
  out.tick_ns = j.value("tick_ns", out.tick_ns);
  out.coalesce_duplicates = j.value("coalesce_duplicates", false);
  out.panic_abort = j.value("panic_policy", "contain") == "abort";
  return out;
}

outcome_kind outcome_of(const std::string& name) {
  if (name == "drop") return outcome_kind::drop;
  if (name == "error_clean") return outcome_kind::error_clean;
  if (name == "error_in_doubt") return outcome_kind::error_in_doubt;
  if (name == "panic") return outcome_kind::panic;
  if (name == "crash_segv") return outcome_kind::crash_segv;
  if (name == "crash_abort") return outcome_kind::crash_abort;
  if (name == "crash_overflow") return outcome_kind::crash_overflow;
  return outcome_kind::ok;
}

processor_behaviour processor_of(const nlohmann::json& p, const std::string& file, const std::string& at) {
  processor_behaviour out;
  if (p.contains("duration_ns")) out.duration_ns = duration_of(p["duration_ns"], file, at + "/duration_ns");
  const std::string state = p.value("state", "accumulate");
  out.state = state == "keep" ? state_model::keep : state == "drop" ? state_model::drop : state_model::accumulate;
  if (p.contains("outcomes")) {
    for (const auto& r : p["outcomes"]) {
      outcome_rule rule;
      const nlohmann::json& w = r["when"];
      if (w.contains("key")) {
        rule.on = outcome_rule::when::key;
        rule.value = w["key"].get<std::uint64_t>();
      } else if (w.contains("nth_call")) {
        rule.on = outcome_rule::when::nth_call;
        rule.value = w["nth_call"].get<std::uint64_t>();
      } else {
        rule.on = outcome_rule::when::percent;
        rule.value = w["percent"].get<std::uint64_t>();
      }
      rule.outcome = outcome_of(r["outcome"].get<std::string>());
      out.outcomes.push_back(rule);
    }
  }
  return out;
}

worker_behaviour worker_of(const nlohmann::json& w, const std::string& file, const std::string& at) {
  worker_behaviour out;
  if (w.contains("duration_ns")) out.duration_ns = duration_of(w["duration_ns"], file, at + "/duration_ns");
  if (w.contains("outcomes")) {
    for (const auto& r : w["outcomes"]) {
      worker_rule rule;
      const nlohmann::json& when = r["when"];
      if (when.contains("key")) {
        rule.on = worker_rule::when::key;
        rule.value = when["key"].get<std::uint64_t>();
      } else if (when.contains("nth_call")) {
        rule.on = worker_rule::when::nth_call;
        rule.value = when["nth_call"].get<std::uint64_t>();
      } else {
        rule.on = worker_rule::when::percent;
        rule.value = when["percent"].get<std::uint64_t>();
      }
      const std::string o = r["outcome"].get<std::string>();
      rule.outcome = o == "error"         ? worker_outcome::error
                     : o == "panic"       ? worker_outcome::panic
                     : o == "stops_early" ? worker_outcome::stops_early
                                          : worker_outcome::ok;
      if (r.contains("value")) rule.answer = r["value"].get<std::uint64_t>();
      out.outcomes.push_back(rule);
    }
  }
  return out;
}


}  // namespace

scenario read_scenario(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  check_against_schema(doc, file, prefix);
  // Swarm ranges are resolved before the reader (swarm.hpp); one left here was given without --swarm.
  swarm::check_ranges(doc, file, prefix);
  swarm::refuse_ranges(doc, file, prefix);
  return read_schema_checked_scenario(doc, file, prefix);
}

scenario read_schema_checked_scenario(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  scenario s;
  s.source = file;
  s.document = doc;
  s.about = doc["about"].get<std::string>();
  const nlohmann::json& sys = doc["system"];
  s.cores = sys["cores"].get<std::uint32_t>();
  if (sys.contains("lanes")) {
    const nlohmann::json& l = sys["lanes"];
    lanes_system lanes;
    if (!l["idle_ttl_ns"].is_null()) lanes.idle_ttl_ns = l["idle_ttl_ns"].get<std::int64_t>();
    if (!l["capacity"].is_null()) lanes.capacity = l["capacity"].get<std::size_t>();
    lanes.place_by_key = l.value("placement", "producer") == "key";
    const std::string canary = l.value("canary", "none");
    if (canary == "send_after_unlock") lanes.canary = lanes_canary::send_after_unlock;
    if (canary == "decrement_at_dequeue") lanes.canary = lanes_canary::decrement_at_dequeue;
    if (canary == "replace_lane_on_route") lanes.canary = lanes_canary::replace_lane_on_route;
    if (canary == "exit_guard_keeps_entry") lanes.canary = lanes_canary::exit_guard_keeps_entry;
    if (canary == "lane_count_only_grows") lanes.canary = lanes_canary::lane_count_only_grows;
    if (canary == "lane_holds_map") lanes.canary = lanes_canary::lane_holds_map;
    if (canary == "consumer_loses_after_panic") lanes.canary = lanes_canary::consumer_loses_after_panic;
    if (canary == "consumer_reorders_after_panic") lanes.canary = lanes_canary::consumer_reorders_after_panic;
    // The consumer_* canaries break the scenario's consumer wrapper, not the engine: any build runs them.
    if (lanes.canary != lanes_canary::none && !is_consumer_canary(lanes.canary)) {
      lanes.plant = planted_bug(file, prefix + "/system/lanes/canary", "lanes", l["canary"]);
    }
    s.lanes = lanes;
  }
  if (sys.contains("shards")) {
    s.shards = shards_of(sys["shards"]);
    if (sys["shards"].value("canary", "none") != "none") {
      s.shards->canary = planted_bug(file, prefix + "/system/shards/canary", "shards", sys["shards"]["canary"]);
    }
  }
  if (sys.contains("single_flight")) {
    flight_system f;
    const std::string canary = sys["single_flight"].value("canary", "none");
    if (canary == "send_skips_without_subscribers") f.canary = flight_canary::send_skips_without_subscribers;
    if (canary == "decrement_outside_lock") f.canary = flight_canary::decrement_outside_lock;
    if (canary == "removal_without_identity_check") f.canary = flight_canary::removal_without_identity_check;
    if (canary == "keep_retired_slot") f.canary = flight_canary::keep_retired_slot;
    if (canary == "abandon_after_answer") f.canary = flight_canary::abandon_after_answer;
    if (canary == "count_answers_as_abandoned") f.canary = flight_canary::count_answers_as_abandoned;
    if (canary == "recycled_outcome") f.canary = flight_canary::recycled_outcome;
    if (f.canary != flight_canary::none) {
      f.plant = planted_bug(file, prefix + "/system/single_flight/canary", "flights", sys["single_flight"]["canary"]);
    }
    s.single_flight = f;
  }
  if (sys.contains("wiring")) {
    const nlohmann::json& w = sys["wiring"];
    wiring_spec wiring;
    if (w.contains("lookup")) wiring.lookup_key_mod = w["lookup"].value("key_mod", std::uint64_t{0});
    if (w.contains("forward")) {
      const nlohmann::json& f = w["forward"];
      wiring.forward_via_try = f.value("via", "submit") == "try_submit";
      wiring.forward_class = f.value("class", std::uint32_t{0});
      if (f.contains("ttl_ns")) wiring.forward_ttl_ns = f["ttl_ns"].get<std::int64_t>();
    }
    s.wiring = wiring;
  }
  if (doc.contains("behaviour") && doc["behaviour"].contains("consumer")) {
    const nlohmann::json& c = doc["behaviour"]["consumer"];
    if (c.contains("duration_ns")) {
      s.consumer_duration = duration_of(c["duration_ns"], file, prefix + "/behaviour/consumer/duration_ns");
    }
    if (c.contains("outcomes")) {
      for (const auto& r : c["outcomes"]) {
        consumer_rule rule;
        const nlohmann::json& when = r["when"];
        if (when.contains("key")) {
          rule.on = consumer_rule::when::key;
          rule.value = when["key"].get<std::uint64_t>();
        } else if (when.contains("nth_call")) {
          rule.on = consumer_rule::when::nth_call;
          rule.value = when["nth_call"].get<std::uint64_t>();
        } else {
          rule.on = consumer_rule::when::percent;
          rule.value = when["percent"].get<std::uint64_t>();
        }
        const std::string o = r["outcome"].get<std::string>();
        rule.outcome = o == "error" ? consumer_outcome::error : o == "panic" ? consumer_outcome::panic : consumer_outcome::ok;
        s.consumer_outcomes.push_back(rule);
      }
    }
    s.consumer_contains = c.value("contain", true);
    s.consumer_escape_ends_lane = c.value("escaped_panic", "fails_run") == "ends_lane";
    if (s.consumer_escape_ends_lane && s.consumer_contains) {
      fail(file, prefix + "/behaviour/consumer/escaped_panic",
           "\"fails_run\" unless contain is false (only a panic that escapes the consumer can end its lane), "
           "found \"ends_lane\"");
    }
  }
  if (doc.contains("behaviour") && doc["behaviour"].contains("processor")) {
    s.processor = processor_of(doc["behaviour"]["processor"], file, prefix + "/behaviour/processor");
  }
  if (doc.contains("behaviour") && doc["behaviour"].contains("worker")) {
    s.worker = worker_of(doc["behaviour"]["worker"], file, prefix + "/behaviour/worker");
  }
  std::set<std::string> names;
  std::set<std::string> join_ids;                              // every join step's id
  std::vector<std::pair<std::string, std::string>> leaves;     // (pointer, id) of each leave step
  const nlohmann::json& actors = doc["workload"]["actors"];
  for (std::size_t i = 0; i < actors.size(); ++i) {
    const std::string at = prefix + "/workload/actors/" + std::to_string(i);
    const nlohmann::json& a = actors[i];
    actor act;
    act.name = a["name"].get<std::string>();
    if (!names.insert(act.name).second) fail(file, at + "/name", "a name no other actor has, found " + shown(a["name"]));
    act.core = a["core"].get<std::uint32_t>();
    if (act.core >= s.cores) {
      fail(file, at + "/core",
           "a core index below /system/cores (" + std::to_string(s.cores) + "), found " + std::to_string(act.core));
    }
    const nlohmann::json& steps = a["steps"];
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const nlohmann::json& st = steps[j];
      step out;
      const std::string step_at = at + "/steps/" + std::to_string(j);
      if (st.contains("route")) {
        const nlohmann::json& r = st["route"];
        out.what = step::kind::route;
        out.key = key_of(r["key"]);
        if (r.contains("capacity")) {
          out.route_capacity = r["capacity"].is_null() ? std::optional<std::size_t>()
                                                       : std::optional<std::size_t>(r["capacity"].get<std::size_t>());
        }
        out.count = r.value("count", std::uint64_t{1});
        out.gap_ns = r.value("gap_ns", std::uint64_t{0});
      } else if (st.contains("sleep_ns")) {
        out.what = step::kind::sleep;
        out.sleep_ns = st["sleep_ns"].get<std::uint64_t>();
      } else if (st.contains("submit") || st.contains("try_submit")) {
        out.what = st.contains("submit") ? step::kind::submit : step::kind::try_submit;
        const nlohmann::json& r = st.contains("submit") ? st["submit"] : st["try_submit"];
        out.key = key_of(r["key"]);
        out.count = r.value("count", std::uint64_t{1});
        out.gap_ns = r.value("gap_ns", std::uint64_t{0});
        out.cls = r.value("class", std::uint32_t{0});
        if (r.contains("ttl_ns")) out.ttl_ns = r["ttl_ns"].get<std::int64_t>();
        if (r.contains("request_id")) out.request_id = key_of(r["request_id"]);
      } else if (st.contains("join")) {
        const nlohmann::json& r = st["join"];
        out.what = step::kind::join;
        out.key = key_of(r["key"]);
        out.count = r.value("count", std::uint64_t{1});
        out.gap_ns = r.value("gap_ns", std::uint64_t{0});
        if (r.contains("leave_after_ns")) out.leave_after_ns = r["leave_after_ns"].get<std::uint64_t>();
        if (r.contains("id")) {
          out.join_id = r["id"].get<std::string>();
          if (!join_ids.insert(out.join_id).second) {
            fail(file, step_at + "/join/id", "an id no other join step has, found " + shown(r["id"]));
          }
        }
      } else if (st.contains("leave")) {
        out.what = step::kind::leave;
        out.join_id = st["leave"]["join"].get<std::string>();
        leaves.emplace_back(step_at + "/leave/join", out.join_id);
      } else if (st.contains("cancel_lane")) {
        const nlohmann::json& r = st["cancel_lane"];
        out.what = step::kind::cancel_lane;
        out.key = key_of(r["key"]);
        if (r.contains("after_ns")) out.after_ns = duration_of(r["after_ns"], file, step_at + "/cancel_lane/after_ns");
        s.cancels_lanes = true;
      } else if (st.contains("cancel_worker")) {
        const nlohmann::json& r = st["cancel_worker"];
        out.what = step::kind::cancel_worker;
        out.key = key_of(r["key"]);
        if (r.contains("after_ns")) out.after_ns = duration_of(r["after_ns"], file, step_at + "/cancel_worker/after_ns");
      } else if (st.contains("observe") || st.contains("wait_until")) {
        const bool waits = st.contains("wait_until");
        const nlohmann::json& r = waits ? st["wait_until"] : st["observe"];
        out.what = waits ? step::kind::wait_until : step::kind::observe;
        const char* const name = waits ? "/wait_until" : "/observe";
        const int chosen = (r.contains("lane_count") ? 1 : 0) + (r.contains("in_flight") ? 1 : 0) +
                           (r.contains("stat") ? 1 : 0);
        if (chosen != 1 || r.contains("value") != r.contains("stat") || (r.contains("shard") && !r.contains("stat"))) {
          fail(file, step_at + name,
               std::string("an object with exactly one of lane_count, in_flight and stat (with value, and "
                           "optional shard)") +
                   (waits ? ", and optional poll_ns" : "") + ", found " + shown(r));
        }
        if (waits) out.poll_ns = r.value("poll_ns", std::uint64_t{10});
        if (r.contains("stat")) {
          out.watch = step::observable::shard_stat;
          out.stat = r["stat"].get<std::string>();
          out.observed = r["value"].get<std::uint64_t>();
          if (!s.shards) {
            fail(file, step_at + name + "/stat",
                 "an observable of a component present in /system (stat needs /system/shards), found no shards");
          }
          if (r.contains("shard")) {
            out.stat_shard = r["shard"].get<std::uint64_t>();
            if (*out.stat_shard >= s.shards->count) {
              fail(file, step_at + name + "/shard",
                   "a shard index below /system/shards/count (" + std::to_string(s.shards->count) + "), found " +
                       std::to_string(*out.stat_shard));
            }
          }
        }
        if (out.watch != step::observable::shard_stat) {
          out.watch = r.contains("in_flight") ? step::observable::in_flight : step::observable::lane_count;
          out.observed =
              r.contains("in_flight") ? r["in_flight"].get<std::uint64_t>() : r["lane_count"].get<std::uint64_t>();
        }
        const bool lanes_needed = out.watch == step::observable::lane_count;
        if (out.watch != step::observable::shard_stat &&
            ((lanes_needed && !s.lanes) || (!lanes_needed && !s.single_flight))) {
          fail(file, step_at + (waits ? "/wait_until/" : "/observe/") + (lanes_needed ? "lane_count" : "in_flight"),
               std::string("an observable of a component present in /system (") +
                   (lanes_needed ? "lane_count needs /system/lanes" : "in_flight needs /system/single_flight") +
                   "), found no " + (lanes_needed ? "lanes" : "single_flight"));
        }
      } else if (st.contains("shutdown")) {
        out.what = step::kind::shutdown;
      } else {
        out.what = step::kind::drop_router;
      }
      const bool lane_step = out.what == step::kind::route || out.what == step::kind::drop_router ||
                             out.what == step::kind::cancel_lane;
      const bool shard_step = out.what == step::kind::submit || out.what == step::kind::try_submit ||
                              out.what == step::kind::shutdown;
      const bool flight_step =
          out.what == step::kind::join || out.what == step::kind::leave || out.what == step::kind::cancel_worker;
      if ((lane_step && !s.lanes) || (shard_step && !s.shards) || (flight_step && !s.single_flight)) {
        const std::string kind = std::string(name_of(out.what));
        const char* needs = lane_step ? "lanes" : shard_step ? "shards" : "single_flight";
        fail(file, step_at + "/" + kind,
             "a step on a component present in /system (" + kind + " needs /system/" + needs + "), found no " +
                 needs);
      }
      if (shard_step && out.what != step::kind::shutdown && out.cls >= s.shards->max_inflight.size()) {
        fail(file, step_at + "/" + std::string(name_of(out.what)) + "/class",
             "a class index below the " + std::to_string(s.shards->max_inflight.size()) +
                 " classes of /system/shards/classes, found " + std::to_string(out.cls));
      }
      act.steps.push_back(out);
    }
    s.actors.push_back(std::move(act));
  }
  // A leave names a join of any actor (steps run concurrently: which comes first is the schedule's).
  for (const auto& [at, id] : leaves) {
    if (join_ids.count(id) == 0) {
      fail(file, at, "the id of a join step in the workload, found " + shown(nlohmann::json(id)));
    }
  }
  // Every component is optional in the schema; a system needs one, or lanes
  // in front of the others with a wiring that says how they are used.
  const int components = int{s.lanes.has_value()} + int{s.shards.has_value()} + int{s.single_flight.has_value()};
  if (components == 0) {
    fail(file, prefix + "/system", "at least one component (lanes, shards or single_flight), found " + shown(sys));
  }
  if (components == 1 && s.wiring) {
    fail(file, prefix + "/system/wiring", "wiring only in a composed system (lanes with shards and/or single_flight)");
  }
  if (components > 1) {
    if (!s.lanes) {
      fail(file, prefix + "/system/lanes",
           "lanes in front of a composed system (their consumer uses shards and single_flight), found shards and "
           "single_flight alone");
    }
    if (!s.wiring) {
      fail(file, prefix + "/system/wiring",
           "a field saying what the lane consumer does with each item (lookup, forward), but it is missing");
    }
    const nlohmann::json& w = sys["wiring"];
    if (s.single_flight && !w.contains("lookup")) {
      fail(file, prefix + "/system/wiring/lookup",
           "a field saying how the consumer looks items up in /system/single_flight, but it is missing");
    }
    if (!s.single_flight && w.contains("lookup")) {
      fail(file, prefix + "/system/wiring/lookup", "a lookup only with /system/single_flight, found no single_flight");
    }
    if (s.shards && !w.contains("forward")) {
      fail(file, prefix + "/system/wiring/forward",
           "a field saying how the consumer forwards items to /system/shards, but it is missing");
    }
    if (!s.shards && w.contains("forward")) {
      fail(file, prefix + "/system/wiring/forward", "a forward only with /system/shards, found no shards");
    }
    if (s.shards && s.wiring->forward_class >= s.shards->max_inflight.size()) {
      fail(file, prefix + "/system/wiring/forward/class",
           "a class index below the " + std::to_string(s.shards->max_inflight.size()) +
               " classes of /system/shards/classes, found " + std::to_string(s.wiring->forward_class));
    }
    if (s.single_flight && s.single_flight->canary != flight_canary::none) {
      fail(file, prefix + "/system/single_flight/canary",
           "\"none\" in a composed system (flight canaries are planted in a single-flight system alone), found " +
               shown(sys["single_flight"]["canary"]));
    }
    if (doc.contains("expect")) {
      fail(file, prefix + "/expect",
           "no expect in a composed system (exact values are for one component under fifo), found " +
               shown(doc["expect"]));
    }
    for (std::size_t i = 0; i < s.actors.size(); ++i) {
      for (std::size_t j = 0; j < s.actors[i].steps.size(); ++j) {
        const step::kind k = s.actors[i].steps[j].what;
        if (k == step::kind::route || k == step::kind::drop_router || k == step::kind::sleep) continue;
        fail(file, prefix + "/workload/actors/" + std::to_string(i) + "/steps/" + std::to_string(j) + "/" + std::string(name_of(k)),
             std::string("a step of the lanes in front of a composed system (route, drop_router, sleep_ns), found ") +
                 std::string(name_of(k)));
      }
    }
  }
  if (doc.contains("behaviour")) {
    const nlohmann::json& b = doc["behaviour"];
    if (b.contains("consumer") && !s.lanes) {
      fail(file, prefix + "/behaviour/consumer",
           "behaviour for a component present in /system (consumer needs /system/lanes), found no lanes");
    }
    if (s.consumer_escape_ends_lane && s.composed()) {
      fail(file, prefix + "/behaviour/consumer/escaped_panic",
           "\"fails_run\" in a composed system (a lane ended by an escaped panic is judged for lanes alone), "
           "found \"ends_lane\"");
    }
    if (b.contains("processor") && !s.shards) {
      fail(file, prefix + "/behaviour/processor",
           "behaviour for a component present in /system (processor needs /system/shards), found no shards");
    }
    if (b.contains("worker") && !s.single_flight) {
      fail(file, prefix + "/behaviour/worker",
           "behaviour for a component present in /system (worker needs /system/single_flight), found no single_flight");
    }
  }
  std::vector<std::string> applicable;
  auto add = [&applicable](const std::vector<std::string>& more) {
    for (const auto& n : more) {
      bool seen = false;
      for (const auto& a : applicable) seen = seen || a == n;
      if (!seen) applicable.push_back(n);  // per_key_order is both the lanes' and the shards'
    }
  };
  if (s.lanes) add(lane_oracle_names());
  if (s.single_flight) add(flight_oracle_names());
  if (s.shards) add(shard_oracle_names());
  if (s.composed()) add(composed_oracle_names());
  // A spec name is applicable where its component is present.
  std::vector<std::string> specs;
  if (s.lanes) specs.emplace_back("spec_lanes");
  if (s.shards) specs.emplace_back("spec_shards");
  if (s.single_flight) specs.emplace_back("spec_flights");
  const char* component = s.composed() ? "composed system" : s.lanes ? "lanes" : s.shards ? "shards" : "single_flight";
  if (doc.contains("oracles")) {
    const nlohmann::json& os = doc["oracles"];
    for (std::size_t i = 0; i < os.size(); ++i) {
      const std::string name = os[i].get<std::string>();
      bool known = false;
      std::string listed;
      for (const auto& a : specs) {
        known = known || a == name;
        listed += (listed.empty() ? "" : ", ") + a;
      }
      for (const auto& a : applicable) {
        known = known || a == name;
        listed += (listed.empty() ? "" : ", ") + a;
      }
      if (!known) {
        fail(file, prefix + "/oracles/" + std::to_string(i),
             std::string("an oracle of the ") + component + " present in /system (" + listed +
                 "), found " + shown(os[i]));
      }
      bool spec = false;
      for (const component_spec& c : component_specs()) {
        if (name != c.name) continue;
        spec = true;
        for (const auto& rule : c.rules()) {  // every rule of the component, once
          bool seen = false;
          for (const auto& o : s.oracles) seen = seen || o == rule;
          if (!seen) s.oracles.push_back(rule);
        }
      }
      bool seen = false;
      for (const auto& o : s.oracles) seen = seen || o == name;
      if (!spec && !seen) s.oracles.push_back(name);
    }
  } else {
    s.oracles = applicable;
  }
  if (doc.contains("must_reach")) read_must_reach(file, prefix + "/must_reach", doc["must_reach"], s);
  if (doc.contains("expect_failure")) {
    const nlohmann::json& x = doc["expect_failure"];
    if (doc.contains("expect")) {
      fail(file, prefix + "/expect",
           "no expect alongside /expect_failure (the run is to end in a failure before its counts are taken)");
    }
    s.expect_failure = failure_expectation{x["kind"].get<std::string>(), x.value("contains", std::string())};
  }
  if (doc.contains("liveness_ns")) s.liveness_ns = doc["liveness_ns"].get<std::int64_t>();
  if (doc.contains("expect")) {
    const nlohmann::json& e = doc["expect"];
    expectations x;
    auto opt = [&e](const char* name) {
      return e.contains(name) ? std::optional<std::uint64_t>(e[name].get<std::uint64_t>()) : std::nullopt;
    };
    x.handled = opt("handled");
    x.refused = opt("refused");
    x.lanes_created = opt("lanes_created");
    x.lanes_closed = opt("lanes_closed");
    x.started = opt("started");
    x.completed = opt("completed");
    x.failed = opt("failed");
    x.in_doubt = opt("in_doubt");
    x.panicked = opt("panicked");
    x.coalesced = opt("coalesced");
    x.expired = opt("expired");
    x.evicted = opt("evicted");
    x.handed_back = opt("handed_back");
    x.flights = opt("flights");
    x.joined = opt("joined");
    x.answered = opt("answered");
    x.left = opt("left");
    x.cancelled = opt("cancelled");
    x.published = opt("published");
    x.abandoned = opt("abandoned");
    x.consumer_errors = opt("consumer_errors");
    x.consumer_panics = opt("consumer_panics");
    if (e.contains("consumed")) {
      std::vector<std::uint64_t> ids;
      for (const auto& id : e["consumed"]) ids.push_back(id.get<std::uint64_t>());
      x.consumed = std::move(ids);
    }
    if (e.contains("answers")) {
      std::vector<std::string> answers;
      for (const auto& a : e["answers"]) answers.push_back(a.get<std::string>());
      x.answers = std::move(answers);
    }
    if (e.contains("processed")) {
      std::vector<processed_entry> log;
      for (const auto& p : e["processed"]) {
        processed_entry entry{p["key"].get<std::uint64_t>(), std::nullopt};
        if (!p["state"].is_null()) entry.state = p["state"].get<std::uint64_t>();
        log.push_back(entry);
      }
      x.processed = std::move(log);
    }
    if (e.contains("flushed")) {
      std::vector<flushed_entry> log;
      for (const auto& p : e["flushed"]) log.push_back({p["key"].get<std::uint64_t>(), p["value"].get<std::uint64_t>()});
      x.flushed = std::move(log);
    }
    if (e.contains("any_order")) {
      const nlohmann::json& lists = e["any_order"];
      for (std::size_t i = 0; i < lists.size(); ++i) {
        const std::string name = lists[i].get<std::string>();
        if (!e.contains(name)) {
          fail(file, prefix + "/expect/any_order/" + std::to_string(i),
               "the name of a list expectation present in /expect, found \"" + name + "\" (no /expect/" + name + ")");
        }
        if (!x.unordered(name)) x.any_order.push_back(name);
      }
    }
    // Each expectation names what one component counts (panicked: shards or single_flight).
    static const char* const lane_fields[] = {"handled",  "refused",         "lanes_created",  "lanes_closed",
                                              "consumed", "consumer_errors", "consumer_panics"};
    static const char* const flight_fields[] = {"flights", "joined",    "answered",  "left",
                                                "cancelled", "published", "abandoned", "answers"};
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (it.key() == "any_order") continue;  // names other expectations, each judged here itself
      bool is_lane = false;
      bool is_flight = false;
      for (const char* f : lane_fields) is_lane = is_lane || it.key() == f;
      for (const char* f : flight_fields) is_flight = is_flight || it.key() == f;
      const char* needs = is_lane ? "lanes" : is_flight ? "single_flight" : "shards";
      const bool present = is_lane ? s.lanes.has_value()
                           : is_flight ? s.single_flight.has_value()
                           : it.key() == "panicked" ? s.shards.has_value() || s.single_flight.has_value()
                                                     : s.shards.has_value();
      if (!present) {
        fail(file, prefix + "/expect/" + it.key(),
             std::string("an expectation on a component present in /system (") + it.key() + " needs /system/" +
                 needs + "), found no " + needs);
      }
    }
    s.expect = x;
  }
  return s;
}

scenario read_scenario_file(const std::string& path) { return read_scenario(cli::read_strict_file(path), path); }

void check_run_settings(const scenario& s, const std::string& strategy, std::uint32_t cores,
                        const std::string& prefix) {
  if (s.expect && strategy != "fifo") {
    fail(s.source, prefix + "/expect",
         "exact expectations only under --strategy fifo (other schedules may differ), found strategy " + strategy);
  }
  for (std::size_t i = 0; i < s.actors.size(); ++i) {
    if (s.actors[i].core >= cores) {
      fail(s.source, prefix + "/workload/actors/" + std::to_string(i) + "/core",
           "a core index below the run's " + std::to_string(cores) + " cores (--cores), found " +
               std::to_string(s.actors[i].core));
    }
  }
}

}  // namespace lockstep::scenario
