// A run that stops making progress in wall-clock time: a fiber that, for
// longer than a limit, reaches no lockstep operation. The simulator cannot
// see why (a real std::mutex held across a lockstep operation and taken again
// by another fiber on the same OS thread, a real sleep, I/O, a loop that
// never reaches an operation), so without this the test binary would hang
// with no message. With the watchdog armed it reports the fiber, its last
// lockstep operation and line, the seed and strategy and the command that
// reruns it, and ends the process with the liveness exit code (3).
//
// Checked from a timer signal delivered to the simulating thread itself, so
// the check reads the executor's progress without racing it; it writes with
// write(2) alone and leaves with _exit.
#pragma once

#include <string>

namespace lockstep::testing {

class hang_watchdog {
 public:
  /// Arms the watchdog for test `test` (rerun: the command that runs just
  /// it) with a limit of `limit_s` seconds; 0 arms nothing.
  hang_watchdog(const std::string& test, const std::string& rerun, double limit_s);
  ~hang_watchdog();
  hang_watchdog(const hang_watchdog&) = delete;
  hang_watchdog& operator=(const hang_watchdog&) = delete;

 private:
  bool armed_ = false;
};

}  // namespace lockstep::testing
