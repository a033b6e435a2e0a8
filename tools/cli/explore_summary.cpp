#include "tools/cli/explore_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <type_traits>

#include "engine/probes.hpp"

#include "sim/runtime.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

bool coverage::applies(std::size_t probe) const {
  const std::string_view c = probes::component_of(probes::names[probe]);
  return std::find(components.begin(), components.end(), c) != components.end();
}

coverage coverage_of(const explore_summary& s) {
  coverage c;
  const nlohmann::json doc = s.config.value("scenario_document", nlohmann::json::object());
  const nlohmann::json system = doc.is_object() ? doc.value("system", nlohmann::json::object()) : nlohmann::json();
  if (system.is_object()) {
    if (system.contains("lanes")) c.components.emplace_back("lanes");
    if (system.contains("single_flight")) c.components.emplace_back("flight");
    if (system.contains("shards")) c.components.emplace_back("shards");
  }
  c.runs_hit.assign(probes::count, 0);
  for (const std::uint64_t hits : s.probe_hits) {
    for (std::size_t i = 0; i < probes::count; ++i) c.runs_hit[i] += (hits >> i) & 1U;
  }
  for (std::size_t i = 0; i < probes::count; ++i) {
    if (c.applies(i) && c.runs_hit[i] == 0) c.unreached.push_back(i);
  }
  c.a_then_b.assign(probes::pairs.size(), 0);
  c.b_then_a.assign(probes::pairs.size(), 0);
  for (const std::uint32_t orders : s.probe_orders) {
    for (std::size_t p = 0; p < probes::pairs.size(); ++p) {
      c.a_then_b[p] += (orders & probes::order_ab(p)) != 0 ? 1 : 0;
      c.b_then_a[p] += (orders & probes::order_ba(p)) != 0 ? 1 : 0;
    }
  }
  // must_reach: a list for every strategy, or an object of lists by strategy.
  nlohmann::json wanted = nlohmann::json::array();
  if (doc.is_object() && doc.contains("must_reach")) {
    const nlohmann::json& m = doc["must_reach"];
    const std::string strategy = s.config.value("strategy", std::string());
    if (m.is_array()) wanted = m;
    if (m.is_object() && m.contains(strategy) && m[strategy].is_array()) wanted = m[strategy];
  }
  {
    for (const auto& n : wanted) {
      if (!n.is_string()) continue;
      c.must_reach.push_back(n.get<std::string>());
      const std::size_t i = probes::find(c.must_reach.back());
      if (i == probes::count || c.runs_hit[i] == 0) c.missing.push_back(c.must_reach.back());
    }
  }
  return c;
}

std::uint64_t explore_summary::distinct_schedules() const {
  std::vector<std::uint64_t> h = schedule_hashes;
  std::sort(h.begin(), h.end());
  return static_cast<std::uint64_t>(std::unique(h.begin(), h.end()) - h.begin());
}

std::string failure_reason(const std::string& kind, const std::string& message) {
  // The executor words oracle failures as "oracle 'NAME' failed ..." and
  // "liveness oracle 'NAME' failed ...": the name is what a reader groups by.
  const auto open = message.find("oracle '");
  if ((kind == "oracle" || kind == "liveness") && open != std::string::npos) {
    const auto from = open + 8;
    const auto close = message.find('\'', from);
    if (close != std::string::npos) return kind + " " + message.substr(from, close - from);
  }
  return kind;
}

namespace {
int exit_code_of_kind(const std::string& name) {
  for (int k = 0; k < sim::failure_kind_count; ++k) {
    const auto kind = static_cast<sim::failure_kind>(k);
    if (sim::to_string(kind) == name) return exit_code_of(kind);
  }
  return exit_failed;
}
}  // namespace

bool is_liveness_kind(const std::string& kind) { return exit_code_of_kind(kind) == exit_liveness; }

