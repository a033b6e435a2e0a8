// A strategy's cost per execution, for callgrind A/B (results/strategies.md):
// N runs of a small program (three workers on three simulated cores, each
// bumping an atomic and taking a mutex five times) under one strategy.
//
//   strategy_cost N STRATEGY
//   valgrind --tool=callgrind strategy_cost 200 pct; ... 400 pct
//   per execution: (I(400) - I(200)) / 200
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "sim/runtime.hpp"
#include "sim/sizing_run.hpp"

using namespace lockstep::sim;

namespace {

struct shared_state {
  explicit shared_state(runtime& rt) : counter(rt, 0), m(rt) {}
  atomic<int> counter;
  mutex m;
  int plain = 0;
};

void program(runtime& rt) {
  auto s = std::make_shared<shared_state>(rt);
  std::vector<task> workers;
  for (std::uint32_t w = 0; w < 3; ++w) {
    workers.push_back(rt.spawn_on(w, "worker", [s] {
      for (int i = 0; i < 5; ++i) {
        s->counter.fetch_add(1);
        s->m.lock();
        ++s->plain;
        s->m.unlock();
      }
    }));
  }
  for (auto& t : workers) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::uint64_t n = std::strtoull(argv[1], nullptr, 10);
  std::uint64_t steps = 0;
  for (std::uint64_t seed = 1; seed <= n; ++seed) {
    run_config c;
    c.seed = seed;
    c.strategy = argv[2];
    c.cores = 3;
    c.trace = trace_mode::hash;
    c.options.pct_steps = 100;  // about this program's length: no sizing run
    if (needs_sizing_run(c.strategy, c.options)) steps += run(sizing_run_of(c), program).steps;  // surw's profile
    steps += run(c, program).steps;
  }
  return steps == 0 ? 1 : 0;
}
