// Goal: task.cancel() from core 1 unwinds a fiber parked on core 0 at every
// kind of await point — its destructors run once, nothing after the wait
// runs, join returns — while mutex::lock is not interrupted; a destructor may
// park during the unwind without a second throw; and each fiber keeps its
// own C++ exception state although fibers of one thread interleave.
#define BOOST_TEST_MODULE threads_cancellation
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/util.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::testing::dtor_counter;
using lockstep::threads::testing::until_parked;

namespace {

constexpr std::int64_t hour = 3600LL * 1'000'000'000;
using chan = runtime::channel<int>;

struct outcome {
  int dtors = 0;
  bool after = false;
  bool finished = false;
};

/// `make(rt)` builds what the victim waits on and returns the wait. The
/// victim parks on core 0; a fiber on core 1 cancels it.
outcome cancel_parked(const std::function<std::function<void()>(runtime&)>& make) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  std::atomic<bool> after{false};
  bool finished = false;
  rt.run([&] {
    std::function<void()> wait = make(rt);
    auto victim = rt.spawn_on(0, "victim", [&, wait] {
      dtor_counter outer(dtors);
      {
        dtor_counter inner(dtors);
        wait();
      }
      after = true;
    });
    until_parked(rt, victim);
    auto canceller = rt.spawn_on(1, "canceller", [&victim] { victim.cancel(); });
    canceller.join();
    victim.join();
    finished = victim.finished();
  });
  return {dtors.load(), after.load(), finished};
}

void expect_unwound(const outcome& o) {
  BOOST_TEST(o.dtors == 2, "each destructor of the frame runs exactly once");
  BOOST_TEST(!o.after, "nothing after the await point runs");
  BOOST_TEST(o.finished);
}

}  // namespace