failure_stop failure_stop::from_config(const nlohmann::json& config) {
  failure_stop f;
  f.stop_after = config.at("stop_after").get<std::uint64_t>();
  if (config.contains("stop_after_liveness")) f.stop_after_liveness = config["stop_after_liveness"].get<std::uint64_t>();
  return f;
}

bool failure_stop::stops_at(const std::string& kind) {
  if (!stop_after_liveness) return stop_after != 0 && ++safety_seen == stop_after;
  if (is_liveness_kind(kind)) return *stop_after_liveness != 0 && ++liveness_seen == *stop_after_liveness;
  return stop_after != 0 && ++safety_seen == stop_after;
}

int exit_code_of(const explore_summary& s) {
  if (s.failures.empty()) return coverage_of(s).missing.empty() ? exit_held : exit_failed;
  if (s.config.contains("stop_after_liveness")) {
    for (const failing_seed& f : s.failures) {
      if (!is_liveness_kind(f.kind)) return exit_code_of_kind(f.kind);
    }
  }
  return exit_code_of_kind(s.failures.front().kind);
}

nlohmann::json to_json(const explore_summary& s) {
  nlohmann::json j;
  j["lockstep_explore_summary"] = 1;
  j["config"] = s.config;
  if (s.shard) j["shard"] = {{"index", s.shard->first}, {"count", s.shard->second}};
  j["runs"] = s.runs();
  j["probe_runs"] = s.probe_runs;
  j["distinct_schedules"] = s.distinct_schedules();
  j["stopped"] = s.stopped;
  std::map<std::string, std::uint64_t> by_reason;
  for (const auto& f : s.failures) ++by_reason[f.reason];
  j["failures"] = s.failures.size();
  j["failures_by_reason"] = by_reason;
  auto& list = j["failing_seeds"] = nlohmann::json::array();
  for (const auto& f : s.failures) {
    list.push_back({{"seed", f.seed}, {"kind", f.kind}, {"reason", f.reason}, {"message", f.message},
                    {"record", f.record}, {"command", f.command}});
    if (!f.swarm.is_null()) list.back()["swarm"] = f.swarm;
  }
  auto& hashes = j["trace_hashes"] = nlohmann::json::array();
  for (auto h : s.trace_hashes) hashes.push_back(sim::hash_hex(h));
  auto& schedules = j["schedule_hashes"] = nlohmann::json::array();
  for (auto h : s.schedule_hashes) schedules.push_back(sim::hash_hex(h));
  auto& hits = j["probe_hits"] = nlohmann::json::array();
  for (auto h : s.probe_hits) hits.push_back(sim::hash_hex(h));
  auto& orders = j["probe_orders"] = nlohmann::json::array();
  for (auto o : s.probe_orders) orders.push_back(sim::hash_hex(o));
  const coverage c = coverage_of(s);
  nlohmann::json cov;
  cov["components"] = c.components;
  cov["probes"] = nlohmann::json::object();
  for (std::size_t i = 0; i < probes::count; ++i) {
    if (c.applies(i)) cov["probes"][std::string(probes::names[i])] = c.runs_hit[i];
  }
  cov["unreached"] = nlohmann::json::array();
  for (std::size_t i : c.unreached) cov["unreached"].push_back(std::string(probes::names[i]));
  cov["race_pairs"] = nlohmann::json::array();
  cov["one_order_pairs"] = nlohmann::json::array();
  for (std::size_t p = 0; p < probes::pairs.size(); ++p) {
    const auto& pair = probes::pairs[p];
    if (!c.applies(pair.a) && !c.applies(pair.b)) continue;
    cov["race_pairs"].push_back({{"race", std::string(pair.race)},
                                 {"a", std::string(probes::names[pair.a])},
                                 {"b", std::string(probes::names[pair.b])},
                                 {"a_then_b_runs", c.a_then_b[p]},
                                 {"b_then_a_runs", c.b_then_a[p]}});
    if ((c.a_then_b[p] == 0) != (c.b_then_a[p] == 0)) cov["one_order_pairs"].push_back(std::string(pair.race));
  }
  cov["must_reach"] = c.must_reach;
  cov["must_reach_missing"] = c.missing;
  cov["must_reach_verdict"] = c.missing.empty() ? "held" : "failed";
  j["coverage"] = cov;
  // The only fields that depend on the machine and the moment.
  j["wall"] = {{"seconds", s.wall_seconds},
               {"runs_per_s", s.wall_seconds > 0 ? static_cast<double>(s.runs()) / s.wall_seconds : 0.0},
               {"executions_per_s", s.wall_seconds > 0 ? static_cast<double>(s.runs() + s.probe_runs) / s.wall_seconds
                                                       : 0.0},
               {"jobs", s.jobs}};
  return j;
}

