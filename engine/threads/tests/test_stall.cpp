// Goal: the threads runtime's stall watchdog (runtime_config::stall_limit_ns).
// A lost wake-up is reported — each live fiber, its core and what it waits in
// — instead of hanging: by default on stderr with the liveness exit code 3,
// or to a handler that may end the stall. A run that waits for a timer, or
// whose fibers keep yielding, is not reported, and a fiber running without
// reaching an await point is named by its core. Bad limits are refused.
#define BOOST_TEST_MODULE threads_stall
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/util.hpp"
#include "tools/exit_codes.hpp"

using lockstep::threads::runtime;
using lockstep::threads::runtime_config;
using lockstep::threads::testing::until_parked;

namespace {

constexpr std::int64_t ms = 1'000'000;

// The code the default report ends the process with is lockstep's liveness code.
static_assert(lockstep::cli::exit_liveness == 3);

runtime_config watched(std::int64_t limit_ns) {
  runtime_config c;
  c.cores = 2;
  c.stall_limit_ns = limit_ns;
  return c;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A stall handler that keeps each report and sets `release`, which ends spin_until.
std::function<void(const std::string&)> keep_and_release(std::vector<std::string>& reports,
                                                         std::atomic<bool>& release) {
  return [&reports, &release](const std::string& report) {
    reports.push_back(report);
    release.store(true);
  };
}

/// A busy loop with no await point: only the watchdog's handler ends it.
void spin_until(const std::atomic<bool>& release) {
  while (!release.load()) {
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_lost_wake_up_is_reported_with_every_fiber_and_what_it_waits_in) {
  std::vector<std::string> reports;
  runtime_config c = watched(200 * ms);
  runtime::notify* lost = nullptr;
  c.on_stall = [&](const std::string& report) {
    reports.push_back(report);
    lost->notify_one();  // the wake the program lost, from outside the runtime: the run ends
  };
  runtime rt(c);
  rt.run([&] {
    runtime::notify n(rt);
    lost = &n;
    runtime::task waiter = rt.spawn_on(1, "consumer", [&] { n.notified(); });
    until_parked(rt, waiter);
    waiter.join();
  });
  BOOST_REQUIRE_EQUAL(reports.size(), 1U);
  const std::string& r = reports.front();
  BOOST_TEST_MESSAGE(r);
  BOOST_TEST(has(r, "threads::runtime stalled: no fiber resumed for "), r);
  BOOST_TEST(has(r, "core 1: fiber #2 'consumer' waits in notify::notified\n"), r);
  BOOST_TEST(has(r, "core 0: fiber #1 'main' waits in task::join\n"), r);
}

BOOST_AUTO_TEST_CASE(by_default_the_report_goes_to_stderr_and_the_process_exits_3) {
  int out[2];
  BOOST_REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(out[1], 2);
    ::close(out[0]);
    runtime rt(watched(100 * ms));
    rt.run([&] {
      runtime::mutex a(rt), b(rt);
      runtime::notify a_held(rt), b_held(rt);
      // The classic deadlock: each takes one lock, then wants the other's.
      runtime::task t = rt.spawn_on(1, "takes b then a", [&] {
        b.lock();
        b_held.notify_one();
        a_held.notified();
        a.lock();
      });
      a.lock();
      a_held.notify_one();
      b_held.notified();
      b.lock();
      t.join();
    });
    std::_Exit(0);  // not reached: the watchdog ends the process
  }
  ::close(out[1]);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 3);
  BOOST_TEST(has(err, "fiber #1 'main' waits in mutex::lock"), err);
  BOOST_TEST(has(err, "fiber #2 'takes b then a' waits in mutex::lock"), err);
}

BOOST_AUTO_TEST_CASE(waiting_for_a_timer_or_yielding_is_not_a_stall) {
  int reports = 0;
  runtime_config c = watched(100 * ms);
  c.on_stall = [&](const std::string&) { ++reports; };
  runtime rt(c);
  rt.run([&] {
    // Every other fiber blocked for 400 ms while one sleeps: it waits for time.
    runtime::task sleeper = rt.spawn_on(1, "sleeper", [&] { rt.sleep_for(400 * ms); });
    sleeper.join();
    // A fiber that yields for 400 ms keeps resuming.
    runtime::task spinner = rt.spawn_on(1, "yielder", [&] {
      const std::int64_t until = rt.now() + 400 * ms;
      while (rt.now() < until) rt.yield_now();
    });
    spinner.join();
  });
  BOOST_TEST(reports == 0);
}

BOOST_AUTO_TEST_CASE(a_fiber_that_never_reaches_an_await_point_is_named_by_its_core) {
  std::vector<std::string> reports;
  runtime_config c = watched(100 * ms);
  std::atomic<bool> release{false};
  c.on_stall = keep_and_release(reports, release);
  runtime rt(c);
  rt.run([&] {
    runtime::task busy = rt.spawn_on(1, "busy", [&] { spin_until(release); });
    busy.join();
  });
  BOOST_REQUIRE_EQUAL(reports.size(), 1U);
  BOOST_TEST(has(reports.front(), "core 1: did not answer within a second: fiber #2 runs without reaching an await point"),
             reports.front());
  BOOST_TEST(has(reports.front(), "core 0: fiber #1 'main' waits in task::join"), reports.front());
}

BOOST_AUTO_TEST_CASE(a_busy_fiber_is_named_even_while_another_core_waits_for_timers) {
  // Core 0 keeps a timer pending and keeps resuming a fiber (a periodic
  // sleeper): the run as a whole is not stalled, but core 1 runs one fiber
  // the whole limit without switching out.
  std::vector<std::string> reports;
  runtime_config c = watched(200 * ms);
  c.timer_resolution_ns = 0;
  std::atomic<bool> release{false};
  c.on_stall = keep_and_release(reports, release);
  runtime rt(c);
  rt.run([&] {
    runtime::task ticker = rt.spawn_on(0, "ticker", [&] {
      while (!release.load()) rt.sleep_for(5 * ms);
    });
    runtime::task busy = rt.spawn_on(1, "busy", [&] { spin_until(release); });
    busy.join();
    ticker.join();
  });
  BOOST_REQUIRE_EQUAL(reports.size(), 1U);
  const std::string& r = reports.front();
  BOOST_TEST(has(r, "lockstep: threads::runtime stalled: fiber #3 has run on core 1 for "), r);
  BOOST_TEST(has(r, "without reaching an await point (a busy loop, a real blocking call?)"), r);
  BOOST_TEST(has(r, "core 1: did not answer within a second: fiber #3 runs without reaching an await point"), r);
}

BOOST_AUTO_TEST_CASE(limits_out_of_range_are_refused) {
  BOOST_CHECK_THROW(runtime{watched(-1)}, std::invalid_argument);
  BOOST_CHECK_THROW(runtime{watched(3'600'000'000'001)}, std::invalid_argument);
  for (const char* bad : {"abc", "0", "-2", "1s", "4000"}) {
    BOOST_TEST_CONTEXT(bad) {
      ::setenv("LOCKSTEP_STALL_LIMIT_S", bad, 1);
      BOOST_CHECK_THROW(runtime{watched(0)}, std::invalid_argument);
    }
  }
  ::setenv("LOCKSTEP_STALL_LIMIT_S", "0.5", 1);
  BOOST_CHECK_NO_THROW(runtime{watched(0)});
  ::unsetenv("LOCKSTEP_STALL_LIMIT_S");
}
