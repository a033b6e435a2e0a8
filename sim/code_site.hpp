// A line of the program's code, captured where an operation is called: a
// default argument `code_site where = {}` is filled in at the caller's line.
// (std::source_location would do, but clang 14 with libstdc++ 12, which CI
// builds with, does not have it; the builtins below are in both compilers.)
#pragma once

#include <cstdint>

namespace lockstep::sim {

struct code_site {
  const char* file = nullptr;
  std::uint32_t line = 0;
  constexpr code_site(const char* f = __builtin_FILE(), std::uint32_t l = __builtin_LINE()) noexcept
      : file(f), line(l) {}
};

}  // namespace lockstep::sim
