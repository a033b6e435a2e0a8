// The simulator's fiber bodies (engine/unique_function.hpp): up to six words
// inline. Every spawn used to cost one allocation and one free for its body
// alone, a measurable share of a small run.
#pragma once

#include "../engine/unique_function.hpp"

namespace lockstep::sim {

using unique_function = basic_unique_function<6 * sizeof(void*)>;

}  // namespace lockstep::sim