namespace {

std::uint64_t parse_hash(const json_reader& r, const nlohmann::json& v, const std::string& pointer) {
  if (!v.is_string() || v.get<std::string>().size() != 16 ||
      v.get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail(pointer, "a hash of 16 hex digits, found " + shown(v));
  }
  return std::stoull(v.get<std::string>(), nullptr, 16);
}

}  // namespace

namespace {

/// One summary object, at `prefix` in `path` ("" for a single-file summary,
/// "/summaries/I" inside a several-file one).
explore_summary summary_from_json(const std::string& path, const nlohmann::json& root, const std::string& prefix) {
  const json_reader r(path, root, prefix);
  if (!root.is_object()) r.fail("", "an explore summary (a JSON object from explore --json), found " + shown(root));
  if (r.u64("/lockstep_explore_summary") != 1) r.fail("/lockstep_explore_summary", "version 1");
  // Every field this build writes, and no other: a typo or a field from another tool is refused, not ignored.
  static const char* const known[] = {"lockstep_explore_summary", "config", "shard", "runs", "failures",
                                      "failures_by_reason", "distinct_schedules", "stopped", "probe_runs",
                                      "trace_hashes", "schedule_hashes", "probe_hits", "probe_orders",
                                      "failing_seeds", "coverage", "wall"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) r.fail("/" + pointer_token(it.key()), "only the fields explore --json writes, found an unknown one");
  }
  explore_summary s;
  s.config = r.at("/config", "an object");
  if (!s.config.is_object()) r.fail("/config", "an object, found " + shown(s.config));
  r.string("/config/strategy");
  s.label = "scenario=" + r.string("/config/scenario");
  r.u64("/config/seeds/first");
  r.u64("/config/seeds/last");
  r.u64("/config/stop_after");
  if (s.config.contains("stop_after_liveness")) r.u64("/config/stop_after_liveness");
  if (root.contains("shard")) {
    const auto count = r.u64_in("/shard/count", 1, 65536);
    s.shard = std::pair{r.u64_in("/shard/index", 0, count - 1), count};
  }
  s.probe_runs = r.u64("/probe_runs");
  s.stopped = r.string("/stopped");
  const auto& hashes = r.at("/trace_hashes", "an array of trace hashes");
  if (!hashes.is_array()) r.fail("/trace_hashes", "an array of trace hashes, found " + shown(hashes));
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    s.trace_hashes.push_back(parse_hash(r, hashes[i], "/trace_hashes/" + std::to_string(i)));
  }
  const auto& schedules = r.at("/schedule_hashes", "an array of schedule hashes");
  if (!schedules.is_array() || schedules.size() != hashes.size()) {
    r.fail("/schedule_hashes", "an array of schedule hashes as long as /trace_hashes, found " + shown(schedules));
  }
  for (std::size_t i = 0; i < schedules.size(); ++i) {
    s.schedule_hashes.push_back(parse_hash(r, schedules[i], "/schedule_hashes/" + std::to_string(i)));
  }
  const auto masks = [&](const char* pointer, auto& out, std::uint64_t max) {
    const auto& a = r.at(pointer, "an array of probe masks");
    if (!a.is_array() || a.size() != hashes.size()) {
      r.fail(pointer, "an array of probe masks as long as /trace_hashes, found " + shown(a));
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::uint64_t v = parse_hash(r, a[i], std::string(pointer) + "/" + std::to_string(i));
      if (v > max) r.fail(std::string(pointer) + "/" + std::to_string(i), "a mask of this build's probes");
      out.push_back(static_cast<typename std::decay_t<decltype(out)>::value_type>(v));
    }
  };
  masks("/probe_hits", s.probe_hits, UINT64_MAX);
  masks("/probe_orders", s.probe_orders, UINT32_MAX);
  if (r.u64("/runs") != s.runs()) r.fail("/runs", "the number of /trace_hashes (" + std::to_string(s.runs()) + ")");
  const auto& failing = r.at("/failing_seeds", "an array");
  if (!failing.is_array()) r.fail("/failing_seeds", "an array, found " + shown(failing));
  for (std::size_t i = 0; i < failing.size(); ++i) {
    const std::string p = "/failing_seeds/" + std::to_string(i);
    failing_seed f;
    f.seed = r.u64(p + "/seed");
    f.kind = r.string(p + "/kind");
    f.reason = r.string(p + "/reason");
    f.message = r.string(p + "/message");
    f.record = r.string(p + "/record");
    f.command = r.string(p + "/command");
    if (failing[i].contains("swarm")) {
      f.swarm = failing[i]["swarm"];
      if (!f.swarm.is_object()) r.fail(p + "/swarm", "an object of the values a swarm run drew, found " + shown(f.swarm));
    }
    if (!s.failures.empty() && f.seed <= s.failures.back().seed) r.fail(p + "/seed", "seeds in increasing order");
    s.failures.push_back(std::move(f));
  }
  if (r.u64("/failures") != s.failures.size()) r.fail("/failures", "the number of /failing_seeds");
  if (root.contains("wall")) {
    const auto& w = root["wall"];
    if (w.is_object() && w.contains("seconds") && w["seconds"].is_number()) s.wall_seconds = w["seconds"].get<double>();
    if (w.is_object() && w.contains("jobs") && w["jobs"].is_number_unsigned()) s.jobs = w["jobs"].get<unsigned>();
  }
  return s;
}

}  // namespace

