// lockstep::threads_std: the standard's concurrency names on the real
// threads backend (threads::runtime), so that code written against
// std::thread, std::mutex, std::condition_variable, std::atomic and the rest
// runs on lockstep's pinned fiber cores by switching one namespace, as it
// runs under the simulator with lockstep::sim_std:
//
//   namespace cc = lockstep::threads_std;  // or lockstep::sim_std, or std
//   threads::runtime rt(4);
//   rt.run([] { cc::mutex m; cc::thread t([&] { ... }); t.join(); });
//
// The runtime is found from the running fiber. A blocking call parks the
// fiber, not its OS thread, so the core's other fibers go on running: this
// is why code on this backend must use these names and not std's (a real
// std::mutex or std::condition_variable held across a park stalls a core;
// the runtime's stall watchdog names it). Objects may be created anywhere.
// Starting a thread and waiting on a condition variable need a fiber of the
// runtime; off its fibers, locks, joins, atomics' waits, yields and sleeps
// fall back to the calling OS thread (spinning with yields, or std's sleep).
// See docs/threads.md, "Code written against std::".
#pragma once

#include "std/atomic.hpp"
#include "std/chrono.hpp"
#include "std/condition_variable.hpp"
#include "std/mutex.hpp"
#include "std/semaphore.hpp"
#include "std/shared_mutex.hpp"
#include "std/thread.hpp"
#include "std/var.hpp"
