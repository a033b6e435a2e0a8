// A failing run of a library test as one self-contained JSON record: the
// same fields the CLI's record has (seed, strategy, cores, pct options,
// budgets, decisions, trace hash, failure), with the test's name in place of
// the scenario: the program is the test body, compiled into the user's binary.
// read_test_record refuses anything it does not understand with one line
// naming the file, the JSON pointer and what was expected.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "../sim/executor.hpp"

namespace lockstep::testing {

/// The simulated cores a library test may have (test_options::cores), and
/// so what its record may say: a thread of the user's model is a core. (The
/// CLI's scenario files stay within 1 to 64.)
inline constexpr std::uint32_t max_test_cores = 1024;

/// Bad input (a record, an environment variable): the message is one line
/// naming where and what was expected. Test-framework glue exits 2 on it.
struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct test_record {
  std::string test;        ///< the test's name, as the framework names it
  sim::run_config config;  ///< seed, strategy, cores, pct options, budgets
  sim::run_result result;  ///< decisions, steps, trace hash, failure
  /// What the test case was generated from, as the test described it
  /// (test_options::input: a property's generated program); empty: none.
  std::string input{};
};

/// The record as JSON text (pretty-printed, one trailing newline).
std::string to_json_text(const test_record& record);

/// Reads and checks a record; throws bad_input naming `path`, the pointer and
/// the expectation for a missing, mistyped, out-of-range or unknown field.
test_record read_test_record(const std::string& path);
/// The same from text; errors name `name`.
test_record read_test_record_text(std::string_view text, const std::string& name);

/// Writes the record (creating the directory); throws std::runtime_error
/// naming `path` when it cannot be written in full.
void write_test_record(const std::string& path, const test_record& record);

}  // namespace lockstep::testing
