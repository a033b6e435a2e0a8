// tools/scenario/draws.hpp — the values a scenario leaves to the seed: a
// duration in [lo, hi] and a key (or request id) below random_below. Every
// driver draws through these, so one file's draws mean the same in each.
#pragma once

#include <cstdint>

#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

/// A fixed value costs no draw: a file that fixes everything draws nothing,
/// and its runs differ only by schedule.
template <class Rt>
std::uint64_t draw(Rt& rt, const duration& d) {
  return d.lo == d.hi ? d.lo : d.lo + rt.random() % (d.hi - d.lo + 1);
}

template <class Rt>
std::uint64_t draw(Rt& rt, const key_spec& k) {
  return k.random_below != 0 ? rt.random() % k.random_below : k.value;
}

}  // namespace lockstep::scenario
