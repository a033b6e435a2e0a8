// Linearizability checking under exploration: small concurrent programs of
// calls are generated (2 or 3 threads, 1 to 3 calls each, smallest first),
// each is explored over many schedules with lockstep::sim_std threads, and
// every history a run produces is checked against the sequential model
// (linearizability.hpp). The first program with a non-linearizable history
// is the smallest one that has one; its history is reported as a table of
// threads by calls with their results, and its record replays it.
//
//   lin::spec<my_queue, std::deque<int>> s;  s.operations = {...};
//   const lin::check_result r = lin::check("queue", s);
//   if (!r.linearizable) std::cout << r.report;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../sim/prng.hpp"
#include "../sim/std.hpp"
#include "explore.hpp"
#include "linearizability.hpp"

namespace lockstep::testing::lin {

/// Each thread's calls, in order.
using program = std::vector<std::vector<call>>;

struct check_options {
  std::uint32_t max_threads = 3;
  std::uint32_t max_calls = 3;           ///< per thread
  std::uint64_t programs_per_size = 20;  ///< generated programs of each size
  std::uint64_t seed = 1;                ///< the programs' generator
  test_options explore = [] {            ///< how each program is explored
    test_options o;
    o.runs = 100;
    return o;
  }();
};

struct check_result {
  bool linearizable = true;
  std::uint64_t programs = 0;  ///< programs explored
  program smallest;            ///< the failing program, when one failed
  std::string report;          ///< what failed: the program's name, the table, the record
  std::vector<found_failure> failures;
};

/// The program `index` of size threads x calls from `seed`: the same on
/// every machine (lockstep's own generator), so a name regenerates it.
template <class Impl, class Model>
program generate(const spec<Impl, Model>& s, std::uint64_t seed, std::uint32_t threads, std::uint32_t calls,
                 std::uint64_t index) {
  sim::prng g(seed * 0x9e3779b97f4a7c15ULL ^ (std::uint64_t{threads} << 48) ^ (std::uint64_t{calls} << 40) ^ index);
  program p(threads);
  const auto span = static_cast<std::uint64_t>(s.max_arg - s.min_arg + 1);
  for (auto& thread : p) {
    for (std::uint32_t i = 0; i < calls; ++i) {
      thread.push_back(call{static_cast<std::size_t>(g.below(s.operations.size())),
                            s.min_arg + static_cast<std::int64_t>(g.below(span))});
    }
  }
  return p;
}

/// The test body that runs `p` against a fresh Impl (default-constructed
/// inside the run, so its lockstep types belong to it) and fails when the
/// history is not linearizable.
/// A program as text, each thread's calls as describe() writes them:
/// "thread 0: push(3) pop() | thread 1: pop()". A property's input
/// (test_options::input): parse_program rebuilds the program from it.
template <class Impl, class Model>
std::string program_text(const spec<Impl, Model>& s, const program& p) {
  std::string out;
  for (std::size_t t = 0; t < p.size(); ++t) {
    out += (t == 0 ? "thread 0:" : " | thread " + std::to_string(t) + ":");
    for (const call& c : p[t]) out += " " + describe(s, c);
  }
  return out;
}

/// program_text's text back to the program; nullopt when it is not one
/// (threads out of order, an operation `s` does not have, a malformed call).
/// A call of an operation without an argument gets arg 0.
template <class Impl, class Model>
std::optional<program> parse_program(const spec<Impl, Model>& s, std::string_view text) {
  program p;
  std::size_t at = 0;
  const auto word = [&]() -> std::string_view {  // the next space-separated word ("" at the end)
    while (at < text.size() && text[at] == ' ') ++at;
    const std::size_t from = at;
    while (at < text.size() && text[at] != ' ') ++at;
    return text.substr(from, at - from);
  };
  for (std::string_view w = word(); !w.empty();) {
    if (w != (p.empty() ? "thread" : "|")) return std::nullopt;
    if (!p.empty() && word() != "thread") return std::nullopt;
    if (word() != std::to_string(p.size()) + ":") return std::nullopt;
    p.emplace_back();
    for (w = word(); !w.empty() && w != "|"; w = word()) {
      const std::size_t open = w.find('(');
      if (open == std::string_view::npos || w.back() != ')') return std::nullopt;
      const std::string_view name = w.substr(0, open), arg = w.substr(open + 1, w.size() - open - 2);
      std::size_t op = 0;
      while (op < s.operations.size() && s.operations[op].name != name) ++op;
      if (op == s.operations.size()) return std::nullopt;
      call c{op, 0};
      if (s.operations[op].takes_arg) {
        const bool negative = !arg.empty() && arg.front() == '-';
        const std::string_view digits = negative ? arg.substr(1) : arg;
        if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
          return std::nullopt;
        }
        for (const char ch : digits) c.arg = c.arg * 10 + (ch - '0');
        if (negative) c.arg = -c.arg;
      } else if (!arg.empty()) {
        return std::nullopt;
      }
      p.back().push_back(c);
    }
  }
  if (p.empty()) return std::nullopt;
  return p;
}

template <class Impl, class Model>
test_body body_for(const spec<Impl, Model>& s, const program& p) {
  return [&s, p](sim::runtime&) {
    Impl impl;
    std::vector<event> history;
    std::uint64_t clock = 0;  // the run's order of events: one OS thread, so a plain counter
    std::vector<sim_std::thread> threads;
    for (std::uint32_t t = 0; t < p.size(); ++t) {
      threads.emplace_back([&, t] {
        for (const call& c : p[t]) {
          event e{t, c, std::string(), ++clock, 0};
          e.result = s.operations[c.op].on_impl(impl, c.arg);
          e.returned = ++clock;
          history.push_back(std::move(e));
        }
      });
    }
    for (auto& t : threads) t.join();
    LOCKSTEP_ASSERT_MSG(linearizable(s, history),
                        "not linearizable: no order of these calls gives their results from the model:\n" +
                            table(s, history, static_cast<std::uint32_t>(p.size())));
  };
}

template <class Impl, class Model>
check_result check(const std::string& name, const spec<Impl, Model>& s, check_options o = {}) {
  // Sizes smallest first (total calls, then threads): 2x1, 3x1, 2x2, 2x3, 3x2, 3x3.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes;
  for (std::uint32_t t = 2; t <= o.max_threads; ++t) {
    for (std::uint32_t k = 1; k <= o.max_calls; ++k) sizes.emplace_back(t, k);
  }
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
    return a.first * a.second != b.first * b.second ? a.first * a.second < b.first * b.second : a.first < b.first;
  });
  check_result r;
  for (const auto& [threads, calls] : sizes) {
    for (std::uint64_t i = 0; i < o.programs_per_size; ++i) {
      const program p = generate(s, o.seed, threads, calls, i);
      // Each program its own test name, so that its record is its own.
      const std::string test =
          name + "-" + std::to_string(threads) + "x" + std::to_string(calls) + "-" + std::to_string(i);
      explore_result e = explore(test, o.explore, body_for(s, p));
      ++r.programs;
      if (e.failures.empty()) continue;
      r.linearizable = false;
      r.smallest = p;
      const found_failure& f = e.failures.front();
      r.report = test + " (program " + std::to_string(i) + " of " + std::to_string(threads) + " threads x " +
                 std::to_string(calls) + " calls, generator seed " + std::to_string(o.seed) + "): " +
                 (f.record.result.failed ? f.record.result.failed->message : std::string()) +
                 "\n  record: " + f.record_path + "\n";
      r.failures = std::move(e.failures);
      return r;
    }
  }
  return r;
}

}  // namespace lockstep::testing::lin