std::vector<explore_summary> read_summaries(const std::string& path) {
  const nlohmann::json root = read_strict_file(path);
  const json_reader r(path, root);
  if (!root.is_object() || !root.contains("lockstep_explore_summaries")) return {summary_from_json(path, root, "")};
  // explore over several FILEs: {"lockstep_explore_summaries": 1, "summaries": [one per file]}.
  if (r.u64("/lockstep_explore_summaries") != 1) r.fail("/lockstep_explore_summaries", "version 1");
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() != "lockstep_explore_summaries" && it.key() != "summaries" && it.key() != "not_run") {
      r.fail("/" + pointer_token(it.key()), "only lockstep_explore_summaries, summaries and not_run, found an unknown field");
    }
  }
  const nlohmann::json& all = r.at("/summaries", "an array of explore summaries");
  if (!all.is_array() || all.empty()) r.fail("/summaries", "a non-empty array of explore summaries, found " + shown(all));
  std::vector<explore_summary> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    out.push_back(summary_from_json(path, all[i], "/summaries/" + std::to_string(i)));
  }
  return out;
}

namespace {

void print_coverage(std::ostream& os, const explore_summary& s) {
  const coverage c = coverage_of(s);
  std::size_t applicable = 0;
  std::string counts;
  for (std::size_t i = 0; i < probes::count; ++i) {
    if (!c.applies(i)) continue;
    ++applicable;
    if (c.runs_hit[i] > 0) {
      counts += (counts.empty() ? "" : ", ") + std::string(probes::names[i]) + "=" + std::to_string(c.runs_hit[i]);
    }
  }
  if (applicable == 0) return;
  os << "  probes reached: " << applicable - c.unreached.size() << " of " << applicable << " (runs hitting each: "
     << (counts.empty() ? "none" : counts) << ")\n";
  if (!c.unreached.empty()) {
    os << "  probes no run hit:";
    for (std::size_t i : c.unreached) os << " " << probes::names[i];
    os << "\n";
  }
  for (std::size_t p = 0; p < probes::pairs.size(); ++p) {
    if ((c.a_then_b[p] == 0) == (c.b_then_a[p] == 0)) continue;
    const auto& pair = probes::pairs[p];
    os << "  race pair seen in one order only: " << pair.race << " (" << probes::names[pair.a] << " then "
       << probes::names[pair.b] << ": " << c.a_then_b[p] << " runs; the reverse: " << c.b_then_a[p] << " runs)\n";
  }
  if (!c.missing.empty()) {
    os << "  must_reach FAILED: no run hit";
    for (const auto& n : c.missing) os << " " << n;
    os << " over these " << s.runs() << " runs\n";
  }
}

}  // namespace

