// Linked into every executable of a sanitizer build (see CMakeLists.txt): a
// sanitizer report exits with exit_sanitizer (86) however the binary is run —
// from ctest, by hand, without ASAN_OPTIONS — so it is never mistaken for
// "a run failed" (1). Options given in the environment still apply on top.
#include "tools/exit_codes.hpp"

static_assert(lockstep::cli::exit_sanitizer == 86, "keep the strings below in step with exit_codes.hpp");

extern "C" const char* __asan_default_options() { return "exitcode=86"; }
extern "C" const char* __ubsan_default_options() { return "exitcode=86:print_stacktrace=1:halt_on_error=1"; }
extern "C" const char* __tsan_default_options() { return "exitcode=86"; }
