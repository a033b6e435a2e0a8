// std::chrono with a simulated steady_clock: the run's virtual clock, which
// moves only when every thread waits (sleeps, timed waits). The rest of
// std::chrono (durations, time_point, duration_cast) is std's own.
// system_clock is std's too, a wall clock: code under test should not read it.
#pragma once

#include <chrono>
#include <cstdint>

#include "../executor.hpp"

namespace lockstep::sim_std::chrono {

using namespace std::chrono;  // NOLINT: durations and casts, as std::chrono names them

struct steady_clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<steady_clock>;
  static constexpr bool is_steady = true;
  /// The virtual time of the running simulation (0 outside one).
  static time_point now() noexcept {
    const sim::executor* ex = sim::executor::running();
    return time_point(duration(ex != nullptr ? ex->now() : 0));
  }
};

using high_resolution_clock = steady_clock;

}  // namespace lockstep::sim_std::chrono
