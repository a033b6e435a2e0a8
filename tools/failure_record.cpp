#include "tools/failure_record.hpp"

#include <fstream>

namespace lockstep::cli {

nlohmann::json to_json(const failure_record& record) {
  nlohmann::json j;
  j["lockstep_failure_record"] = 1;
  j["program"] = record.program;
  j["options"] = record.options;
  j["seed"] = record.config.seed;
  j["strategy"] = record.config.strategy;
  j["cores"] = record.config.cores;
  j["pct_depth"] = record.config.options.pct_depth;
  j["pct_steps"] = record.config.options.pct_steps;
  j["max_steps"] = record.config.max_steps;
  j["max_time_ns"] = record.config.max_time_ns;
  j["decisions"] = record.result.decisions;
  j["steps"] = record.result.steps;
  j["trace_hash"] = sim::hash_hex(record.result.trace_hash);
  if (record.result.failed) {
    j["failure"] = {{"kind", std::string(sim::to_string(record.result.failed->kind))},
                    {"message", record.result.failed->message}};
  }
  return j;
}

const nlohmann::json& json_reader::at(const std::string& pointer, const char* expected) const {
  const nlohmann::json::json_pointer p(pointer);
  if (!root_.contains(p)) fail(pointer, std::string("a field holding ") + expected + ", but it is missing");
  return root_.at(p);
}

std::uint64_t json_reader::u64(const std::string& pointer) const {
  const auto& v = at(pointer, "an unsigned integer");
  if (!v.is_number_unsigned()) fail(pointer, "an unsigned integer, found " + v.dump());
  return v.get<std::uint64_t>();
}

std::string json_reader::string(const std::string& pointer) const {
  const auto& v = at(pointer, "a string");
  if (!v.is_string()) fail(pointer, "a string, found " + v.dump());
  return v.get<std::string>();
}

void json_reader::fail(const std::string& pointer, const std::string& expected) const {
  const std::string where = prefix_ + pointer;
  throw input_error(file_ + ": " + (where.empty() ? "/" : where) + ": expected " + expected);
}

failure_record read_failure_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw input_error(path + ": cannot open the file");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw input_error(path + ": not valid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
  json_reader r(path, root);
  if (!root.is_object()) r.fail("", "an object (a lockstep failure record)");
  if (r.u64("/lockstep_failure_record") != 1) r.fail("/lockstep_failure_record", "version 1");
  failure_record rec;
  rec.path = path;
  rec.program = r.string("/program");
  rec.options = r.at("/options", "an object");
  if (!rec.options.is_object()) r.fail("/options", "an object");
  rec.config.seed = r.u64("/seed");
  rec.config.strategy = r.string("/strategy");
  const std::uint64_t cores = r.u64("/cores");
  if (cores == 0 || cores > 64) r.fail("/cores", "a core count from 1 to 64");
  rec.config.cores = static_cast<std::uint32_t>(cores);
  rec.config.options.pct_depth = static_cast<std::uint32_t>(r.u64("/pct_depth"));
  rec.config.options.pct_steps = r.u64("/pct_steps");
  rec.config.max_steps = r.u64("/max_steps");
  rec.config.max_time_ns = static_cast<std::int64_t>(r.u64("/max_time_ns"));
  const auto& decisions = r.at("/decisions", "an array of fiber ids");
  if (!decisions.is_array()) r.fail("/decisions", "an array of fiber ids");
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const std::string p = "/decisions/" + std::to_string(i);
    const std::uint64_t id = r.u64(p);
    if (id > 0xfffffffeULL) r.fail(p, "a fiber id below 4294967295");
    rec.result.decisions.push_back(static_cast<std::uint32_t>(id));
  }
  const std::string hash = r.string("/trace_hash");
  if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail("/trace_hash", "16 lower-case hex digits");
  }
  rec.result.trace_hash = std::stoull(hash, nullptr, 16);
  return rec;
}

void write_failure_record(const std::string& path, const failure_record& record) {
  std::ofstream out(path);
  if (!out) throw input_error(path + ": cannot write the failure record here");
  out << to_json(record).dump(2) << '\n';
  if (!out) throw input_error(path + ": writing the failure record failed");
}

}  // namespace lockstep::cli
