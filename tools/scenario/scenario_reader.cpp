#include "tools/scenario/scenario_reader.hpp"

#include <set>
#include <string>

#include "tools/scenario/schema_check.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::scenario {
namespace {

using cli::input_error;
using cli::printable;
using cli::shown;

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

}  // namespace

scenario read_scenario(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  check_against_schema(doc, file, prefix);
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
    s.lanes = lanes;
  }
  if (doc.contains("behaviour") && doc["behaviour"].contains("consumer") &&
      doc["behaviour"]["consumer"].contains("duration_ns")) {
    s.consumer_duration =
        duration_of(doc["behaviour"]["consumer"]["duration_ns"], file, prefix + "/behaviour/consumer/duration_ns");
  }
  std::set<std::string> names;
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
      if (st.contains("route")) {
        const nlohmann::json& r = st["route"];
        out.what = step::kind::route;
        out.key = key_of(r["key"]);
        out.count = r.value("count", std::uint64_t{1});
        out.gap_ns = r.value("gap_ns", std::uint64_t{0});
      } else if (st.contains("sleep_ns")) {
        out.what = step::kind::sleep;
        out.sleep_ns = st["sleep_ns"].get<std::uint64_t>();
      } else {
        out.what = step::kind::drop_router;
      }
      if (out.what != step::kind::sleep && !s.lanes) {
        const std::string kind = out.what == step::kind::route ? "route" : "drop_router";
        fail(file, at + "/steps/" + std::to_string(j) + "/" + kind,
             "a step on a component present in /system (" + kind + " needs /system/lanes), found no lanes");
      }
      act.steps.push_back(out);
    }
    s.actors.push_back(std::move(act));
  }
  // Every component is optional in the schema, so that later versions can
  // add shards and single-flight; a system needs at least one.
  if (!s.lanes) fail(file, prefix + "/system", "at least one component (lanes), found " + shown(sys));
  if (doc.contains("oracles")) {
    for (const auto& o : doc["oracles"]) s.oracles.push_back(o.get<std::string>());
  } else {
    s.oracles = lane_oracle_names();
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
