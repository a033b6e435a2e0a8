// The array queue's sequential specification for the linearizability
// checker: a std::deque, with the queue's results as text.
#pragma once

#include <deque>
#include <lockstep/testing/lin_check.hpp>
#include <string>

#include "array_queue.hpp"

namespace example {

inline lockstep::testing::lin::spec<array_queue, std::deque<std::int64_t>> queue_spec() {
  lockstep::testing::lin::spec<array_queue, std::deque<std::int64_t>> s;
  s.operations = {
      {"push", true, [](array_queue& q, std::int64_t v) { return q.push(v); },
       [](std::deque<std::int64_t>& m, std::int64_t v) {
         m.push_back(v);
         return std::string("ok");
       }},
      {"pop", false, [](array_queue& q, std::int64_t) { return q.pop(); },
       [](std::deque<std::int64_t>& m, std::int64_t) {
         if (m.empty()) return std::string("empty");
         const std::int64_t v = m.front();
         m.pop_front();
         return std::to_string(v);
       }},
  };
  return s;
}

}  // namespace example
