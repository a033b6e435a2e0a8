// Goal: the linearizability checker accepts exactly the histories some
// real-time-respecting order explains (Wing & Gong's search, key by key),
// and lin::check finds the smallest program whose runs produce a history
// that is not linearizable, prints it as a table, and its record replays.
#define BOOST_TEST_MODULE linearizability
#include <boost/test/unit_test.hpp>

#include <array>
#include <deque>
#include <map>
#include <string>

#include "testing/lin_check.hpp"
#include "testing/tests/scratch_dir.hpp"

namespace lin = lockstep::testing::lin;
namespace lt = lockstep::testing;
namespace cc = lockstep::sim_std;

namespace {

/// A bounded array queue: push reserves a slot, then writes it (two steps).
/// Broken: pop takes a reserved slot before it is written and returns 0, a
/// value nobody pushed. Fixed: pop waits for the write.
template <bool Broken>
class array_queue {
 public:
  std::string push(std::int64_t v) {
    const int i = tail_.fetch_add(1);
    if (i >= static_cast<int>(slots_.size())) return "full";
    slots_[static_cast<std::size_t>(i)].store(static_cast<int>(v));
    return "ok";
  }
  std::string pop() {
    cc::lock_guard<cc::mutex> g(pop_lock_);
    if (head_ >= std::min(tail_.load(), static_cast<int>(slots_.size()))) return "empty";
    int v = slots_[static_cast<std::size_t>(head_)].load();
    while (!Broken && v == 0) {  // reserved, not yet written: wait for it
      cc::this_thread::yield();
      v = slots_[static_cast<std::size_t>(head_)].load();
    }
    ++head_;
    return std::to_string(v);
  }

 private:
  std::array<cc::atomic<int>, 16> slots_{};  // 0: not written yet
  cc::atomic<int> tail_{0};
  cc::mutex pop_lock_;
  int head_ = 0;  // guarded by pop_lock_
};

template <class Queue>
lin::spec<Queue, std::deque<std::int64_t>> queue_spec() {
  lin::spec<Queue, std::deque<std::int64_t>> s;
  s.operations = {
      {"push", true, [](Queue& q, std::int64_t v) { return q.push(v); },
       [](std::deque<std::int64_t>& m, std::int64_t v) {
         m.push_back(v);
         return std::string("ok");
       }},
      {"pop", false, [](Queue& q, std::int64_t) { return q.pop(); },
       [](std::deque<std::int64_t>& m, std::int64_t) {
         if (m.empty()) return std::string("empty");
         const std::int64_t v = m.front();
         m.pop_front();
         return std::to_string(v);
       }},
  };
  return s;
}

struct no_impl {};
using queue_model_spec = lin::spec<no_impl, std::deque<std::int64_t>>;

queue_model_spec model_only() {
  queue_model_spec s;
  s.operations = {
      {"push", true, nullptr,
       [](std::deque<std::int64_t>& m, std::int64_t v) {
         m.push_back(v);
         return std::string("ok");
       }},
      {"pop", false, nullptr,
       [](std::deque<std::int64_t>& m, std::int64_t) {
         if (m.empty()) return std::string("empty");
         const std::int64_t v = m.front();
         m.pop_front();
         return std::to_string(v);
       }},
  };
  return s;
}

lin::event ev(std::uint32_t thread, std::size_t op, std::int64_t arg, std::string result, std::uint64_t inv,
              std::uint64_t ret) {
  return lin::event{thread, lin::call{op, arg}, std::move(result), inv, ret};
}

lin::check_options options(const std::string& name) {
  lin::check_options o;
  o.programs_per_size = 5;
  o.explore.runs = 50;
  o.explore.record_dir = lockstep::testing_scratch::scratch_dir("lockstep-lin-" + name);
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(real_time_order_is_respected) {
  const queue_model_spec s = model_only();
  // push(1) returns before pop() starts: the pop must see 1.
  BOOST_TEST(!lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 2), ev(1, 1, 0, "empty", 3, 4)}));
  BOOST_TEST(lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 2), ev(1, 1, 0, "1", 3, 4)}));
  // Overlapping: either order, so an empty pop is explained by going first.
  BOOST_TEST(lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 3), ev(1, 1, 0, "empty", 2, 4)}));
  // FIFO: two pushes in real-time order come out in that order.
  BOOST_TEST(!lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 2), ev(0, 0, 2, "ok", 3, 4), ev(1, 1, 0, "2", 5, 6)}));
  BOOST_TEST(lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 4), ev(1, 0, 2, "ok", 2, 3), ev(1, 1, 0, "2", 5, 6)}));
  // A value nobody pushed is never explained.
  BOOST_TEST(!lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 3), ev(1, 1, 0, "0", 2, 4)}));
}

