// Boost.Test integration: LOCKSTEP_TEST_CASE(name, options...) { body } is a
// BOOST_AUTO_TEST_CASE whose body runs under the simulator, explored over
// seeds with random and pct (test_case.hpp says what the environment can
// change). Inside, `rt` is the sim::runtime; fail with LOCKSTEP_ASSERT.
//
//   LOCKSTEP_TEST_CASE(lost_update, .cores = 2) {
//     lockstep::sim::atomic<int> x(rt, 0);
//     ...
//     LOCKSTEP_ASSERT(x.load() == 2);
//   }
//
// The options are test_options' fields as designated initializers, in their
// declaration order. Link Boost::unit_test_framework yourself, as for any
// Boost.Test binary.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "test_case.hpp"

namespace lockstep::testing::boost_test {

/// The command that runs only the current test case from this binary, from
/// any directory: the binary by its absolute path (/proc/self/exe; argv[0]
/// when that cannot be read), as the record's path is absolute.
inline std::string rerun_command() {
  const auto& suite = boost::unit_test::framework::master_test_suite();
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string binary = !ec ? self.string() : suite.argc > 0 ? suite.argv[0] : "./tests";
  return shell_quoted(binary) + " " +
         shell_quoted("--run_test=" + boost::unit_test::framework::current_test_case().full_name());
}

inline void run(const test_options& options, const test_body& body) {
  const std::string name = boost::unit_test::framework::current_test_case().full_name();
  const case_outcome out = run_test_case(name, options, body, rerun_command());
  if (!out.passed && out.where.file != nullptr) {
    // At the failing LOCKSTEP_ASSERT's line, not this one: what BOOST_CHECK_MESSAGE does, with
    // the assertion's file and line.
    ::boost::test_tools::tt_detail::report_assertion(
        ::boost::test_tools::assertion_result(false), BOOST_TEST_LAZY_MSG(out.report),
        ::boost::unit_test::const_string(out.where.file), static_cast<std::size_t>(out.where.line),
        ::boost::test_tools::tt_detail::CHECK, ::boost::test_tools::tt_detail::CHECK_MSG, 0);
    return;
  }
  // A check either way, so Boost.Test does not warn that the case checked nothing.
  BOOST_CHECK_MESSAGE(out.passed, out.report);
  if (out.passed && out.replayed) {
    std::fputs(out.report.c_str(), stdout);
  } else if (out.passed) {
    BOOST_TEST_MESSAGE(out.report);
  }
}

}  // namespace lockstep::testing::boost_test

#define LOCKSTEP_TEST_CASE(name, ...)                                                               \
  static void name##_lockstep_body(::lockstep::sim::runtime& rt);                                  \
  BOOST_AUTO_TEST_CASE(name) {                                                                     \
    ::lockstep::testing::boost_test::run(::lockstep::testing::test_options{__VA_ARGS__}, &name##_lockstep_body); \
  }                                                                                                \
  static void name##_lockstep_body([[maybe_unused]] ::lockstep::sim::runtime& rt)
