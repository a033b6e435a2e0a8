// A fixed amount of simulator work, for callgrind instruction counts (exactly
// repeatable here, unlike wall time): `sim_step_fixed FIBERS YIELDS` runs
// FIBERS fibers that each yield YIELDS times under the seeded random strategy
// with recording off, or with `sim_step_fixed FIBERS YIELDS hash|full` the
// decisions recorded and the trace hashed (or also kept). The difference between two runs at different YIELDS,
// divided by the extra steps, is the instruction cost of one step.
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "sim/runtime.hpp"

int main(int argc, char** argv) {
  using namespace lockstep::sim;
  const int fibers = argc > 1 ? std::atoi(argv[1]) : 64;
  const int yields = argc > 2 ? std::atoi(argv[2]) : 10000;
  const std::string_view mode = argc > 3 ? argv[3] : "off";
  run_config cfg;
  cfg.seed = 42;
  cfg.trace = mode == "full" ? trace_mode::full : mode == "hash" ? trace_mode::hash : trace_mode::off;
  cfg.record_decisions = mode != "off";
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
