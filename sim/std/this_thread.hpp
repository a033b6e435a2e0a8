// std::this_thread, simulated: yield is a scheduling point where any other
// thread may run; sleeps wait on the virtual clock (and end early only when
// the run is being torn down).
#pragma once

#include <chrono>

#include "../executor.hpp"
#include "chrono.hpp"
#include "context.hpp"
#include "thread.hpp"

namespace lockstep::sim_std::this_thread {

inline thread::id get_id() noexcept { return current_id(); }

inline void yield(detail::site where = detail::site()) {
  sim::executor& ex = detail::running("this_thread::yield", where);
  detail::at(ex, "this_thread.yield", where);
  ex.yield_now();
}

namespace detail_sleep {
inline void until_ns(std::int64_t t, const detail::site& where) {
  sim::executor& ex = detail::running("this_thread::sleep", where);
  detail::at(ex, "this_thread.sleep", where);
  ex.schedule_point();
  while (ex.now() < t) ex.block("sleep", 0, nullptr, t, true);
}
}  // namespace detail_sleep

template <class Duration>
void sleep_until(const std::chrono::time_point<chrono::steady_clock, Duration>& t,
                 detail::site where = detail::site()) {
  detail_sleep::until_ns(std::chrono::ceil<std::chrono::nanoseconds>(t.time_since_epoch()).count(), where);
}

template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d, detail::site where = detail::site()) {
  sim::executor& ex = detail::running("this_thread::sleep_for", where);
  const auto ns = std::chrono::ceil<std::chrono::nanoseconds>(d).count();
  detail_sleep::until_ns(ns <= 0 ? ex.now() : lockstep::deadline_after(ex.now(), ns), where);
}

}  // namespace lockstep::sim_std::this_thread
