#include "tools/scenario/swarm.hpp"

#include <functional>
#include <string_view>

#include "sim/prng.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::scenario::swarm {
namespace {

using cli::input_error;
using cli::pointer_token;
using cli::printable;
using cli::shown;

// The values that may be swarm ranges: the components' configuration and the
// outcome rules' percentages, each used once per run. "*" is an array index.
// Not system.cores: it is also the default of --cores and bounds every
// actor's core, which the reader checks before any seed is known.
constexpr std::string_view knobs[] = {
    "/system/shards/count",
    "/system/shards/classes/*/max_inflight",
    "/system/shards/mailbox_capacity",
    "/system/shards/max_pending",
    "/system/shards/evict_after_ns",
    "/system/shards/admit_batch",
    "/system/shards/tick_ns",
    "/system/shards/coalesce_duplicates",
    "/system/shards/panic_policy",
    "/system/lanes/idle_ttl_ns",
    "/system/lanes/capacity",
    "/system/lanes/placement",
    "/behaviour/processor/outcomes/*/when/percent",
    "/behaviour/worker/outcomes/*/when/percent",
};

// A stream of its own: seed ^ this ("SWARM_01"), never the schedule's seed.
constexpr std::uint64_t stream = 0x53574152'4d5f3031ULL;

bool is_index(std::string_view token) {
  return !token.empty() && token.find_first_not_of("0123456789") == std::string_view::npos;
}

bool is_knob(const std::vector<std::string>& tokens) {
  for (std::string_view knob : knobs) {
    std::size_t i = 0;
    bool match = true;
    knob.remove_prefix(1);
    while (match && !knob.empty()) {
      const std::size_t slash = knob.find('/');
      const std::string_view part = knob.substr(0, slash);
      knob = slash == std::string_view::npos ? std::string_view() : knob.substr(slash + 1);
      match = i < tokens.size() && (part == "*" ? is_index(tokens[i]) : tokens[i] == part);
      ++i;
    }
    if (match && i == tokens.size()) return true;
  }
  return false;
}

bool is_range_form(const nlohmann::json& v) {
  return v.is_object() && v.size() == 1 && (v.contains("range") || v.contains("one_of"));
}

std::string pointer_of(const std::vector<std::string>& tokens) {
  std::string p;
  for (const auto& t : tokens) p += "/" + pointer_token(t);
  return p;
}

// Visits every swarm range in document order: nlohmann objects iterate
// their keys sorted, arrays by index.
void walk(const nlohmann::json& node, std::vector<std::string>& tokens,
          const std::function<void(const nlohmann::json&, const std::vector<std::string>&)>& at_range) {
  if (is_range_form(node) && is_knob(tokens)) {
    at_range(node, tokens);
    return;
  }
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      tokens.push_back(it.key());
      walk(it.value(), tokens, at_range);
      tokens.pop_back();
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      tokens.push_back(std::to_string(i));
      walk(node[i], tokens, at_range);
      tokens.pop_back();
    }
  }
}

[[noreturn]] void fail(const std::string& file, const std::string& pointer, const std::string& expected) {
  throw input_error(file + ": " + printable(pointer, 200) + ": expected " + expected);
}

}  // namespace

std::vector<std::string> ranges_in(const nlohmann::json& doc) {
  std::vector<std::string> out;
  std::vector<std::string> tokens;
  walk(doc, tokens, [&](const nlohmann::json&, const std::vector<std::string>& at) { out.push_back(pointer_of(at)); });
  return out;
}

void check_ranges(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  std::vector<std::string> tokens;
  walk(doc, tokens, [&](const nlohmann::json& r, const std::vector<std::string>& at) {
    if (!r.contains("range")) return;  // one_of: the schema fixes its items and that it is not empty
    const nlohmann::json& lh = r["range"];
    // The schema has made both unsigned integers.
    if (lh.is_array() && lh.size() == 2 && lh[0].is_number_unsigned() && lh[1].is_number_unsigned() &&
        lh[0].get<std::uint64_t>() > lh[1].get<std::uint64_t>()) {
      fail(file, prefix + pointer_of(at) + "/range", "[lo, hi] with lo <= hi, found " + shown(lh));
    }
  });
}

void refuse_ranges(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  const std::vector<std::string> at = ranges_in(doc);
  if (at.empty()) return;
  fail(file, prefix + at.front(),
       "a fixed value, found the swarm range " + shown(doc.at(nlohmann::json::json_pointer(at.front()))) + " (" +
           std::to_string(at.size()) + " in the file; explore --swarm and run --swarm draw them from each seed)");
}

resolution resolve(const nlohmann::json& doc, std::uint64_t seed) {
  resolution out;
  out.document = doc;
  sim::prng rng(seed ^ stream);
  std::vector<std::string> tokens;
  walk(doc, tokens, [&](const nlohmann::json& r, const std::vector<std::string>& at) {
    nlohmann::json value;
    if (r.contains("range")) {
      const auto lo = r["range"][0].get<std::uint64_t>();
      const auto hi = r["range"][1].get<std::uint64_t>();
      // Every range draws once, a one-value range too: the values after it
      // do not move when a range is narrowed.
      value = lo + rng.below(hi - lo + 1);  // the schema bounds hi far below 2^64 - 1
    } else {
      const nlohmann::json& choices = r["one_of"];
      value = choices[static_cast<std::size_t>(rng.below(choices.size()))];
    }
    const std::string pointer = pointer_of(at);
    out.document.at(nlohmann::json::json_pointer(pointer)) = value;
    out.values.push_back({pointer, value});
  });
  return out;
}

nlohmann::json values_json(const std::vector<drawn>& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& d : values) j[d.pointer] = d.value;
  return j;
}

std::string values_text(const nlohmann::json& values) {
  std::string s;
  for (auto it = values.begin(); it != values.end(); ++it) {
    s += (s.empty() ? "" : " ") + it.key() + "=" + it.value().dump();
  }
  return s;
}

}  // namespace lockstep::scenario::swarm
