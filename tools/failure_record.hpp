// A failing run as one self-contained JSON record: what ran (the whole
// scenario document and the file it came from), how (seed, strategy, cores, decisions), what it produced (trace
// hash) and what failed. `lockstep replay FILE` reads it back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sim/executor.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

struct failure_record {
  sim::run_config config;  ///< seed, strategy, cores, pct options
  sim::run_result result;
  std::string path;  ///< where it was read from (empty when built in memory)
  /// The whole scenario document, so the record replays with nothing else
  /// at hand, and the file it was read from (for messages and reruns).
  nlohmann::json scenario;
  std::string scenario_file;
  /// A swarm run's drawn values, {JSON pointer: value} (informational: the
  /// scenario above already holds them); null, and not written, otherwise.
  nlohmann::json swarm;
};

nlohmann::json to_json(const failure_record& record);

/// Reads and validates a record (strict JSON, every field range-checked,
/// unknown fields refused); throws input_error naming `path` and the JSON
/// pointer of the first field that is missing, of the wrong type or out of range.
failure_record read_failure_record(const std::string& path);

/// The same from the record's text; errors name `name` (a fuzzer feeds bytes here).
failure_record read_failure_record_text(std::string_view text, const std::string& name);

/// Writes `record` to `path` (pretty-printed, one trailing newline); throws
/// std::runtime_error naming `path` if it cannot be written in full.
void write_failure_record(const std::string& path, const failure_record& record);

/// Field access with errors that name file, pointer and expectation.
class json_reader {
 public:
  /// `root` sits at `prefix` inside `file` (e.g. a record's /scenario), so
  /// errors name the pointer from the top of the file.
  json_reader(std::string file, const nlohmann::json& root, std::string prefix = "")
      : file_(std::move(file)), root_(root), prefix_(std::move(prefix)) {}
  const nlohmann::json& at(const std::string& pointer, const char* expected) const;
  std::uint64_t u64(const std::string& pointer) const;
  /// An unsigned integer in [min, max].
  std::uint64_t u64_in(const std::string& pointer, std::uint64_t min, std::uint64_t max) const;
  std::string string(const std::string& pointer) const;
  [[noreturn]] void fail(const std::string& pointer, const std::string& expected) const;

 private:
  std::string file_;
  const nlohmann::json& root_;
  std::string prefix_;
};

}  // namespace lockstep::cli