BOOST_AUTO_TEST_CASE(keyed_operations_are_checked_key_by_key) {
  // A register per key: put(k) stores k * 10, get(k) reads it.
  using reg = std::map<std::int64_t, std::int64_t>;
  lin::spec<no_impl, reg> s;
  auto key = [](std::int64_t k) { return k; };
  s.operations = {
      {"put", true, nullptr,
       [](reg& m, std::int64_t k) {
         m[k] = k * 10;
         return std::string("ok");
       },
       key},
      {"get", true, nullptr,
       [](reg& m, std::int64_t k) {
         const auto it = m.find(k);
         return it == m.end() ? std::string("none") : std::to_string(it->second);
       },
       key},
  };
  // Key 1 is fine; key 2's get after its put returned saw nothing: not linearizable.
  BOOST_TEST(lin::linearizable(s, {ev(0, 0, 1, "ok", 1, 2), ev(1, 1, 1, "10", 3, 4), ev(1, 1, 2, "none", 5, 6)}));
  BOOST_TEST(!lin::linearizable(s, {ev(0, 0, 2, "ok", 1, 2), ev(1, 1, 1, "none", 3, 4), ev(1, 1, 2, "none", 5, 6)}));
}

BOOST_AUTO_TEST_CASE(a_correct_queue_is_linearizable_in_every_explored_program) {
  const auto s = queue_spec<array_queue<false>>();
  const lin::check_result r = lin::check("fixed_queue", s, options("fixed"));
  BOOST_TEST(r.linearizable, r.report);
  BOOST_TEST(r.programs == 6U * 5U);
}

BOOST_AUTO_TEST_CASE(a_broken_queue_yields_its_smallest_non_linearizable_history_and_replays) {
  const auto s = queue_spec<array_queue<true>>();
  const lin::check_result r = lin::check("broken_queue", s, options("broken"));
  BOOST_TEST_MESSAGE(r.report);
  BOOST_REQUIRE(!r.linearizable);
  // The smallest program that can show it: a push beside a pop, one call each.
  BOOST_TEST(r.smallest.size() == 2U);
  BOOST_TEST(r.smallest[0].size() == 1U);
  BOOST_TEST(r.report.find("not linearizable") != std::string::npos);
  BOOST_TEST(r.report.find("pop() -> 0 [") != std::string::npos);  // the value nobody pushed
  BOOST_TEST(r.report.find("thread 0") != std::string::npos);
  BOOST_TEST(r.report.find("thread 1") != std::string::npos);
  // The program regenerates from its name's numbers, and the record replays it.
  const lt::replay_result again = lt::replay(r.failures.front().record, lin::body_for(s, r.smallest));
  BOOST_TEST(again.reproduced);
}

BOOST_AUTO_TEST_CASE(a_program_as_text_is_rebuilt_from_it) {
  const auto s = queue_spec<array_queue<false>>();
  // Every generated program: its text parses back to the same calls (an
  // operation without an argument comes back with arg 0).
  for (std::uint32_t threads = 1; threads <= 3; ++threads) {
    for (std::uint64_t i = 0; i < 20; ++i) {
      const lin::program p = lin::generate(s, 7, threads, 3, i);
      const std::string text = lin::program_text(s, p);
      const std::optional<lin::program> back = lin::parse_program(s, text);
      BOOST_TEST_CONTEXT(text) {
        BOOST_REQUIRE(back.has_value());
        BOOST_REQUIRE(back->size() == p.size());
        for (std::size_t t = 0; t < p.size(); ++t) {
          BOOST_REQUIRE(back->at(t).size() == p[t].size());
          for (std::size_t k = 0; k < p[t].size(); ++k) {
            BOOST_TEST(back->at(t)[k].op == p[t][k].op);
            BOOST_TEST(back->at(t)[k].arg == (s.operations[p[t][k].op].takes_arg ? p[t][k].arg : 0));
          }
        }
        BOOST_TEST(lin::program_text(s, *back) == text);
      }
    }
  }
  BOOST_TEST(lin::program_text(s, {{{0, 3}, {1, 0}}, {{1, 0}}}) == "thread 0: push(3) pop() | thread 1: pop()");
  for (const char* bad : {"", "thread 1: pop()", "thread 0: pop() | thread 2: pop()", "thread 0: peek()",
                          "thread 0: push()", "thread 0: pop(3)", "thread 0: push(x)", "thread 0 pop()",
                          "thread 0: push(3", "thread 0: pop() thread 1: pop()", "thread 0: push(1234567890123456789)"}) {
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!lin::parse_program(s, bad).has_value()); }
  }
}
