// The readers of everything a user hands the CLI, fed arbitrary bytes: the
// strict JSON reader, the scenario reader (schema and semantic checks, on a
// file and on a scenario embedded in a record) and the failure record reader. Refusing input (input_error) is their job; any other
// exception, a crash, a sanitizer report, or an error message that spans
// lines or floods is a bug. Built as a libFuzzer target (LOCKSTEP_FUZZ) and,
// in every build, as a plain driver that replays tools/fuzz/regressions/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "tools/failure_record.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/scenario/schema_check.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/strict_json.hpp"

namespace {

using lockstep::cli::input_error;

// An error must be one line, and short whatever the input (no echo of it).
void check_message(const input_error& e) {
  const std::string_view m = e.what();
  if (m.find('\n') != std::string_view::npos || m.find('\r') != std::string_view::npos || m.size() > 1200) {
    std::cerr << "fuzz_readers: bad error message (" << m.size() << " bytes): " << m.substr(0, 300) << "\n";
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)lockstep::scenario::read_scenario(lockstep::cli::parse_strict(text, "scenario.json"), "scenario.json");
  } catch (const input_error& e) {
    check_message(e);
  }
  // A swarm file: its ranges checked and resolved (swarm.hpp), then read as
  // --swarm reads it; whatever a seed draws must read as a scenario.
  try {
    const nlohmann::json doc = lockstep::cli::parse_strict(text, "swarm.json");
    lockstep::scenario::check_against_schema(doc, "swarm.json", "");
    lockstep::scenario::swarm::check_ranges(doc, "swarm.json");
    if (!lockstep::scenario::swarm::ranges_in(doc).empty()) {
      (void)lockstep::scenario::read_scenario(lockstep::scenario::swarm::resolve(doc, size).document, "swarm.json");
    }
  } catch (const input_error& e) {
    check_message(e);
  }
  try {
    const lockstep::cli::failure_record rec = lockstep::cli::read_failure_record_text(text, "record.json");
    try {
      (void)lockstep::scenario::read_scenario(rec.scenario, "record.json", "/scenario");
    } catch (const input_error& e) {
      check_message(e);
    }
    // What was accepted must write back and read again to the same record.
    const std::string written = lockstep::cli::to_json(rec).dump(2);
    const lockstep::cli::failure_record again = lockstep::cli::read_failure_record_text(written, "rewritten.json");
    if (lockstep::cli::to_json(again) != lockstep::cli::to_json(rec)) {
      std::cerr << "fuzz_readers: a record does not survive writing and reading back\n";
      std::abort();
    }
  } catch (const input_error& e) {
    check_message(e);
  }
  return 0;
}
