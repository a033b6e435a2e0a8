// A fixed amount of simulator work, for callgrind instruction counts (exactly
// repeatable here, unlike wall time): `sim_step_fixed FIBERS YIELDS` runs
// FIBERS fibers that each yield YIELDS times under the seeded random strategy
// with recording off. The difference between two runs at different YIELDS,
// divided by the extra steps, is the instruction cost of one step.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sim/runtime.hpp"

int main(int argc, char** argv) {
  using namespace lockstep::sim;
  const int fibers = argc > 1 ? std::atoi(argv[1]) : 64;
  const int yields = argc > 2 ? std::atoi(argv[2]) : 10000;
  run_config cfg;
  cfg.seed = 42;
  cfg.trace = trace_mode::off;
  cfg.record_decisions = false;
  cfg.max_steps = ~0ULL;
  cfg.stack_bytes = 64 * 1024;
  const run_result r = run(cfg, [&](runtime& rt) {
    std::vector<task> workers;
    for (int i = 0; i < fibers; ++i) {
      workers.push_back(rt.spawn("worker", [&rt, yields] {
        for (int k = 0; k < yields; ++k) rt.yield_now();
      }));
    }
    for (auto& w : workers) w.join();
  });
  std::printf("steps=%llu ok=%d\n", static_cast<unsigned long long>(r.steps), r.ok() ? 1 : 0);
  return r.ok() ? 0 : 1;
}