void print_summary(std::ostream& os, const explore_summary& s) {
  const auto& seeds = s.config["seeds"];
  os << "summary: " << s.label << " strategy=" << s.config["strategy"].get<std::string>() << " seeds="
     << seeds["first"].get<std::uint64_t>() << ".." << seeds["last"].get<std::uint64_t>();
  if (s.shard) os << " shard=" << s.shard->first << "/" << s.shard->second;
  os << ": " << s.runs() << " runs";
  if (s.probe_runs > 0) {
    os << " (+" << s.probe_runs << " random runs that "
       << (s.config["strategy"] == "surw"        ? "profiled surw's fibers"
           : s.config["strategy"] == "portfolio" ? "sized pct's k or profiled surw's fibers"
                                                 : "sized pct's k")
       << ")";
  }
  os << ", " << s.failures.size() << " failures, " << s.distinct_schedules() << " distinct schedules, stopped: "
     << s.stopped << "\n";
  std::map<std::string, std::uint64_t> by_reason;
  for (const auto& f : s.failures) ++by_reason[f.reason];
  for (const auto& [reason, n] : by_reason) os << "  failures by reason: " << reason << ": " << n << "\n";
  // Safety and liveness both found: which came first, and where each first did.
  const failing_seed* first_safety = nullptr;
  const failing_seed* first_liveness = nullptr;
  for (const auto& f : s.failures) {
    const failing_seed*& slot = is_liveness_kind(f.kind) ? first_liveness : first_safety;
    if (slot == nullptr) slot = &f;
  }
  if (first_safety != nullptr && first_liveness != nullptr) {
    os << "  found first: " << (first_liveness->seed < first_safety->seed ? "liveness" : "safety")
       << " (first liveness failure: seed " << first_liveness->seed << ", " << first_liveness->reason
       << "; first safety failure: seed " << first_safety->seed << ", " << first_safety->reason << ")\n";
  }
  print_coverage(os, s);
  // A run left going may find thousands: the first few here, every one in --json.
  constexpr std::size_t listed = 20;
  for (std::size_t i = 0; i < s.failures.size() && i < listed; ++i) {
    const auto& f = s.failures[i];
    os << "  failing seed " << f.seed << ": " << f.reason << "\n    " << (f.record.empty() ? "rerun" : "replay")
       << " with: " << f.command << "\n";
    if (!f.swarm.is_null()) os << "    swarm: " << scenario::swarm::values_text(f.swarm) << "\n";
  }
  if (s.failures.size() > listed) {
    os << "  ... and " << s.failures.size() - listed << " more failing seeds (every one is in --json and --junit)\n";
  }
  char line[160];
  const double secs = s.wall_seconds > 0 ? s.wall_seconds : 1e-9;
  std::snprintf(line, sizeof line, "wall: %.2f s, %.0f runs/s, %.0f executions/s, jobs=%u\n", s.wall_seconds,
                static_cast<double>(s.runs()) / secs, static_cast<double>(s.runs() + s.probe_runs) / secs, s.jobs);
  os << line;
}

