// Goal: cancellation by unwinding works at every await point: the cancelled
// fiber throws there once, every destructor in its frames runs innermost
// first (then its captures), destructors may block and even await while
// unwinding, a mutex wait is not an await point, end-of-run teardown unwinds
// everything left, and each fiber keeps its own C++ exception state.
#define BOOST_TEST_MODULE sim_cancellation
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/tests/sim_test_util.hpp"

using namespace lockstep::sim;
using lockstep::sim::testing::config;

namespace {

using event_log = std::vector<std::string>;

// Logs "~name" when destroyed; moved-from instances stay quiet, so a guard
// captured by a fiber body is logged exactly once.
struct guard {
  guard(std::string n, event_log* l) : name(std::move(n)), log(l) {}
  guard(guard&& o) noexcept : name(std::move(o.name)), log(std::exchange(o.log, nullptr)) {}
  guard(const guard&) = delete;
  ~guard() {
    if (log != nullptr) log->push_back("~" + name);
  }
  std::string name;
  event_log* log;
};

enum class await_kind {
  channel_recv,
  channel_send_full,
  sleep,
  notify,
  watch_changed,
  oneshot_recv,
  join,
  token_cancelled,
  recv_until,
  yield_now,
};

const char* name_of(await_kind k) {
  switch (k) {
    case await_kind::channel_recv: return "channel_recv";
    case await_kind::channel_send_full: return "channel_send_full";
    case await_kind::sleep: return "sleep";
    case await_kind::notify: return "notify";
    case await_kind::watch_changed: return "watch_changed";
    case await_kind::oneshot_recv: return "oneshot_recv";
    case await_kind::join: return "join";
    case await_kind::token_cancelled: return "token_cancelled";
    case await_kind::recv_until: return "recv_until";
    case await_kind::yield_now: return "yield_now";
  }
  return "?";
}

constexpr await_kind all_kinds[] = {
    await_kind::channel_recv, await_kind::channel_send_full, await_kind::sleep,
    await_kind::notify,       await_kind::watch_changed,     await_kind::oneshot_recv,
    await_kind::join,         await_kind::token_cancelled,   await_kind::recv_until,
    await_kind::yield_now,
};

// Everything a victim may wait on, owned by main and the victim together.
struct waitables {
  explicit waitables(runtime& rt)
      : n(rt), w(rt, 0), token(rt), chan(channel<int>::bounded(rt, 1)), shot(oneshot<int>::make(rt)) {}
  notify n;
  watch<int> w;
  cancellation_token token;
  std::pair<channel<int>::sender, channel<int>::receiver> chan;
  std::pair<oneshot<int>::sender, oneshot<int>::receiver> shot;
  task blocker;  // for join: a fiber that never ends by itself
  bool about_to_wait = false;
};

// The victim's innermost frame: announces itself, then waits at `kind`.
void wait_at(runtime& rt, waitables& st, await_kind kind, event_log& log) {
  guard inner("inner", &log);
  auto rx = st.w.subscribe();
  st.about_to_wait = true;
  switch (kind) {
    case await_kind::channel_recv: (void)st.chan.second.recv(); break;
    case await_kind::channel_send_full: (void)st.chan.first.send(2); break;
    case await_kind::sleep: rt.sleep_for(1'000'000); break;
    case await_kind::notify: st.n.notified(); break;
    case await_kind::watch_changed: (void)rx.changed(); break;
    case await_kind::oneshot_recv: (void)st.shot.second.recv(); break;
    case await_kind::join: st.blocker.join(); break;
    case await_kind::token_cancelled: st.token.cancelled(); break;
    case await_kind::recv_until: (void)st.chan.second.recv_until(1'000'000); break;
    case await_kind::yield_now:
      while (true) rt.yield_now();
  }
  log.push_back("returned from the wait");
}

void middle(runtime& rt, waitables& st, await_kind kind, event_log& log) {
  guard middle_guard("middle", &log);
  wait_at(rt, st, kind, log);
  log.push_back("returned from middle");
}

}  // namespace

