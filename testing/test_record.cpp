#include "test_record.hpp"

#include "record_fields.hpp"
#include "../sim/strategy.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace lockstep::testing {

namespace {

constexpr std::uint64_t int64_max = 0x7fffffffffffffffULL;

const char* const fields[] = {"lockstep_failure_record", "test", "seed", "strategy", "cores",
                              "pct_depth", "pct_steps", "max_steps", "max_time_ns", "decisions",
                              "steps", "trace_hash", "failure", "seq_cst_only", "input",
                              "timer_ties", "timer_jitter_ns"};

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

class reader {
 public:
  reader(std::string name, const nlohmann::json& root) : name_(std::move(name)), root_(root) {}
  [[noreturn]] void fail(const std::string& pointer, const std::string& expected) const {
    throw bad_input(name_ + ": " + (pointer.empty() ? "/" : pointer) + ": expected " + expected);
  }
  const nlohmann::json& at(const std::string& pointer, const char* what) const {
    const nlohmann::json::json_pointer p(pointer);
    if (!root_.contains(p)) fail(pointer, std::string("a field holding ") + what + ", but it is missing");
    return root_.at(p);
  }
  std::uint64_t u64_in(const std::string& pointer, std::uint64_t min, std::uint64_t max) const {
    const auto& v = at(pointer, "an unsigned integer");
    if (!v.is_number_unsigned()) fail(pointer, "an unsigned integer, found " + shown(v));
    const auto n = v.get<std::uint64_t>();
    if (n < min || n > max) {
      fail(pointer, "an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", found " +
                        std::to_string(n));
    }
    return n;
  }
  std::string string(const std::string& pointer) const {
    const auto& v = at(pointer, "a string");
    if (!v.is_string()) fail(pointer, "a string, found " + shown(v));
    return v.get<std::string>();
  }

