// Goal: plain shared memory is checked through lockstep::var<T>. Two accesses
// of different threads, one a write, that nothing orders (a lock, an atomic's
// release and acquire, a fence, a semaphore, a thread's start or join) fail
// the run as a data race naming both lines and each thread's last operations;
// whatever the C++ rules say orders them never does. Each rule below has a
// program it orders (which must hold under every strategy) and, beside it,
// the same program with the ordering removed (which must be reported).
#define BOOST_TEST_MODULE var
#include <boost/test/unit_test.hpp>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "sim/channel.hpp"
#include "sim/mutex.hpp"
#include "sim/runtime.hpp"
#include "sim/std.hpp"
#include "testing/explore.hpp"
#include "testing/tests/scratch_dir.hpp"

namespace sim = lockstep::sim;
namespace lt = lockstep::testing;
namespace cc = lockstep::sim_std;

namespace {

std::string temp_dir(const std::string& name) {
  return lockstep::testing_scratch::scratch_dir("lockstep-var-" + name);
}

lt::explore_result explore_rt(const std::string& name, const std::function<void(sim::runtime&)>& program,
                              std::vector<std::string> strategies = {"random", "pct", "dfs"}) {
  lt::test_options o;
  o.runs = 300;
  o.strategies = std::move(strategies);
  o.record_dir = temp_dir(name);
  o.preemption_bound = 2;
  o.max_schedules = 3000;
  return lt::explore(name, o, program);
}

lt::explore_result explore(const std::string& name, const std::function<void()>& program) {
  return explore_rt(name, [&program](sim::runtime&) { program(); });
}

std::string first_message(const lt::explore_result& r) {
  if (r.failures.empty() || !r.failures.front().record.result.failed) return "";
  return r.failures.front().record.result.failed->message;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Fails the test unless `r` found a data race (and prints it).
void expect_race(const lt::explore_result& r, const std::string& on) {
  const std::string msg = first_message(r);
  BOOST_TEST_MESSAGE(msg);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(r.failures.front().record.result.failed->kind == sim::failure_kind::data_race);
  BOOST_TEST(contains(msg, "data race on var '" + on + "'"), msg);
}

void expect_held(const lt::explore_result& r) {
  BOOST_TEST(r.failures.empty(), first_message(r));
}

std::string line_of(int line) { return "test_var.cpp:" + std::to_string(line); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_lost_update_on_a_var_is_a_race_naming_both_lines_and_histories) {
  const int line = __LINE__ + 4;
  const lt::explore_result r = explore("lost_update", [] {
    cc::var<int> hits(0, "hits");
    auto bump = [&hits] {
      hits += 1;
    };
    cc::thread a(bump), b(bump);
    a.join();
    b.join();
  });
  expect_race(r, "hits");
  const std::string msg = first_message(r);
  BOOST_TEST(contains(msg, line_of(line - 2) + ": "));  // where the var was created
  BOOST_TEST(contains(msg, " by #1 'thread'"));           // both threads, by name,
  BOOST_TEST(contains(msg, " by #2 'thread'"));
  BOOST_TEST(contains(msg, line_of(line) + ", then "));   // at the lines of both accesses
  BOOST_TEST(contains(msg, line_of(line) + ", with nothing ordering them"));
  BOOST_TEST(contains(msg, "'thread' last did:\n    var.read at "));  // and what each did last
  BOOST_TEST(contains(msg, "\n    var.write at "));
  // Exit code 1 (failed), and the record replays the same race.
  const lt::replay_result again = lt::replay(r.failures.front().record, [](sim::runtime&) {
    cc::var<int> hits(0, "hits");
    auto bump = [&hits] { hits += 1; };
    cc::thread a(bump), b(bump);
    a.join();
    b.join();
  });
  BOOST_TEST(again.reproduced);
}

BOOST_AUTO_TEST_CASE(a_mutex_orders_what_it_guards) {
  auto program = [](bool locked) {
    return [locked] {
      cc::var<int> hits(0, "hits");
      cc::mutex m;
      auto bump = [&] {
        if (locked) m.lock();
        hits += 1;
        if (locked) m.unlock();
      };
      cc::thread a(bump), b(bump);
      a.join();
      b.join();
      if (hits.load() != 2) throw std::logic_error("lost update under a lock");
    };
  };
  expect_held(explore("locked", program(true)));
  expect_race(explore("unlocked", program(false)), "hits");
}

BOOST_AUTO_TEST_CASE(a_thread_start_and_its_join_order_the_parent_around_it) {
  auto program = [](bool joined_first) {
    return [joined_first] {
      cc::var<int> v(1, "v");
      v = 2;  // before the start: the child sees it
      cc::thread t([&v] { v += 1; });
      if (joined_first) t.join();
      v += 1;  // after the join: ordered; before it: a race with the child
      if (!joined_first) t.join();
    };
  };
  expect_held(explore("joined", program(true)));
  expect_race(explore("not_joined", program(false)), "v");
}

BOOST_AUTO_TEST_CASE(a_release_store_and_an_acquire_load_pass_a_message_relaxed_ones_do_not) {
  auto program = [](cc::memory_order store, cc::memory_order load) {
    return [store, load] {
      cc::var<int> data(0, "data");
      cc::atomic<bool> ready{false};
      cc::thread producer([&] {
        data = 42;
        ready.store(true, store);
      });
      while (!ready.load(load)) cc::this_thread::yield();
      if (data.load() != 42) throw std::logic_error("the message arrived before its data");
      producer.join();
    };
  };
  expect_held(explore("release_acquire", program(cc::memory_order_release, cc::memory_order_acquire)));
  expect_held(explore("seq_cst", program(cc::memory_order_seq_cst, cc::memory_order_seq_cst)));
  expect_race(explore("relaxed_store", program(cc::memory_order_relaxed, cc::memory_order_acquire)), "data");
  expect_race(explore("relaxed_load", program(cc::memory_order_release, cc::memory_order_relaxed)), "data");
}

BOOST_AUTO_TEST_CASE(fences_order_relaxed_operations_and_only_with_both_halves) {
  auto program = [](bool release_fence, bool acquire_fence) {
    return [release_fence, acquire_fence] {
      cc::var<int> data(0, "data");
      cc::atomic<bool> ready{false};
      cc::thread producer([&] {
        data = 42;
        if (release_fence) cc::atomic_thread_fence(cc::memory_order_release);
        ready.store(true, cc::memory_order_relaxed);
      });
      while (!ready.load(cc::memory_order_relaxed)) cc::this_thread::yield();
      if (acquire_fence) cc::atomic_thread_fence(cc::memory_order_acquire);
      (void)data.load();
      producer.join();
    };
  };
  expect_held(explore("both_fences", program(true, true)));
  expect_race(explore("no_acquire_fence", program(true, false)), "data");
  expect_race(explore("no_release_fence", program(false, true)), "data");
}

BOOST_AUTO_TEST_CASE(a_read_modify_write_continues_a_release_sequence_and_a_plain_store_ends_it) {
  // C++20 [intro.races]: the release sequence headed by a release store is
  // continued by read-modify-writes of any thread, not by other stores.
  auto program = [](bool rmw) {
    return [rmw] {
      cc::var<int> data(0, "data");
      cc::atomic<int> x{0};
      cc::thread head([&] {
        data = 1;
        x.store(1, cc::memory_order_release);
      });
      cc::thread middle([&] {
        while (x.load(cc::memory_order_relaxed) != 1) cc::this_thread::yield();
        if (rmw) {
          x.fetch_add(1, cc::memory_order_relaxed);
        } else {
          x.store(2, cc::memory_order_relaxed);
        }
      });
      while (x.load(cc::memory_order_acquire) != 2) cc::this_thread::yield();
      (void)data.load();
      head.join();
      middle.join();
    };
  };
  expect_held(explore("rmw_continues", program(true)));
  expect_race(explore("store_ends", program(false)), "data");
}

BOOST_AUTO_TEST_CASE(a_write_under_a_shared_lock_races_with_the_other_readers) {
  auto program = [](bool exclusive_writer) {
    return [exclusive_writer] {
      cc::var<int> table(0, "table");
      cc::shared_mutex m;
      cc::thread writer([&] {
        if (exclusive_writer) {
          cc::unique_lock<cc::shared_mutex> lk(m);
          table = 1;
        } else {
          cc::shared_lock<cc::shared_mutex> lk(m);  // the bug: writes under a reader's lock
          table = 1;
        }
      });
      cc::thread reader([&] {
        // Later than the writer's section, but ordered only by the lock (a
        // sleep orders nothing): a reader comes after a writer's unlock, not
        // after another reader's.
        cc::this_thread::sleep_for(cc::chrono::milliseconds(1));
        cc::shared_lock<cc::shared_mutex> lk(m);
        (void)table.load();
      });
      writer.join();
      reader.join();
    };
  };
  expect_held(explore("exclusive_writer", program(true)));
  expect_race(explore("shared_writer", program(false)), "table");
}

BOOST_AUTO_TEST_CASE(semaphores_latches_barriers_call_once_and_condition_variables_order_accesses) {
  expect_held(explore("semaphore", [] {
    cc::var<int> slot(0, "slot");
    cc::binary_semaphore filled(0);
    cc::thread producer([&] {
      slot = 7;
      filled.release();
    });
    filled.acquire();
    if (slot.load() != 7) throw std::logic_error("semaphore");
    producer.join();
  }));
  expect_held(explore("latch", [] {
    std::array<cc::var<int>, 2> parts;
    cc::latch done(2);
    cc::thread a([&] {
      parts[0] = 1;
      done.count_down();
    });
    cc::thread b([&] {
      parts[1] = 2;
      done.count_down();
    });
    done.wait();
    if (parts[0].load() + parts[1].load() != 3) throw std::logic_error("latch");
    a.join();
    b.join();
  }));
  expect_held(explore("barrier", [] {
    std::vector<cc::var<int>> cells(2);
    cc::barrier<> sync(2);
    auto phase = [&](int me) {
      cells[static_cast<std::size_t>(me)] = me + 1;
      sync.arrive_and_wait();
      (void)cells[static_cast<std::size_t>(1 - me)].load();  // the other's, after the phase
    };
    cc::thread a(phase, 0), b(phase, 1);
    a.join();
    b.join();
  }));
  expect_held(explore("call_once", [] {
    cc::var<int> config(0, "config");
    cc::once_flag once;
    auto use = [&] {
      cc::call_once(once, [&] { config = 5; });
      if (config.load() != 5) throw std::logic_error("call_once");
    };
    cc::thread a(use), b(use);
    a.join();
    b.join();
  }));
  expect_held(explore("condition_variable", [] {
    cc::var<int> item(0, "item");
    cc::var<bool> full(false, "full");
    cc::mutex m;
    cc::condition_variable cv;
    cc::thread producer([&] {
      cc::lock_guard<cc::mutex> lk(m);
      item = 3;
      full = true;
      cv.notify_one();
    });
    {
      cc::unique_lock<cc::mutex> lk(m);
      cv.wait(lk, [&] { return full.load(); });
      if (item.load() != 3) throw std::logic_error("condition_variable");
    }
    producer.join();
  }));
  // A notify is no synchronisation by itself: the flag set without the lock races.
  expect_race(explore("flag_outside_the_lock", [] {
                cc::var<bool> full(false, "full");
                cc::mutex m;
                cc::condition_variable cv;
                cc::thread producer([&] {
                  full = true;  // the bug: not under m
                  cv.notify_one();
                });
                {
                  cc::unique_lock<cc::mutex> lk(m);
                  cv.wait(lk, [&] { return full.load(); });
                }
                producer.join();
              }),
              "full");
}

BOOST_AUTO_TEST_CASE(vars_are_values_in_arrays_and_containers) {
  expect_held(explore("containers", [] {
    std::vector<cc::var<long>> v(3);
    v.emplace_back(5);
    cc::var<long> copy = v[3];
    copy *= 2;
    copy -= 1;
    ++v[0];
    v[1]--;
    v[2] |= 6;
    if (v[0].load() != 1 || v[1].load() != -1 || v[2].load() != 6 || copy.load() != 9) {
      throw std::logic_error("arithmetic");
    }
  }));
}

BOOST_AUTO_TEST_CASE(a_race_on_a_containers_element_names_the_programs_first_use_of_it) {
  // The vector constructs its elements inside the standard library, so their
  // creation line is the library's; the report adds where the program first
  // touched the element.
  static int a_line = 0;
  const lt::explore_result r = explore("container_race", [] {
    std::vector<cc::var<int>> cells(2);
    a_line = __LINE__ + 1;
    cc::thread a([&] { cells[1] = 1; });
    cc::thread b([&] { cells[1] = 2; });
    a.join();
    b.join();
  });
  const std::string msg = first_message(r);
  BOOST_TEST(contains(msg, "data race on var created by the standard library ("), msg);
  BOOST_TEST(contains(msg, ": a container's element?), first used at "), msg);
  BOOST_TEST_MESSAGE(msg);
  // The first use is one of the two writes' lines (whichever thread ran first).
  // The site runs to the end of its line whatever the checkout's path length.
  const std::size_t at = msg.find("first used at ");
  BOOST_TEST_REQUIRE(at != std::string::npos, msg);
  const std::string first = msg.substr(at, msg.find(": ", at + 14) - at);
  BOOST_TEST((first.ends_with("test_var.cpp:" + std::to_string(a_line)) ||
              first.ends_with("test_var.cpp:" + std::to_string(a_line + 1))), first);
  BOOST_TEST(!contains(msg, "/include/c++/"), msg);  // the header's name only
}

BOOST_AUTO_TEST_CASE(the_runtime_api_orders_what_its_channels_and_mutexes_pass) {
  // rt.spawn tasks on their own cores; a channel's send happens before the
  // receive that takes the value, a sim::mutex's unlock before the next lock.
  auto program = [](bool ordered) {
    return [ordered](sim::runtime& rt) {
      cc::var<int> shared(0, "shared");
      auto [tx, rx] = sim::channel<int>::bounded(rt, 1);
      sim::mutex m(rt);
      auto h = rt.spawn_on(rt.exec().free_core(), "writer", [&, tx = std::move(tx)]() mutable {
        m.lock();
        shared = 1;
        m.unlock();
        (void)tx.send(1);
      });
      if (ordered) (void)rx.recv();
      m.lock();
      (void)shared.load();
      m.unlock();
      shared = 2;  // after the receive: ordered; without it, a race with the writer
      h.join();
    };
  };
  expect_held(explore_rt("channel_orders", program(true)));
  expect_race(explore_rt("no_receive", program(false)), "shared");
  // A waiter woken by the unlock it waited for (its lock began before the
  // writer's section): ordered after the writer by the wake-up.
  expect_held(explore_rt("contended_mutex", [](sim::runtime& rt) {
    cc::var<int> shared(0, "shared");
    sim::mutex m(rt);
    auto h = rt.spawn_on(rt.exec().free_core(), "writer", [&] {
      m.lock();
      rt.sleep_for(1'000'000);
      shared = 1;
      m.unlock();
    });
    rt.sleep_for(500'000);  // the writer holds m by now
    m.lock();
    if (shared.load() != 1) throw std::logic_error("the lock was taken before the writer released it");
    m.unlock();
    h.join();
  }));
}

BOOST_AUTO_TEST_CASE(a_deadlock_lists_each_thread_s_last_operations) {
  const lt::explore_result r = explore("lock_order", [] {
    cc::mutex a, b;
    auto one = [&](cc::mutex& first, cc::mutex& second) {
      cc::lock_guard<cc::mutex> g1(first);
      cc::this_thread::yield();
      cc::lock_guard<cc::mutex> g2(second);
    };
    cc::thread t1(one, std::ref(a), std::ref(b)), t2(one, std::ref(b), std::ref(a));
    t1.join();
    t2.join();
  });
  const std::string msg = first_message(r);
  BOOST_TEST_MESSAGE(msg);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  BOOST_TEST(contains(msg, "'thread' last did:\n    mutex.lock at "));
  BOOST_TEST(contains(msg, "this_thread.yield at "));
}
