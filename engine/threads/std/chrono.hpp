// threads_std::chrono: the real clocks. The threads backend's timed waits run
// on std::chrono::steady_clock, so it is the steady clock here.
#pragma once

#include <chrono>
#include <cstdint>

#include "../../runtime.hpp"  // deadline_after
#include "../scheduler.hpp"    // steady_now

namespace lockstep::threads_std::chrono {

using namespace std::chrono;  // NOLINT: clocks, durations and casts, as std::chrono names them

}  // namespace lockstep::threads_std::chrono

namespace lockstep::threads_std::detail {

/// A steady_clock time point as the runtime's deadline (ns, rounded up: a
/// wait never ends before it).
template <class Duration>
std::int64_t deadline_at(const std::chrono::time_point<std::chrono::steady_clock, Duration>& t) {
  return std::chrono::ceil<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Now plus `d` as a deadline, saturating rather than overflowing.
template <class Rep, class Period>
std::int64_t deadline_in(const std::chrono::duration<Rep, Period>& d) {
  const auto ns = std::chrono::ceil<std::chrono::nanoseconds>(d).count();
  const std::int64_t now = threads::detail::steady_now();
  return ns <= 0 ? now : lockstep::deadline_after(now, static_cast<std::int64_t>(ns));
}

}  // namespace lockstep::threads_std::detail
