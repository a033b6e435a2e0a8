// The readers of everything a user hands the CLI, fed arbitrary bytes: the
// strict JSON reader, every program's options normalisation, the failure
// record reader and the scenario reader (schema and semantic checks, also on
// a scenario embedded in a record). Refusing input (input_error) is their job; any other
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
#include "tools/programs.hpp"
#include "tools/scenario/scenario_reader.hpp"
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

void normalise_all(const nlohmann::json& options, const std::string& source, const std::string& prefix) {
  for (const auto& [name, prog] : lockstep::cli::programs()) {
    try {
      const nlohmann::json once = prog.normalise(lockstep::cli::json_reader(source, options, prefix));
      // A failure record replays with the normalised options: they must normalise to themselves.
      if (prog.normalise(lockstep::cli::json_reader(source, once, prefix)) != once) {
        std::cerr << "fuzz_readers: " << name << ": normalised options do not normalise to themselves\n";
        std::abort();
      }
    } catch (const input_error& e) {
      check_message(e);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    normalise_all(lockstep::cli::parse_strict(text, "--options"), "--options", "");
  } catch (const input_error& e) {
    check_message(e);
  }
  try {
    (void)lockstep::scenario::read_scenario(lockstep::cli::parse_strict(text, "scenario.json"), "scenario.json");
  } catch (const input_error& e) {
    check_message(e);
  }
  try {
    const lockstep::cli::failure_record rec = lockstep::cli::read_failure_record_text(text, "record.json");
    if (rec.is_scenario()) {
      try {
        (void)lockstep::scenario::read_scenario(rec.scenario, "record.json", "/scenario");
      } catch (const input_error& e) {
        check_message(e);
      }
    }
    const auto& all = lockstep::cli::programs();
    if (const auto it = all.find(rec.program); it != all.end()) {
      try {
        (void)it->second.normalise(lockstep::cli::json_reader("record.json", rec.options, "/options"));
      } catch (const input_error& e) {
        check_message(e);
      }
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