namespace {

/// Text for XML character data and attributes: the five specials escaped, and
/// bytes XML 1.0 does not allow (controls other than tab and newline) shown as \xNN.
std::string xml_text(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n') {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace

std::string junit_xml(const explore_summary& s) { return junit_xml(std::vector<explore_summary>{s}); }

nlohmann::json to_json(const std::vector<explore_summary>& all) {
  nlohmann::json j;
  j["lockstep_explore_summaries"] = 1;
  j["summaries"] = nlohmann::json::array();
  for (const explore_summary& s : all) j["summaries"].push_back(to_json(s));
  return j;
}

std::string junit_xml(const std::vector<explore_summary>& all) {
  // One <testcase> per (file and strategy, failing seed), each with its one
  // <failure>; a file and strategy with no failing seed is one <testcase>,
  // passed or failed by its must_reach probes. (One testcase holding every
  // failing seed as its own <failure> showed only the first in Jenkins, Azure
  // and GitHub's reporters, and junitparser refused it.)
  std::string cases;
  std::size_t tests = 0, failing = 0;
  double total = 0;
  for (const explore_summary& s : all) {
    total += s.wall_seconds;
    const std::string name = s.label + " strategy=" + s.config["strategy"].get<std::string>();
    const std::string out = "      <system-out>" +
                            xml_text(std::to_string(s.runs()) + " runs, " + std::to_string(s.failures.size()) +
                                     " failures, " + std::to_string(s.distinct_schedules()) +
                                     " distinct schedules, stopped: " + s.stopped) +
                            "</system-out>\n";
    // A failing seed's case takes no share of the file's time: the runs are not timed one by one.
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", s.failures.empty() ? s.wall_seconds : 0.0);
    if (s.failures.empty()) {
      ++tests;
      cases += "    <testcase classname=\"lockstep.explore\" name=\"" + xml_text(name) + "\" time=\"" + secs + "\">\n";
      const coverage cov = coverage_of(s);
      if (!cov.missing.empty()) {
        ++failing;
        std::string names;
        for (const auto& n : cov.missing) names += (names.empty() ? "" : " ") + n;
        cases += "      <failure type=\"must_reach\" message=\"" + xml_text("must_reach: never hit: " + names) + "\">" +
                 xml_text("no run hit these must_reach probes: " + names) + "</failure>\n";
      }
      cases += out + "    </testcase>\n";
      continue;
    }
    for (const auto& f : s.failures) {
      ++tests;
      ++failing;
      cases += "    <testcase classname=\"lockstep.explore\" name=\"" +
               xml_text(name + " seed=" + std::to_string(f.seed)) + "\" time=\"" + secs + "\">\n";
      cases += "      <failure type=\"" + xml_text(f.kind) + "\" message=\"" +
               xml_text("seed " + std::to_string(f.seed) + ": " + f.reason) + "\">" +
               xml_text("seed=" + std::to_string(f.seed) + "\nreason: " + f.reason + "\n" + f.message + "\n" +
                        // a swarm run's drawn values: what made this configuration fail
                        (f.swarm.is_null() ? "" : "swarm: " + scenario::swarm::values_text(f.swarm) + "\n") +
                        (f.record.empty() ? "rerun with: " : "replay with: ") + f.command) +
               "</failure>\n";
      cases += out + "    </testcase>\n";
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", total);
  const std::string counts = "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failing) + "\"";
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += "<testsuites name=\"lockstep explore\" " + counts + " time=\"" + secs + "\">\n";
  x += "  <testsuite name=\"lockstep explore\" " + counts + " errors=\"0\" skipped=\"0\" time=\"" + secs + "\">\n";
  x += cases;
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace lockstep::cli
