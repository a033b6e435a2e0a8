#include "tools/failure_record.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "sim/strategy.hpp"
#include "testing/record_fields.hpp"
#include "tools/output_file.hpp"

namespace lockstep::cli {

nlohmann::json to_json(const failure_record& record) {
  nlohmann::json j;
  testing::write_run_fields(j, record.config, record.result);
  j["scenario_file"] = record.scenario_file;
  j["scenario"] = record.scenario;
  if (!record.swarm.is_null()) j["swarm"] = record.swarm;
  return j;
}

const nlohmann::json& json_reader::at(const std::string& pointer, const char* expected) const {
  const nlohmann::json::json_pointer p(pointer);
  if (!root_.contains(p)) fail(pointer, std::string("a field holding ") + expected + ", but it is missing");
  return root_.at(p);
}

std::uint64_t json_reader::u64(const std::string& pointer) const {
  const auto& v = at(pointer, "an unsigned integer");
  if (!v.is_number_unsigned()) fail(pointer, "an unsigned integer, found " + shown(v));
  return v.get<std::uint64_t>();
}

std::uint64_t json_reader::u64_in(const std::string& pointer, std::uint64_t min, std::uint64_t max) const {
  const std::uint64_t v = u64(pointer);
  if (v < min || v > max) {
    fail(pointer, "an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", found " +
                      std::to_string(v));
  }
  return v;
}

std::string json_reader::string(const std::string& pointer) const {
  const auto& v = at(pointer, "a string");
  if (!v.is_string()) fail(pointer, "a string, found " + shown(v));
  return v.get<std::string>();
}

void json_reader::fail(const std::string& pointer, const std::string& expected) const {
  const std::string where = prefix_ + pointer;
  // Keys in a pointer come from the input: keep the message one short line.
  throw input_error(file_ + ": " + printable(where.empty() ? "/" : where, 200) + ": expected " + expected);
}

namespace {

constexpr std::uint64_t int64_max = 0x7fffffffffffffffULL;

const char* const record_fields[] = {"lockstep_failure_record", "seed", "strategy",
                                     "cores", "pct_depth", "pct_steps", "max_steps", "max_time_ns",
                                     "decisions", "steps", "trace_hash", "failure", "scenario_file",
                                     "scenario", "swarm", "timer_ties", "timer_jitter_ns"};

std::optional<sim::failure_kind> kind_named(const std::string& name) {
  for (int k = 0; k < sim::failure_kind_count; ++k) {
    const auto kind = static_cast<sim::failure_kind>(k);
    if (sim::to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string kind_names() {
  std::string names;
  for (int k = 0; k < sim::failure_kind_count; ++k) {
    names += (names.empty() ? "" : ", ") + std::string(sim::to_string(static_cast<sim::failure_kind>(k)));
  }
  return names;
}

failure_record read_record(const nlohmann::json& root, const std::string& name) {
  json_reader r(name, root);
  if (!root.is_object()) r.fail("", "an object (a lockstep failure record), found " + shown(root));
  // Records of the retired built-in programs (--program) name what ran with
  // /program and /options: say so, rather than "unknown field".
  for (const char* retired : {"program", "options"}) {
    if (root.contains(retired)) {
      r.fail(std::string("/") + retired,
             "a scenario record (with /scenario); this is a record of a built-in program, which lockstep no "
             "longer has: its workloads are scenarios/program_*.json");
    }
  }
  // A record written by a LOCKSTEP_TEST_CASE names its test with /test: it
  // replays only inside the test binary that holds the body.
  if (root.contains("test") && !root.contains("scenario")) {
    r.fail("/test", "a scenario record (with /scenario); this is the record of the library test " +
                        shown(root["test"]) + ", which replays from its own test binary: LOCKSTEP_REPLAY=" +
                        printable(name, 200) + " with that test selected");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    bool known = false;
    for (const char* f : record_fields) known = known || it.key() == f;
    if (!known) r.fail("/" + pointer_token(it.key()), "no such field in a failure record (unknown field)");
  }
  if (r.u64("/lockstep_failure_record") != 1) r.fail("/lockstep_failure_record", "version 1");
  failure_record rec;
  rec.path = name;
  // The scenario itself is checked by the scenario reader, which knows its schema.
  rec.scenario_file = r.string("/scenario_file");
  rec.scenario = r.at("/scenario", "an object (a scenario)");
  if (!rec.scenario.is_object()) r.fail("/scenario", "an object (a scenario), found " + shown(rec.scenario));
  if (root.contains("swarm")) {
    rec.swarm = root["swarm"];
    if (!rec.swarm.is_object()) r.fail("/swarm", "an object of the values a swarm run drew, found " + shown(rec.swarm));
    for (auto it = rec.swarm.begin(); it != rec.swarm.end(); ++it) {
      if (it.key().empty() || it.key().front() != '/') {
        r.fail("/swarm/" + pointer_token(it.key()), "a JSON pointer into /scenario as the key");
      }
      if (it.value().is_object() || it.value().is_array()) {
        r.fail("/swarm/" + pointer_token(it.key()), "a drawn value (an integer, boolean, string or null), found " +
                                                         shown(it.value()));
      }
    }
  }
  rec.config.seed = r.u64("/seed");
  rec.config.strategy = r.string("/strategy");
  // replay: a schedule that no seed produces (lockstep shrink writes one); its decisions are the run.
  if (!sim::is_strategy_name(rec.config.strategy)) {
    r.fail("/strategy", "one of " + sim::strategy_name_list() + ", found " + shown(rec.config.strategy));
  }
  rec.config.cores = static_cast<std::uint32_t>(r.u64_in("/cores", 1, 64));
  rec.config.options.pct_depth = static_cast<std::uint32_t>(r.u64_in("/pct_depth", 1, 64));
  // Only PCT uses k; the other strategies record the unused 0.
  rec.config.options.pct_steps = rec.config.strategy == "pct" ? r.u64_in("/pct_steps", 1, UINT64_MAX)
                                                               : r.u64("/pct_steps");
  rec.config.max_steps = r.u64_in("/max_steps", 1, UINT64_MAX);
  rec.config.max_time_ns = static_cast<std::int64_t>(r.u64_in("/max_time_ns", 0, int64_max));
  // Absent (every record before timers were choices): off.
  if (root.contains("timer_ties")) {
    const auto& v = root["timer_ties"];
    if (!v.is_boolean()) r.fail("/timer_ties", "true or false, found " + shown(v));
    rec.config.timer_ties = v.get<bool>();
  }
  if (root.contains("timer_jitter_ns")) {
    rec.config.timer_jitter_ns =
        static_cast<std::int64_t>(r.u64_in("/timer_jitter_ns", 0, testing::max_timer_jitter_ns));
  }
  const auto& decisions = r.at("/decisions", "an array of fiber ids");
  if (!decisions.is_array()) r.fail("/decisions", "an array of fiber ids, found " + shown(decisions));
  rec.result.decisions.reserve(decisions.size());
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const std::string p = "/decisions/" + std::to_string(i);
    const auto& d = decisions[i];
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > 0xfffffffeULL) {
      r.fail(p, "a fiber id from 0 to 4294967294, found " + shown(d));
    }
    rec.result.decisions.push_back(static_cast<std::uint32_t>(d.get<std::uint64_t>()));
  }
  if (root.contains("steps")) rec.result.steps = r.u64("/steps");
  const std::string hash = r.string("/trace_hash");
  if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail("/trace_hash", "16 lower-case hex digits, found " + shown(hash));
  }
  rec.result.trace_hash = std::stoull(hash, nullptr, 16);
  if (root.contains("failure")) {
    const auto& f = root["failure"];
    if (!f.is_object()) r.fail("/failure", "an object with kind and message, found " + shown(f));
    for (auto it = f.begin(); it != f.end(); ++it) {
      if (it.key() != "kind" && it.key() != "message") {
        r.fail("/failure/" + pointer_token(it.key()), "kind or message (unknown field)");
      }
    }
    const std::string kind = r.string("/failure/kind");
    const auto k = kind_named(kind);
    if (!k) r.fail("/failure/kind", "one of " + kind_names() + ", found " + shown(kind));
    const std::string message = f.contains("message") ? r.string("/failure/message") : std::string();
    rec.result.failed = sim::failure{*k, message};
  }
  return rec;
}

}  // namespace

failure_record read_failure_record_text(std::string_view text, const std::string& name) {
  return read_record(parse_strict(text, name), name);
}

failure_record read_failure_record(const std::string& path) {
  failure_record rec = read_record(read_strict_file(path), path);
  rec.path = path;
  return rec;
}

void write_failure_record(const std::string& path, const failure_record& record) {
  const std::string why = write_output_file(path, to_json(record).dump(2) + "\n");
  if (!why.empty()) throw std::runtime_error(printable(path, 200) + ": the failure record was not written: " + why);
}

}  // namespace lockstep::cli
