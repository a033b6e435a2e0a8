// Goal: teardown is total and safe however a run stops (the rules are in
// sim/executor.hpp, "Teardown"): a fiber stopped at a scheduling point does
// not keep its core from younger fibers, a fiber that never started is
// destroyed without running its body, a fiber spawned during teardown is born
// cancelled, no frame is left while a younger fiber may still use it, and
// running out of fibers or stacks is a failure of its own kind, not a crash.
#define BOOST_TEST_MODULE sim_teardown
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sim/sanitizer.hpp"  // LOCKSTEP_HAS_ASAN / _TSAN, for g++ and clang alike
#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Appends to a log when destroyed: the order of destructors is what these
// tests check.
struct logs_on_exit {
  std::vector<std::string>* log;
  std::string what;
  logs_on_exit(std::vector<std::string>* l, std::string w) : log(l), what(std::move(w)) {}
  logs_on_exit(logs_on_exit&& o) noexcept : log(o.log), what(std::move(o.what)) { o.log = nullptr; }
  logs_on_exit(const logs_on_exit&) = delete;
  ~logs_on_exit() {
    if (log != nullptr) log->push_back(what);
  }
};

std::size_t index_of(const std::vector<std::string>& log, const std::string& entry) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i] == entry) return i;
  }
  return log.size();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_child_that_never_started_is_destroyed_unrun_before_its_preempted_parent_unwinds) {
  // Regression (issue: teardown use-after-free). main holds core 0 and is
  // stopped at a scheduling point when the step budget runs out; its child
  // on core 0 never got to start. Teardown used to resume main first (it was
  // core 0's only candidate): main ran on, returned, and only then did the
  // child run its body against main's freed frame.
  for (std::uint64_t budget = 1; budget <= 40; ++budget) {
    std::vector<std::string> log;
    run_config c = config(7, "random", 2);
    c.max_steps = budget;
    auto r = run(c, [&](runtime& rt) {
      logs_on_exit frame(&log, "main frame gone");
      auto counter = std::make_shared<atomic<int>>(rt, 0);
      auto spinner = rt.spawn_on(1, "spinner", [&rt, counter] {
        for (;;) {
          counter->fetch_add(1);
          rt.yield_now();
        }
      });
      auto child = rt.spawn_on(0, "child", [&log, captured = logs_on_exit(&log, "child captures destroyed")] {
        log.push_back("child body ran");
      });
      // main never blocks, so the child cannot start on core 0 before the budget.
      for (int i = 0; i < 1000; ++i) counter->fetch_add(1);
      rt.yield_now();
      child.join();
      spinner.join();
    });
    BOOST_REQUIRE_MESSAGE(!r.ok(), "budget " << budget);
    BOOST_TEST(r.failed->kind == failure_kind::step_budget, "budget " << budget << ": " << r.failed->message);
    BOOST_TEST(index_of(log, "child body ran") == log.size(), "budget " << budget);
    const auto destroyed = index_of(log, "child captures destroyed");
    const auto gone = index_of(log, "main frame gone");
    BOOST_TEST(destroyed < log.size(), "budget " << budget);
    BOOST_TEST(gone < log.size(), "budget " << budget);
    BOOST_TEST(destroyed < gone, "budget " << budget << ": the child's captures outlived main's frame");
  }
}