 private:
  std::string name_;
  const nlohmann::json& root_;
};

std::optional<sim::failure_kind> kind_named(const std::string& name) {
  for (int k = 0; k < sim::failure_kind_count; ++k) {
    const auto kind = static_cast<sim::failure_kind>(k);
    if (sim::to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

// Keys as a JSON pointer token (RFC 6901: ~ and / escaped).
std::string token(const std::string& key) {
  std::string t;
  for (char c : key) t += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return t;
}

test_record from_json(const nlohmann::json& root, const std::string& name) {
  reader r(name, root);
  if (!root.is_object()) r.fail("", "an object (a lockstep failure record), found " + shown(root));
  if (root.contains("scenario")) {
    r.fail("/scenario", "a library test's record (with /test); this is a scenario's record: replay it with "
                        "`lockstep replay`");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    bool known = false;
    for (const char* f : fields) known = known || it.key() == f;
    if (!known) r.fail("/" + token(it.key()), "no such field in a library test's failure record (unknown field)");
  }
  if (r.u64_in("/lockstep_failure_record", 1, 1) != 1) r.fail("/lockstep_failure_record", "version 1");
  test_record rec;
  rec.test = r.string("/test");
  if (rec.test.empty()) r.fail("/test", "a test name, found \"\"");
  rec.config.seed = r.u64_in("/seed", 0, UINT64_MAX);
  rec.config.strategy = r.string("/strategy");
  if (!sim::is_strategy_name(rec.config.strategy)) {
    r.fail("/strategy", "one of " + sim::strategy_name_list() + ", found " + shown(rec.config.strategy));
  }
  rec.config.cores = static_cast<std::uint32_t>(r.u64_in("/cores", 1, max_test_cores));
  rec.config.options.pct_depth = static_cast<std::uint32_t>(r.u64_in("/pct_depth", 1, 64));
  rec.config.options.pct_steps =
      r.u64_in("/pct_steps", rec.config.strategy == "pct" ? 1 : 0, UINT64_MAX);
  rec.config.max_steps = r.u64_in("/max_steps", 1, UINT64_MAX);
  rec.config.max_time_ns = static_cast<std::int64_t>(r.u64_in("/max_time_ns", 0, int64_max));
  // Records written before the memory model have no such field: their runs
  // read the newest store at every load, which is what they replay under.
  if (root.contains("input")) {  // absent: a test without a generated input
    const auto& v = root.at("input");
    if (!v.is_string()) r.fail("/input", "a string (what the case was generated from), found " + shown(v));
    rec.input = v.get<std::string>();
  }
  rec.config.seq_cst_only = true;
  if (root.contains("seq_cst_only")) {
    const auto& v = root.at("seq_cst_only");
    if (!v.is_boolean()) r.fail("/seq_cst_only", "true or false, found " + shown(v));
    rec.config.seq_cst_only = v.get<bool>();
  }
  // Absent (every record before timers were choices): off.
  if (root.contains("timer_ties")) {
    const auto& v = root.at("timer_ties");
    if (!v.is_boolean()) r.fail("/timer_ties", "true or false, found " + shown(v));
    rec.config.timer_ties = v.get<bool>();
  }
  if (root.contains("timer_jitter_ns")) {
    rec.config.timer_jitter_ns = static_cast<std::int64_t>(r.u64_in("/timer_jitter_ns", 0, max_timer_jitter_ns));
  }
  const auto& decisions = r.at("/decisions", "an array of fiber ids");
  if (!decisions.is_array()) r.fail("/decisions", "an array of fiber ids, found " + shown(decisions));
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > 0xfffffffeULL) {
      r.fail("/decisions/" + std::to_string(i), "a fiber id from 0 to 4294967294, found " + shown(d));
    }
    rec.result.decisions.push_back(static_cast<std::uint32_t>(d.get<std::uint64_t>()));
  }
  rec.result.steps = r.u64_in("/steps", 0, UINT64_MAX);
  const std::string hash = r.string("/trace_hash");
  if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail("/trace_hash", "16 lower-case hex digits, found " + shown(hash));
  }
  rec.result.trace_hash = std::stoull(hash, nullptr, 16);
  const auto& f = r.at("/failure", "an object with kind and message");
  if (!f.is_object()) r.fail("/failure", "an object with kind and message, found " + shown(f));
  for (auto it = f.begin(); it != f.end(); ++it) {
    if (it.key() != "kind" && it.key() != "message") r.fail("/failure/" + token(it.key()), "kind or message (unknown field)");
  }
  const std::string kind = r.string("/failure/kind");
  const auto k = kind_named(kind);
  if (!k) r.fail("/failure/kind", "a failure kind (oracle, uncaught_exception, deadlock, ...), found " + shown(kind));
  rec.result.failed = sim::failure{*k, r.string("/failure/message")};
  rec.result.seed = rec.config.seed;
  rec.result.strategy = rec.config.strategy;
  rec.result.cores = rec.config.cores;
  return rec;
}

}  // namespace

std::string to_json_text(const test_record& record) {
  nlohmann::json j;
  write_run_fields(j, record.config, record.result);
  j["test"] = record.test;
  j["seq_cst_only"] = record.config.seq_cst_only;
  if (!record.input.empty()) j["input"] = record.input;
  return j.dump(2) + "\n";
}

test_record read_test_record_text(std::string_view text, const std::string& name) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is where the parser stopped: enough to find the mistake.
    throw bad_input(name + ": /: expected a JSON document (a lockstep failure record), the text is not JSON at byte " +
                    std::to_string(e.byte));
  }
  return from_json(root, name);
}

test_record read_test_record(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": /: expected a readable file (a lockstep failure record); it cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  return read_test_record_text(text.str(), path);
}

void write_test_record(const std::string& path, const test_record& record) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string text = to_json_text(record);
  out << text;
  out.flush();
  if (!out) throw std::runtime_error(path + ": the failure record was not written (cannot write the file)");
}

}  // namespace lockstep::testing
