// GoogleTest integration: LOCKSTEP_TEST(suite, name, options...) { body } is
// a TEST(suite, name) whose body runs under the simulator, as
// LOCKSTEP_TEST_CASE does for Boost.Test (see boost_test.hpp); the replay
// command selects the test with --gtest_filter. Link GTest::gtest_main (or
// your own main) yourself.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "test_case.hpp"

namespace lockstep::testing::gtest {

inline void run(const test_options& options, const test_body& body) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string(info->test_suite_name()) + "." + info->name();
  // GoogleTest keeps argv only internally; /proc/self/exe names this binary
  // (Linux, as the simulator is).
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string rerun = shell_quoted(ec ? std::string("./tests") : self.string()) + " " +
                            shell_quoted("--gtest_filter=" + name);
  const case_outcome out = run_test_case(name, options, body, rerun);
  if (out.passed) {
    std::fputs(out.report.c_str(), stdout);
  } else if (out.where.file != nullptr) {
    ADD_FAILURE_AT(out.where.file, static_cast<int>(out.where.line)) << out.report;  // at the LOCKSTEP_ASSERT
  } else {
    ADD_FAILURE() << out.report;
  }
}

}  // namespace lockstep::testing::gtest

#define LOCKSTEP_TEST(suite, name, ...)                                                             \
  static void suite##_##name##_lockstep_body(::lockstep::sim::runtime& rt);                         \
  TEST(suite, name) {                                                                               \
    ::lockstep::testing::gtest::run(::lockstep::testing::test_options{__VA_ARGS__},                  \
                                    &suite##_##name##_lockstep_body);                               \
  }                                                                                                 \
  static void suite##_##name##_lockstep_body([[maybe_unused]] ::lockstep::sim::runtime& rt)
