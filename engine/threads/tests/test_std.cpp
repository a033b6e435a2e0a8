// Goal: code written against std:: runs on the real threads backend by
// switching one namespace alias (lockstep::threads_std): the programs that
// test_std runs under the simulator and against plain std hold here too, on
// one core (where a wait that blocked the OS thread instead of parking the
// fiber would hang them) and on several. The standard's semantics hold: a
// notify with nobody waiting is lost, timed waits time out, recursive and
// shared mutexes admit whom they should, call_once retries after a throw,
// joining a thread that is not joinable throws std::system_error. Misuse
// ends the process with one line naming the fiber; the runtime's teardown
// cancels threads parked in these waits; off the runtime's fibers a thread
// cannot start and a wait refuses in one line.
#define BOOST_TEST_MODULE threads_std
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "engine/threads/runtime.hpp"
#include "engine/threads/std.hpp"
#include "engine/threads/tests/util.hpp"

// The programs test_std runs under the simulator and against plain std.
#define LOCKSTEP_STD_NS lockstep::threads_std
#define LOCKSTEP_PROGRAMS on_threads
#include "testing/tests/std_programs.hpp"

namespace cc = lockstep::threads_std;
using lockstep::threads::runtime;
using lockstep::threads::runtime_config;
using lockstep::threads::testing::until_parked;
using namespace std::chrono_literals;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

runtime_config cores(std::uint32_t n) {
  runtime_config c;
  c.cores = n;
  c.timer_resolution_ns = 0;  // timed waits end at their deadline, not on 1 ms ticks
  return c;
}

