// What every threads_std type shares: the runtime is found from the running
// fiber (no runtime passed to constructors, as with std::), and misuse that
// the standard leaves undefined or answers with std::terminate ends the
// process with one line that names the fiber, never silently.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "../runtime.hpp"
#include "../scheduler.hpp"

namespace lockstep::threads_std::detail {

namespace td = threads::detail;

/// The runtime of the calling fiber; `what` (a type or function name) is
/// refused off one, in one line that says where to call it instead.
inline threads::runtime& running(const char* what) {
  td::fiber* f = td::this_fiber();
  if (f == nullptr) {
    throw std::logic_error(std::string("lockstep::threads_std::") + what +
                           " called off a fiber of a lockstep::threads::runtime: call it inside rt.run(...) "
                           "or a thread started there");
  }
  return f->rt;
}

/// "fiber #3 'thread'", or "a thread outside the runtime".
inline std::string caller_label() {
  const td::fiber* f = td::this_fiber();
  return f != nullptr ? "fiber #" + std::to_string(f->id) + " '" + f->name + "'" : "a thread outside the runtime";
}

/// Misuse (unlocking a mutex one does not hold, destroying a locked one or a
/// joinable thread): one line on stderr, then std::abort(), as the standard
/// library's std::terminate would, but saying what and who.
[[noreturn]] inline void misuse(const std::string& what) {
  std::fprintf(stderr, "lockstep: threads_std misuse: %s, by %s\n", what.c_str(), caller_label().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace lockstep::threads_std::detail