BOOST_AUTO_TEST_CASE(a_fiber_spawned_during_teardown_is_born_cancelled_and_joins_at_once) {
  std::vector<std::string> log;
  auto r = run(config(3, "random", 2), [&](runtime& rt) {
    struct spawns_on_exit {
      runtime& rt;
      std::vector<std::string>& log;
      ~spawns_on_exit() {
        auto late = rt.spawn("late", [this, captured = logs_on_exit(&log, "late captures destroyed")] {
          log.push_back("late body ran");
        });
        late.join();  // an await point while unwinding: it must not throw, and must return
        log.push_back("late joined");
      }
    } guard{rt, log};
    auto failing = rt.spawn_on(1, "failing", [&rt] {
      rt.sleep_for(5);
      check(false, "planted", "fails while main waits");
    });
    rt.sleep_for(1'000);
    failing.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::oracle);
  BOOST_TEST(contains(r.failed->message, "planted"), r.failed->message);
  BOOST_TEST(index_of(log, "late body ran") == log.size());
  BOOST_TEST(index_of(log, "late captures destroyed") < index_of(log, "late joined"));
  BOOST_TEST(index_of(log, "late joined") < log.size());
}

BOOST_AUTO_TEST_CASE(in_teardown_an_older_fiber_yields_to_the_younger_one_it_wakes) {
  // The child unwinds holding nothing but needs the mutex main holds; main
  // is preempted inside its critical section. Teardown must let main run
  // only until it unlocks, then the child, then main's frame may go.
  std::vector<std::string> log;
  run_config c = config(11, "random", 2);
  for (std::uint64_t budget = 1; budget <= 60; ++budget) {
    log.clear();
    c.max_steps = budget;
    auto r = run(c, [&](runtime& rt) {
      logs_on_exit frame(&log, "main frame gone");
      mutex m(rt);
      atomic<int> ticks(rt, 0);
      (void)rt.spawn_on(1, "child", [&] {
        struct locks_on_exit {
          mutex& m;
          std::vector<std::string>& log;
          ~locks_on_exit() {
            m.lock();  // not an await point: may suspend in teardown, never throws
            log.push_back("child locked main's mutex");
            m.unlock();
          }
        } g{m, log};
        log.push_back("child started");
        for (;;) {
          ticks.fetch_add(1);
          rt.yield_now();
        }
      });
      for (;;) {
        m.lock();
        for (int i = 0; i < 5; ++i) ticks.fetch_add(1);
        m.unlock();
        rt.yield_now();
      }
    });
    BOOST_REQUIRE(!r.ok());
    BOOST_TEST(r.failed->kind == failure_kind::step_budget);
    const auto locked = index_of(log, "child locked main's mutex");
    if (index_of(log, "child started") == log.size()) {
      BOOST_TEST(locked == log.size(), "budget " << budget << ": a child that never started ran its body");
    } else {
      BOOST_TEST(locked < index_of(log, "main frame gone"), "budget " << budget);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_live_fiber_limit_fails_the_run_as_resource_exhausted_naming_it) {
  run_config c = config(1, "random", 2);
  c.max_live_fibers = 50;
  int unwound = 0;
  auto r = run(c, [&](runtime& rt) {
    std::vector<task> children;
    for (int i = 0; i < 100; ++i) {
      children.push_back(rt.spawn("sleeper", [&rt, &unwound] {
        struct counts {
          int& n;
          ~counts() { ++n; }
        } g{unwound};
        rt.sleep_for(1'000'000);
      }));
      rt.sleep_for(1);  // let it start and block, so it has a frame to unwind
    }
    for (auto& t : children) t.join();
  });
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failed->kind == failure_kind::resource_exhausted, r.failed->message);
  BOOST_TEST(contains(r.failed->message, "limit of 50 live fibers"), r.failed->message);
  BOOST_TEST(contains(r.failed->message, "max_live_fibers"), r.failed->message);
  BOOST_TEST(unwound == 49);  // main plus 49 sleepers were alive; every sleeper unwound
}

BOOST_AUTO_TEST_CASE(forty_thousand_live_fibers_fit_where_two_mappings_a_stack_did_not) {
  // Regression: each stack was a mapping plus an mprotect'ed guard, and
  // vm.max_map_count (65,530) ended a run near 32,745 live fibers with a
  // crash. Slabs with guard markers hold them in a few hundred mappings.
#if defined(LOCKSTEP_HAS_ASAN)
  const int fibers = 4'000;  // ASan poisons each stack; keep the test quick
#else
  const int fibers = 40'000;
#endif
  run_config c = config(1, "random", 1);
  c.trace = trace_mode::off;
  int woke = 0;
  auto r = run(c, [&](runtime& rt) {
    std::vector<task> children;
    children.reserve(fibers);
    for (int i = 0; i < fibers; ++i) {
      children.push_back(rt.spawn("sleeper", [&rt, &woke] {
        rt.sleep_for(10);
        ++woke;
      }));
    }
    for (auto& t : children) t.join();
  });
  BOOST_TEST(r.ok(), (r.failed ? r.failed->message : ""));
  BOOST_TEST(woke == fibers);
}

#if !defined(LOCKSTEP_HAS_ASAN) && !defined(LOCKSTEP_HAS_TSAN)
BOOST_AUTO_TEST_CASE(running_out_of_address_space_fails_the_run_as_resource_exhausted) {
  // A child process with a small address-space limit: mapping stacks fails
  // after a few, and the run must report it, not crash. (Sanitizers reserve
  // terabytes of shadow, so this cannot run under them.)
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit lim{};
    ::getrlimit(RLIMIT_AS, &lim);
    lim.rlim_cur = 512ull << 20;  // 512 MiB: about 30 slabs of 64 stacks of 256 KiB
    if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(10);
    run_config c = config(1, "random", 1);
    c.trace = trace_mode::off;
    auto r = run(c, [](runtime& rt) {
      std::vector<task> children;
      for (int i = 0; i < 200'000; ++i) children.push_back(rt.spawn("sleeper", [&rt] { rt.sleep_for(10); }));
      for (auto& t : children) t.join();
    });
    if (r.ok()) ::_exit(11);
    if (r.failed->kind != failure_kind::resource_exhausted) ::_exit(12);
    if (!contains(r.failed->message, "out of fiber stacks")) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status), "the child died of signal " << WTERMSIG(status));
  BOOST_TEST(WEXITSTATUS(status) == 0, "child exit " << WEXITSTATUS(status)
                                                     << " (10 setrlimit, 11 ok, 12 wrong kind, 13 wrong message)");
}
#endif
