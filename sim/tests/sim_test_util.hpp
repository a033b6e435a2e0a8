// Helpers shared by the simulator's tests.
#pragma once

#include <string>

#include "sim/runtime.hpp"

namespace lockstep::sim::testing {

inline run_config config(std::uint64_t seed, std::string strategy = "random", std::uint32_t cores = 1) {
  run_config c;
  c.seed = seed;
  c.strategy = std::move(strategy);
  c.cores = cores;
  return c;
}

}  // namespace lockstep::sim::testing
