// The threads backend's fiber bodies (engine/unique_function.hpp): up to 64
// bytes inline, in the fiber's record. A body is made by one thread and
// destroyed by another, and with 64,000 single-flight waiters spawned from
// one core and ended on both, a malloc/free pair per body had the two
// threads queue on glibc's arena lock (a futex sleep and wake each time it
// was contended). 64 bytes hold the bench's waiter (seven references and a
// key) and a lane's body.
#pragma once

#include "../unique_function.hpp"

namespace lockstep::threads::detail {

using unique_function = basic_unique_function<64>;

}  // namespace lockstep::threads::detail