BOOST_AUTO_TEST_CASE(cancel_unwinds_a_fiber_at_every_kind_of_await_point) {
  for (await_kind kind : all_kinds) {
    for (std::uint32_t cores = 1; cores <= 2; ++cores) {
      for (std::uint64_t seed = 0; seed < 10; ++seed) {
        BOOST_TEST_CONTEXT("await " << name_of(kind) << " cores " << cores << " seed " << seed) {
          event_log log;
          bool finished_before = true;
          bool finished_after = false;
          std::int64_t ended_at = -1;
          auto r = run(config(seed, seed == 0 ? "fifo" : "random", cores), [&](runtime& rt) {
            auto st = std::make_shared<waitables>(rt);
            if (kind == await_kind::channel_send_full) BOOST_TEST(st->chan.first.send(1).ok());
            if (kind == await_kind::join) {
              st->blocker = rt.spawn("blocker", [st = std::weak_ptr<waitables>(st)] {
                if (auto s = st.lock()) {
                  cancellation_token never = s->token;
                  s.reset();
                  never.cancelled();
                }
              });
            }
            auto victim = rt.spawn_on(cores - 1, "victim",
                                      [&rt, st, kind, &log, cap = guard("capture", &log)] {
                                        guard outer("outer", &log);
                                        middle(rt, *st, kind, log);
                                        log.push_back("body returned");
                                      });
            while (!st->about_to_wait) rt.yield_now();
            rt.yield_now();  // on two cores, give the victim a chance to block
            finished_before = victim.finished();
            victim.cancel();
            victim.join();
            finished_after = victim.finished();
            ended_at = rt.now();
          });
          BOOST_TEST(r.ok());
          BOOST_TEST(log == (event_log{"~inner", "~middle", "~outer", "~capture"}));
          BOOST_TEST(!finished_before);
          BOOST_TEST(finished_after);
          BOOST_TEST(ended_at == 0);  // no timer had to fire
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_destructor_may_block_on_a_mutex_while_unwinding) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      event_log log;
      auto r = run(config(seed, "random", 2), [&](runtime& rt) {
        struct shared {
          explicit shared(runtime& r) : m(r), token(r) {}
          mutex m;
          cancellation_token token;
          bool held = false;
          bool victim_waiting = false;
        };
        auto st = std::make_shared<shared>(rt);
        auto holder = rt.spawn_on(1, "holder", [&rt, st, &log] {
          std::lock_guard g(st->m);
          st->held = true;
          rt.sleep_for(100);
          log.push_back("holder releases at " + std::to_string(rt.now()));
        });
        while (!st->held) rt.yield_now();
        auto victim = rt.spawn_on(0, "victim", [&rt, st, &log] {
          struct locks_on_exit {
            runtime& rt;
            shared& s;
            event_log& log;
            ~locks_on_exit() {
              std::lock_guard g(s.m);  // blocks until the holder lets go
              log.push_back("victim destructor locked at " + std::to_string(rt.now()));
            }
          } on_exit{rt, *st, log};
          st->victim_waiting = true;
          st->token.cancelled();
        });
        while (!st->victim_waiting) rt.yield_now();
        victim.cancel();
        victim.join();
        holder.join();
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(log == (event_log{"holder releases at 100", "victim destructor locked at 100"}));
    }
  }
}

BOOST_AUTO_TEST_CASE(cancellation_is_delivered_once_so_destructors_may_await) {
  event_log log;
  auto r = run(config(1), [&](runtime& rt) {
    auto [tx, rx] = channel<int>::bounded(rt, 4);
    auto victim = rt.spawn("victim", [&rt, &log, rx = std::move(rx)]() mutable {
      struct awaits_on_exit {
        runtime& rt;
        channel<int>::receiver& rx;
        event_log& log;
        ~awaits_on_exit() {
          // Each of these is an await point; none may throw a second time.
          rt.sleep_for(10);
          rt.yield_now();
          auto late = rx.recv_until(rt.now() + 5);
          log.push_back("destructor finished at " + std::to_string(rt.now()) + " with " +
                        (late.item ? std::to_string(*late.item) : std::string("nothing")));
        }
      } on_exit{rt, rx, log};
      (void)rx.recv();  // the channel stays empty
      log.push_back("recv returned");
    });
    rt.sleep_for(1);
    victim.cancel();
    rt.sleep_for(12);
    BOOST_TEST(tx.send(9).ok());  // arrives while the destructor waits in recv_until
    victim.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(log == (event_log{"destructor finished at 13 with 9"}));
}

BOOST_AUTO_TEST_CASE(a_fiber_cancelled_before_it_runs_drops_its_body_unrun) {
  for (std::uint32_t cores = 1; cores <= 2; ++cores) {
    BOOST_TEST_CONTEXT("cores " << cores) {
      event_log log;
      bool ran = false;
      auto r = run(config(1, "random", cores), [&](runtime& rt) {
        auto t = rt.spawn_on(cores - 1, "never", [&ran, cap = guard("capture", &log)] { ran = true; });
        t.cancel();
        t.join();
        BOOST_TEST(t.finished());
      });
      BOOST_TEST(r.ok());
      // On one core main keeps the core until join, so the body never ran. On
      // two, cancel()'s scheduling point may let it start first: either way
      // the capture is destroyed exactly once.
      if (cores == 1) BOOST_TEST(!ran);
      BOOST_TEST(log == (event_log{"~capture"}));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_fiber_blocked_on_a_mutex_is_not_woken_by_cancel) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      event_log log;
      bool finished_while_locked = true;
      auto r = run(config(seed, "random", 2), [&](runtime& rt) {
        struct shared {
          explicit shared(runtime& r) : m(r), release(r) {}
          mutex m;
          notify release;
          bool held = false;
          bool victim_locking = false;
        };
        auto st = std::make_shared<shared>(rt);
        auto holder = rt.spawn_on(1, "holder", [st] {
          std::lock_guard g(st->m);
          st->held = true;
          st->release.notified();
        });
        while (!st->held) rt.yield_now();
        auto victim = rt.spawn_on(0, "victim", [&rt, st, &log] {
          guard outer("outer", &log);
          st->victim_locking = true;
          {
            std::lock_guard g(st->m);
            log.push_back("locked despite the cancel");
          }
          rt.yield_now();  // the next await point: the cancel lands here
          log.push_back("after yield");
        });
        while (!st->victim_locking) rt.yield_now();
        victim.cancel();
        rt.sleep_for(100);  // plenty of time to react, were cancel to wake it
        finished_while_locked = victim.finished();
        st->release.notify_one();
        victim.join();
        holder.join();
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(!finished_while_locked);
      BOOST_TEST(log == (event_log{"locked despite the cancel", "~outer"}));
    }
  }
}

BOOST_AUTO_TEST_CASE(teardown_cancels_every_fiber_still_blocked_when_main_returns) {
  event_log log;
  auto r = run(config(5, "random", 2), [&](runtime& rt) {
    auto st = std::make_shared<waitables>(rt);
    BOOST_TEST(st->chan.first.send(1).ok());  // full, for the blocked sender
    st->blocker = rt.spawn("blocker", [st = std::weak_ptr<waitables>(st), g = guard("blocker", &log)] {
      if (auto s = st.lock()) {
        cancellation_token never = s->token;
        s.reset();
        never.cancelled();
      }
    });
    int n = 0;
    for (await_kind kind : all_kinds) {
      // The channel is full, so a receiver would not wait; a yielder would
      // keep virtual time from reaching the end of main's sleep.
      if (kind == await_kind::channel_recv || kind == await_kind::recv_until || kind == await_kind::yield_now)
        continue;
      const std::string name = std::string(name_of(kind));
      rt.spawn_on(static_cast<std::uint32_t>(n++ % 2), name,
                  [&rt, st, kind, &log, cap = guard(name, &log)] { middle(rt, *st, kind, log); });
    }
    // A mutex waiter: not woken by teardown's cancel (lock is no await
    // point), it gets the mutex when the holder unwinds, then leaves at its
    // next await point.
    auto m = std::make_shared<mutex>(rt);
    rt.spawn_on(0, "mutex holder", [&rt, m, st, &log, cap = guard("mutex holder", &log)] {
      std::lock_guard g(*m);
      middle(rt, *st, await_kind::token_cancelled, log);
    });
    rt.spawn_on(1, "mutex waiter", [&rt, m, &log, cap = guard("mutex waiter", &log)] {
      rt.sleep_for(1);
      guard frame("mutex waiter frame", &log);
      std::lock_guard g(*m);
      rt.yield_now();
      log.push_back("mutex waiter returned");
    });
    rt.sleep_for(10);  // everyone reaches its wait
  });
  BOOST_TEST(r.ok());
  // Every fiber unwound: its frames and its capture. 7 waiters, the blocker,
  // the mutex holder (one more inner frame) and the mutex waiter.
  int captures = 0;
  int inners = 0;
  for (const auto& e : log) {
    captures += e != "~inner" && e != "~middle" && e != "~mutex waiter frame";
    inners += e == "~inner";
    BOOST_TEST(e.find("returned") == std::string::npos, e);
  }
  BOOST_TEST(inners == 8);
  BOOST_TEST(captures == 10);
  BOOST_TEST(std::count(log.begin(), log.end(), "~mutex waiter frame") == 1);
}

BOOST_AUTO_TEST_CASE(a_notify_waiter_survives_teardown_after_the_notify_is_gone) {
  // main owns the notify, hands its notification to `waiter`, and aborts
  // before `waiter` runs: main's frame (and the notify) is gone when teardown
  // resumes the waiter, which must not touch the notify on its way out.
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      event_log log;
      // Storage we can poison after the notify's destructor ran (outside any
      // fiber stack, where later frames would overwrite the poison), so a
      // touch of the dead notify crashes instead of reading stale bytes.
      alignas(notify) unsigned char storage[sizeof(notify)];
      auto r = run(config(seed), [&](runtime& rt) {
        notify* n = new (storage) notify(rt);
        rt.spawn("waiter", [n, g = guard("waiter", &log)] { (void)n->notified_until(1'000'000); });
        rt.spawn("bystander", [n, g = guard("bystander", &log)] { n->notified(); });
        rt.sleep_for(1);
        n->notify_one();  // handed to `waiter`, which has not run yet
        n->~notify();     // what unwinding main's frame does at teardown
        std::memset(storage, 0xa5, sizeof storage);
        rt.abort("stop here");
      });
      BOOST_REQUIRE(!r.ok());
      BOOST_TEST(r.failed->kind == failure_kind::abort);
      std::sort(log.begin(), log.end());
      BOOST_TEST(log == (event_log{"~bystander", "~waiter"}));
    }
  }
}

BOOST_AUTO_TEST_CASE(exception_state_is_per_fiber) {
  // Two fibers suspend inside catch handlers; each `throw;` must rethrow its
  // own exception, and std::uncaught_exceptions / current_exception must not
  // leak from one to the other.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      std::vector<std::string> got(2);
      std::vector<int> uncaught(2, -1);
      auto r = run(config(seed, "random", 2), [&](runtime& rt) {
        auto body = [&rt, &got, &uncaught](int who, std::int64_t first, std::int64_t second) {
          try {
            throw std::runtime_error("error of fiber " + std::to_string(who));
          } catch (...) {
            rt.sleep_for(first);
            uncaught[static_cast<std::size_t>(who)] = std::uncaught_exceptions();
            try {
              rt.sleep_for(second);
              throw;
            } catch (const std::runtime_error& e) {
              got[static_cast<std::size_t>(who)] = e.what();
            }
          }
        };
        auto a = rt.spawn_on(0, "a", [&] { body(0, 10, 20); });
        auto b = rt.spawn_on(1 % rt.cores(), "b", [&] { body(1, 5, 10); });
        // A third fiber throws and catches in between, on the core of `a`.
        auto c = rt.spawn_on(0, "c", [&rt] {
          rt.sleep_for(7);
          try {
            throw std::logic_error("c");
          } catch (const std::logic_error&) {
            rt.sleep_for(1);
          }
        });
        a.join();
        b.join();
        c.join();
        BOOST_TEST(!std::current_exception());
      });
      BOOST_TEST(r.ok());
      BOOST_TEST(got == (std::vector<std::string>{"error of fiber 0", "error of fiber 1"}));
      BOOST_TEST(uncaught == (std::vector<int>{0, 0}));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_fiber_may_cancel_itself_and_leaves_at_its_next_await_point) {
  event_log log;
  auto r = run(config(1), [&](runtime& rt) {
    task self;
    auto t = rt.spawn("selfish", [&rt, &self, &log] {
      guard g("frame", &log);
      self.cancel();
      log.push_back("still running after cancel()");
      rt.yield_now();
      log.push_back("after yield");
    });
    self = t;
    t.join();
  });
  BOOST_TEST(r.ok());
  BOOST_TEST(log == (event_log{"still running after cancel()", "~frame"}));
}