/// Runs `body` in a child process and returns its stderr; `status` gets its wait status.
template <class Body>
std::string in_child(Body body, int& status) {
  int err[2];
  BOOST_REQUIRE(::pipe(err) == 0);
  std::fflush(nullptr);  // or the child's exit may print the parent's buffered output again
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // Boost.Test's handler would go on with the next test here
    ::dup2(err[1], 2);
    ::close(err[0]);
    body();
    std::_Exit(0);
  }
  ::close(err[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  return text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_std_programs_hold_on_one_core_and_on_several) {
  // On one core every wait must park its fiber: a wait that blocked the OS
  // thread would leave the fiber it waits for unrun, and the program hung.
  for (const std::uint32_t n : {1U, 2U, 4U}) {
    runtime rt(cores(n));
    rt.run([&] {
      for (int i = 0; i < 20; ++i) {
        BOOST_CHECK_NO_THROW(on_threads::counter<true>());
        BOOST_CHECK_NO_THROW(on_threads::mailbox<false>());
        BOOST_CHECK_NO_THROW(on_threads::bounded_queue());
        BOOST_CHECK_NO_THROW(on_threads::lazy_singleton());
        BOOST_CHECK_NO_THROW(on_threads::toolbox());
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(threads_spread_over_the_cores_and_know_their_ids) {
  runtime rt(cores(3));
  rt.run([&] {
    BOOST_TEST(cc::thread::hardware_concurrency() == 3U);
    std::atomic<std::uint32_t> seen_core{99};
    cc::thread::id inside;
    cc::thread t([&] {
      seen_core = rt.current_core();
      inside = cc::this_thread::get_id();
    });
    const cc::thread::id id = t.get_id();
    BOOST_TEST(t.joinable());
    BOOST_TEST((id != cc::this_thread::get_id()));
    t.join();
    BOOST_TEST(!t.joinable());
    BOOST_TEST((inside == id));
    BOOST_TEST(seen_core.load() != rt.current_core());  // not on the spawning core
    // As std's join: not joinable is invalid_argument, oneself a deadlock.
    try {
      t.join();
      BOOST_FAIL("joined twice");
    } catch (const std::system_error& e) {
      BOOST_TEST((e.code() == std::errc::invalid_argument));
    }
    std::atomic<bool> refused{false}, tried{false};
    cc::thread* self = nullptr;
    std::atomic<bool> ready{false};
    cc::thread s([&] {
      while (!ready.load()) cc::this_thread::yield();
      try {
        self->join();
      } catch (const std::system_error& e) {
        refused = e.code() == std::errc::resource_deadlock_would_occur;
      }
      tried = true;
    });
    self = &s;
    ready = true;
    // Joined only after its own attempt: two joins of one thread object at
    // once are a data race, with std's thread too.
    while (!tried.load()) cc::this_thread::yield();
    s.join();
    BOOST_TEST(refused.load());
    cc::thread d([] {});
    d.detach();
    BOOST_TEST(!d.joinable());
  });
}

BOOST_AUTO_TEST_CASE(a_notify_with_nobody_waiting_is_lost_and_timed_waits_time_out) {
  runtime rt(cores(2));
  rt.run([&] {
    cc::mutex m;
    cc::condition_variable cv;
    cv.notify_one();  // nobody waits: no permit is kept
    {
      cc::unique_lock<cc::mutex> lk(m);
      const auto before = std::chrono::steady_clock::now();
      BOOST_TEST((cv.wait_for(lk, 20ms) == std::cv_status::timeout));
      BOOST_TEST((std::chrono::steady_clock::now() - before >= 20ms));
      BOOST_TEST(!cv.wait_for(lk, 1ms, [] { return false; }));
    }
    // A parked waiter is woken by the notify.
    bool flag = false;
    auto waiter = rt.spawn_on(1, "waiter", [&] {
      cc::unique_lock<cc::mutex> lk(m);
      cv.wait(lk, [&] { return flag; });
    });
    until_parked(rt, waiter);
    {
      cc::lock_guard<cc::mutex> g(m);
      flag = true;
    }
    cv.notify_one();
    waiter.join();

    cc::timed_mutex tm;
    cc::counting_semaphore<1> none(0);
    cc::shared_timed_mutex rw;
    tm.lock();
    rw.lock();
    auto other = rt.spawn_on(1, "other", [&] {
      BOOST_TEST(!tm.try_lock_for(5ms));
      BOOST_TEST(!tm.try_lock_until(std::chrono::steady_clock::now() + 1ms));
      BOOST_TEST(!none.try_acquire_for(5ms));
      BOOST_TEST(!rw.try_lock_shared_for(5ms));
      BOOST_TEST(!rw.try_lock_for(5ms));
    });
    other.join();
    tm.unlock();
    rw.unlock();
    BOOST_TEST(rw.try_lock_shared_for(5ms));
    rw.unlock_shared();
  });
}

BOOST_AUTO_TEST_CASE(recursive_and_shared_mutexes_admit_whom_they_should) {
  runtime rt(cores(2));
  rt.run([&] {
    cc::recursive_mutex rec;
    rec.lock();
    BOOST_TEST(rec.try_lock());
    rec.lock();
    auto probe = [&](auto try_it) {
      bool got = false;
      auto t = rt.spawn_on(1, "probe", [&] { got = try_it(); });
      t.join();
      return got;
    };
    BOOST_TEST(!probe([&] { return rec.try_lock(); }));
    rec.unlock();
    rec.unlock();
    BOOST_TEST(!probe([&] { return rec.try_lock(); }));  // still held once
    rec.unlock();
    BOOST_TEST(probe([&] {
      const bool got = rec.try_lock();
      if (got) rec.unlock();
      return got;
    }));

    cc::shared_mutex rw;
    rw.lock_shared();
    BOOST_TEST(probe([&] {  // a second reader gets in beside the first
      const bool got = rw.try_lock_shared();
      if (got) rw.unlock_shared();
      return got;
    }));
    BOOST_TEST(!probe([&] { return rw.try_lock(); }));  // a writer does not
    // A writer waiting for the reader keeps new readers out.
    auto writer = rt.spawn_on(1, "writer", [&] {
      rw.lock();
      rw.unlock();
    });
    until_parked(rt, writer);
    BOOST_TEST(!rw.try_lock_shared());
    rw.unlock_shared();
    writer.join();
    BOOST_TEST(rw.try_lock_shared());
    rw.unlock_shared();
  });
}

BOOST_AUTO_TEST_CASE(call_once_tries_again_after_a_throw_and_waiters_park) {
  runtime rt(cores(1));
  rt.run([&] {
    cc::once_flag once;
    int calls = 0;
    try {
      cc::call_once(once, [&] {
        ++calls;
        throw std::runtime_error("first");
      });
    } catch (const std::runtime_error&) {
    }
    cc::call_once(once, [&] { ++calls; });
    cc::call_once(once, [&] { ++calls; });
    BOOST_TEST(calls == 2);

    // atomic::wait on one core: the waiter parks, the notifier runs.
    cc::atomic<int> turn{0};
    cc::thread t([&] {
      turn.wait(0);
      turn = 2;
      turn.notify_all();
    });
    turn = 1;
    turn.notify_one();
    turn.wait(1);
    BOOST_TEST(turn.load() == 2);
    t.join();
    cc::atomic_flag f;
    cc::thread u([&] {
      f.test_and_set();
      f.notify_one();
    });
    f.wait(false);
    BOOST_TEST(f.test());
    u.join();
  });
}

BOOST_AUTO_TEST_CASE(condition_variable_any_waits_with_any_lock_and_the_rest_of_the_names_work) {
  runtime rt(cores(2));
  rt.run([&] {
    // condition_variable_any with a lock on a shared_mutex.
    cc::shared_mutex rw;
    cc::condition_variable_any cv;
    int stage = 0;
    cc::thread t([&] {
      cc::unique_lock<cc::shared_mutex> lk(rw);
      cv.wait(lk, [&] { return stage == 1; });
      stage = 2;
      cv.notify_all();
    });
    {
      cc::unique_lock<cc::shared_mutex> lk(rw);
      stage = 1;
      cv.notify_one();
      BOOST_TEST(cv.wait_for(lk, 5s, [&] { return stage == 2; }));
    }
    t.join();
    // recursive_timed_mutex: its holder takes it again; another times out.
    cc::recursive_timed_mutex rtm;
    rtm.lock();
    BOOST_TEST(rtm.try_lock_for(1ms));
    bool other_got = true;
    cc::thread u([&] { other_got = rtm.try_lock_for(2ms); });
    u.join();
    BOOST_TEST(!other_got);
    rtm.unlock();
    rtm.unlock();
    // binary_semaphore hand-off, sleep_until on the steady clock.
    cc::binary_semaphore ready(0);
    cc::thread v([&] { ready.release(); });
    ready.acquire();
    v.join();
    const auto until = cc::chrono::steady_clock::now() + 2ms;
    cc::this_thread::sleep_until(until);
    BOOST_TEST((cc::chrono::steady_clock::now() >= until));
  });
}

BOOST_AUTO_TEST_CASE(a_lock_whose_unlock_parks_does_not_lose_the_condition_variables_waiters) {
  // condition_variable_any releases the caller's lock after listing the
  // waiter; that unlock may park the fiber on another primitive (here a
  // notify), which must not disturb the condition variable's list: the
  // waiter behind it must still be woken, and so must it. (The version that
  // listed the fiber's own wait record, which the notify's wait then reused,
  // happened to survive this order too: the record in two lists at once is
  // what wait_point.hpp now rules out, not something this order shows.)
  runtime rt(cores(2));
  rt.run([&] {
    runtime::notify go(rt);
    struct parking_lock {
      cc::mutex m;
      runtime::notify* go;
      bool park_once = true;
      void lock() { m.lock(); }
      void unlock() {
        m.unlock();
        if (std::exchange(park_once, false)) go->notified();
      }
    } pl{{}, &go};
    cc::mutex m2;
    cc::condition_variable_any cv;
    bool first_woke = false, second_woke = false, flag = false;
    auto first = rt.spawn_on(1, "first", [&] {
      std::unique_lock<parking_lock> lk(pl);
      cv.wait(lk);  // listed, then parked in go.notified() by the unlock
      first_woke = true;
    });
    until_parked(rt, first);
    auto second = rt.spawn_on(1, "second", [&] {
      cc::unique_lock<cc::mutex> lk(m2);
      cv.wait(lk, [&] { return flag; });  // listed behind the first
      second_woke = true;
    });
    until_parked(rt, second);
    {
      cc::lock_guard<cc::mutex> g(m2);
      flag = true;
    }
    cv.notify_all();
    go.notify_one();
    first.join();
    second.join();
    BOOST_TEST(first_woke);
    BOOST_TEST(second_woke);
  });
}

BOOST_AUTO_TEST_CASE(the_teardown_cancels_threads_parked_in_these_waits) {
  // Detached threads left waiting when main returns: the teardown unwinds
  // each (its lock taken again first), so run() returns.
  struct shared {
    cc::mutex m;
    cc::condition_variable cv;
    cc::counting_semaphore<1> sem{0};
    cc::atomic<int> word{0};
    cc::latch never{1};
  };
  auto s = std::make_shared<shared>();
  std::atomic<int> entered{0}, unwound{0};
  runtime rt(cores(2));
  rt.run([&] {
    auto count = [&entered, &unwound](auto wait) {
      return [&entered, &unwound, wait]() mutable {
        try {
          entered.fetch_add(1);
          wait();
        } catch (...) {
          unwound.fetch_add(1);
          throw;
        }
      };
    };
    cc::thread(count([s] {
      cc::unique_lock<cc::mutex> lk(s->m);
      s->cv.wait(lk, [] { return false; });
    })).detach();
    cc::thread(count([s] { s->sem.acquire(); })).detach();
    cc::thread(count([s] { s->word.wait(0); })).detach();
    cc::thread(count([s] { s->never.wait(); })).detach();
    // A thread the teardown finds unstarted is dropped unrun: let each start.
    // (Cancelled between here and its wait, it unwinds from the wait at once.)
    while (entered.load() != 4) cc::this_thread::yield();
    // A thread cancelled while it joins a thread of its own unwinds without
    // ending the process over that one (joinable no longer, once joining).
    cc::thread([&entered, &unwound, s] {
      cc::thread inner([s] { s->never.wait(); });
      entered.fetch_add(1);
      try {
        inner.join();
      } catch (...) {
        unwound.fetch_add(1);
        throw;
      }
    }).detach();
    while (entered.load() != 5) cc::this_thread::yield();
  });
  BOOST_TEST(unwound.load() == 5);
  BOOST_TEST(s->m.try_lock());  // the cv's waiter let go of the lock as it unwound
  s->m.unlock();
}

BOOST_AUTO_TEST_CASE(misuse_ends_the_process_with_a_line_naming_the_fiber) {
  int status = 0;
  std::string err = in_child(
      [] {
        runtime rt(cores(2));
        rt.run([&] {
          cc::mutex m;
          cc::thread t([&] { m.lock(); });
          t.join();
          m.unlock();  // held by the thread, which ended: not ours to unlock
        });
      },
      status);
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT), err);
  BOOST_TEST(has(err, "lockstep: threads_std misuse: a mutex was unlocked by a caller that does not hold it, "
                      "by fiber #1 'main'"),
             err);

  err = in_child(
      [] {
        runtime rt(cores(2));
        rt.run([&] { cc::thread t([] {}); });  // neither joined nor detached
      },
      status);
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT), err);
  BOOST_TEST(has(err, "lockstep: threads_std misuse: thread #2 'thread' was destroyed while joinable"), err);
}

BOOST_AUTO_TEST_CASE(off_the_runtimes_fibers_a_thread_cannot_start_and_a_wait_refuses) {
  try {
    cc::thread t([] {});
    t.join();
    BOOST_FAIL("a thread started off the runtime");
  } catch (const std::logic_error& e) {
    BOOST_TEST(has(e.what(), "lockstep::threads_std::thread called off a fiber of a lockstep::threads::runtime"),
               e.what());
  }
  cc::mutex m;
  cc::condition_variable cv;
  cc::unique_lock<cc::mutex> lk(m);
  try {
    cv.wait_for(lk, 1ms);
    BOOST_FAIL("a condition variable waited off the runtime");
  } catch (const std::logic_error& e) {
    BOOST_TEST(has(e.what(), "condition_variable::wait must be called on a fiber of the runtime"), e.what());
  }
  BOOST_TEST(lk.owns_lock());  // refused before letting go of the lock
  // Locks, atomics and sleeps work off the fibers, as plain threads.
  cc::atomic<int> a{1};
  a.wait(0);
  cc::this_thread::sleep_for(1ms);
}
