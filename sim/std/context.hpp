// What every sim_std type shares: the simulation it belongs to, found from
// the running thread (no runtime passed to constructors, as with std::), and
// the program's line recorded with each operation for reports.
#pragma once

#include <stdexcept>
#include <string>

#include "../executor.hpp"

namespace lockstep::sim_std::detail {

using site = sim::code_site;

/// running()'s refusal, out of line and cold, so that running() itself is a
/// load and a test inlined into every constructor and join.
[[noreturn, gnu::noinline, gnu::cold]] inline void not_in_a_thread(const char* what, const site& where) {
  throw std::logic_error(std::string("lockstep::sim_std::") + what + " used at " + sim::site(where) +
                         " outside a simulated thread: create and use it inside a test body "
                         "(LOCKSTEP_TEST_CASE) or a thread it starts");
}

/// The simulation under way on this thread; `what` (a type name) is refused
/// outside one, in one line that says where to create it instead.
inline sim::executor& running(const char* what, const site& where) {
  sim::executor* ex = sim::executor::running();
  if (ex == nullptr || !ex->in_fiber()) [[unlikely]] not_in_a_thread(what, where);
  return *ex;
}

/// Records the program's operation on the running fiber, for reports.
inline void at(sim::executor& ex, const char* op, const site& where) {
  ex.current().record_operation(op, where);
}

/// "mutex created at file.cpp:12", or "mutex 'accounts' created at
/// file.cpp:12" when the program named it: how reports name an object.
inline std::string object_name(const char* type, const site& created, const char* name = nullptr) {
  return std::string(type) + (name != nullptr && *name != '\0' ? " '" + std::string(name) + "'" : "") +
         " created at " + sim::site(created);
}

/// Gives object `id` its type, name and line for the executor's reports.
inline void label(sim::executor& ex, std::uint64_t id, const char* type, const char* name, const site& created) {
  ex.label_object(id, type, name, created);
}

}  // namespace lockstep::sim_std::detail