BOOST_AUTO_TEST_CASE(cancel_at_channel_recv) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto ends = std::make_shared<std::pair<chan::sender, chan::receiver>>(chan::unbounded(rt));
    return std::function<void()>([ends] { (void)ends->second.recv(); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_channel_send_while_full) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto ends = std::make_shared<std::pair<chan::sender, chan::receiver>>(chan::bounded(rt, 1));
    (void)ends->first.try_send(0);
    return std::function<void()>([ends] { (void)ends->first.send(1); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_channel_recv_until) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto ends = std::make_shared<std::pair<chan::sender, chan::receiver>>(chan::unbounded(rt));
    return std::function<void()>([ends, &rt] { (void)ends->second.recv_until(rt.now() + hour); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_channel_recv_for) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto ends = std::make_shared<std::pair<chan::sender, chan::receiver>>(chan::unbounded(rt));
    return std::function<void()>([ends] { (void)ends->second.recv_for(hour); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_sleep) {
  expect_unwound(cancel_parked([](runtime& rt) { return std::function<void()>([&rt] { rt.sleep_for(hour); }); }));
}

BOOST_AUTO_TEST_CASE(cancel_at_notified) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto n = std::make_shared<runtime::notify>(rt);
    return std::function<void()>([n] { n->notified(); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_notified_until) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto n = std::make_shared<runtime::notify>(rt);
    return std::function<void()>([n, &rt] { (void)n->notified_until(rt.now() + hour); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_watch_changed) {
  expect_unwound(cancel_parked([](runtime& rt) {
    auto w = std::make_shared<runtime::watch<int>>(rt, 0);
    return std::function<void()>([w] {
      auto rx = w->subscribe();
      (void)rx.changed();
    });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_oneshot_recv) {
  using shot = runtime::oneshot<int>;
  expect_unwound(cancel_parked([](runtime& rt) {
    auto ends = std::make_shared<std::pair<shot::sender, shot::receiver>>(shot::make(rt));
    return std::function<void()>([ends] { (void)ends->second.recv(); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_cancellation_token) {
  expect_unwound(cancel_parked([](runtime& rt) {
    runtime::cancellation_token token(rt);
    return std::function<void()>([token]() mutable { token.cancelled(); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_join) {
  // The joined fiber waits forever; the runtime's teardown ends it after main.
  expect_unwound(cancel_parked([](runtime& rt) {
    auto forever = std::make_shared<runtime::task>(rt.spawn_on(1, "forever", [&rt] {
      runtime::notify never(rt);
      never.notified();
    }));
    return std::function<void()>([forever] { forever->join(); });
  }));
}

BOOST_AUTO_TEST_CASE(cancel_at_yield) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  std::atomic<bool> spinning{false};
  rt.run([&] {
    auto victim = rt.spawn_on(1, "yielder", [&] {
      dtor_counter guard(dtors);
      while (true) {
        spinning = true;
        rt.yield_now();
      }
    });
    while (!spinning) rt.yield_now();
    victim.cancel();
    victim.join();
  });
  BOOST_TEST(dtors.load() == 1);
}

BOOST_AUTO_TEST_CASE(mutex_lock_is_not_an_await_point) {
  runtime rt(2);
  std::atomic<int> dtors{0};
  std::atomic<bool> got_lock{false}, after_yield{false};
  bool still_parked = false;
  rt.run([&] {
    runtime::mutex mu(rt);
    mu.lock();
    auto victim = rt.spawn_on(1, "locker", [&] {
      dtor_counter guard(dtors);
      {
        std::lock_guard<runtime::mutex> g(mu);
        got_lock = true;
      }
      rt.yield_now();  // the first await point after the lock: the cancel lands here
      after_yield = true;
    });
    until_parked(rt, victim);
    victim.cancel();
    still_parked = victim.is_waiting() && !victim.finished();
    mu.unlock();
    victim.join();
  });
  BOOST_TEST(still_parked, "cancel does not interrupt mutex::lock");
  BOOST_TEST(got_lock.load());
  BOOST_TEST(!after_yield.load());
  BOOST_TEST(dtors.load() == 1);
}

BOOST_AUTO_TEST_CASE(a_destructor_may_park_during_the_unwind_without_a_second_throw) {
  runtime rt(2);
  std::atomic<bool> in_dtor{false};
  std::optional<int> drained;
  std::atomic<int> dtors{0};
  rt.run([&] {
    auto [tx, rx] = chan::unbounded(rt);
    runtime::notify never(rt);
    auto victim = rt.spawn_on(0, "victim", [&, rx = std::move(rx)]() mutable {
      struct drain_on_exit {
        chan::receiver& rx;
        std::atomic<bool>& in_dtor;
        std::optional<int>& drained;
        std::atomic<int>& dtors;
        ~drain_on_exit() {
          in_dtor = true;
          drained = rx.recv();  // parks while unwinding; must not throw
          dtors.fetch_add(1);
        }
      } guard{rx, in_dtor, drained, dtors};
      never.notified();
    });
    until_parked(rt, victim);
    auto canceller = rt.spawn_on(1, "canceller", [&victim] { victim.cancel(); });
    canceller.join();
    while (!in_dtor || !victim.is_waiting()) rt.yield_now();
    auto sender = rt.spawn_on(1, "sender", [&, tx = tx]() mutable { (void)tx.send(9); });
    sender.join();
    victim.join();
  });
  BOOST_TEST(drained.value_or(0) == 9);
  BOOST_TEST(dtors.load() == 1);
}

BOOST_AUTO_TEST_CASE(each_fiber_keeps_its_own_caught_exception_across_a_yield) {
  // Two fibers of one thread each suspend inside a catch block; `throw;` must
  // rethrow its own exception, not the other's.
  runtime rt(2);
  std::string rethrown_a, rethrown_b;
  int uncaught_seen_by_d = -1;
  rt.run([&] {
    auto body = [&rt](const char* name, std::string& out) {
      try {
        throw std::runtime_error(name);
      } catch (const std::runtime_error&) {
        rt.yield_now();
        rt.yield_now();
        try {
          throw;
        } catch (const std::runtime_error& e) {
          out = e.what();
        }
      }
    };
    auto a = rt.spawn("a", [&] { body("a", rethrown_a); });
    auto b = rt.spawn("b", [&] { body("b", rethrown_b); });
    a.join();
    b.join();
    // A destructor suspended during an unwind: another fiber of the thread
    // must not see that exception as in flight.
    auto c = rt.spawn("c", [&rt] {
      struct yield_in_dtor {
        runtime& rt;
        ~yield_in_dtor() { rt.yield_now(); }
      };
      try {
        yield_in_dtor y{rt};
        throw std::logic_error("unwinding");
      } catch (const std::logic_error&) {
      }
    });
    auto d = rt.spawn("d", [&] {
      // The core's FIFO runs c first, so c is parked inside its unwinding destructor now.
      uncaught_seen_by_d = std::uncaught_exceptions();
    });
    c.join();
    d.join();
  });
  BOOST_TEST(rethrown_a == "a");
  BOOST_TEST(rethrown_b == "b");
  BOOST_TEST(uncaught_seen_by_d == 0);
}
