// Goal: probation's two seed tests hold on real threads: an answer reaches a
// waiter parked before it on the other core and one that subscribes after it,
// and a resolution dropped unanswered still answers its waiters and retires
// its slot. As in the seed, every wait is bounded (its BOUND, 5 s; here 30 s,
// as these also run under TSan): a resolution that published with a send that
// drops the value when nobody has subscribed would hang its waiter, and the
// bound turns that hang into a failure that names its cause. Each test also
// runs a second time with the waiter on the answering core.
#define BOOST_TEST_MODULE threads_seed_single_flight
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "engine/single_flight.hpp"
#include "engine/threads/runtime.hpp"
#include "engine/threads/tests/util.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::testing::until_parked;

namespace {

using flight = single_flight<runtime, std::uint8_t, std::string>;

constexpr std::int64_t bound_ns = 30'000'000'000;

/// The seed's message for a waiter that never resolved.
constexpr const char* why_hung =
    "the waiter never resolved: a resolution must publish with send_replace, which stores even when "
    "nobody has subscribed yet";

/// What a bounded wait on a slot saw: `hung` if the bound passed first (the
/// waiter was then cancelled, so the run still ends), else wait()'s result.
struct bounded {
  bool hung = true;
  std::optional<std::string> got;
};

/// Waits on `work` from a fiber on `core`, at most bound_ns; `parked`, if
/// given, runs once that fiber is parked in wait() (so what it does happens
/// after the waiter subscribed).
template <class Then>
bounded wait_bounded(runtime& rt, std::uint32_t core, const std::shared_ptr<flight::slot>& work, Then parked) {
  bounded out;
  runtime::notify done(rt);
  auto waiter = rt.spawn_on(core, "waiter", [&out, &done, work] {
    out.got = work->wait();
    out.hung = false;
    done.notify_one();
  });
  parked(waiter);
  if (!done.notified_until(deadline_after(rt.now(), bound_ns))) waiter.cancel();
  waiter.join();  // orders out's writes before the caller reads them
  return out;
}

bounded wait_bounded(runtime& rt, std::uint32_t core, const std::shared_ptr<flight::slot>& work) {
  return wait_bounded(rt, core, work, [](const runtime::task&) {});
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_answer_reaches_a_waiter_that_arrived_before_it_and_one_that_arrived_after) {
  for (std::uint32_t early_core : {1u, 0u}) {
    BOOST_TEST_CONTEXT("the early waiter on core " << early_core << ", the answer from core 0") {
      bool leader = false;
      bounded early, late;
      runtime rt(2);
      rt.run([&] {
        flight f(rt);
        auto j = f.join(1);
        leader = j.leader;
        early = wait_bounded(rt, early_core, j.work, [&](const runtime::task& waiter) {
          // The early waiter has subscribed and parked before the answer exists.
          until_parked(rt, waiter);
          flight::resolution res(f, 1, j.work, "abandoned", "1");
          res.answer("done");
        });
        late = wait_bounded(rt, 1, j.work);
      });
      BOOST_TEST(leader);
      BOOST_TEST(!early.hung, why_hung);
      BOOST_TEST(early.got.value_or("<none>") == "done");
      BOOST_TEST(!late.hung, why_hung);
      BOOST_TEST(late.got.value_or("<none>") == "done",
                 "a waiter that subscribes after the answer reads the answer that is there");
    }
  }
}

BOOST_AUTO_TEST_CASE(an_abandoned_resolution_answers_its_waiters_and_retires_the_slot) {
  for (std::uint32_t waiter_core : {1u, 0u}) {
    BOOST_TEST_CONTEXT("the waiter on core " << waiter_core) {
      bounded got;
      bool first_leads = false, next_leads = false;
      std::uint64_t abandoned = 0;
      std::size_t in_flight_after = 99;
      runtime rt(2);
      rt.run([&] {
        flight f(rt);
        std::optional<flight::joined> j(f.join(1));
        first_leads = j->leader;
        // Dropped on the other core from the waiter, without an answer.
        rt.spawn_on(1 - waiter_core, "worker", [&f, work = j->work] {
            flight::resolution res(f, 1, work, "abandoned", "1");
          }).join();
        got = wait_bounded(rt, waiter_core, j->work);
        j.reset();  // drops the waiter
        in_flight_after = f.in_flight();
        auto again = f.join(1);
        next_leads = again.leader;
        abandoned = f.abandoned_total();
      });
      BOOST_TEST(first_leads);
      BOOST_TEST(!got.hung, why_hung);
      BOOST_TEST(got.got.value_or("<none>") == "abandoned");
      BOOST_TEST(in_flight_after == 0U, "the abandoned slot is retired from the table");
      BOOST_TEST(next_leads, "and the next request starts work of its own");
      BOOST_TEST(abandoned == 1U);
    }
  }
}
