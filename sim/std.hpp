// lockstep::sim_std: the standard's concurrency names, simulated, so that
// code written against std::thread, std::mutex, std::condition_variable,
// std::atomic and the rest runs under lockstep by switching one namespace:
//
//   namespace cc = lockstep::sim_std;   // under test; `namespace cc = std;` in production
//   cc::mutex m;  cc::condition_variable cv;  cc::thread t([&] { ... });
//
// The simulation is found from the running thread (a test body started by
// LOCKSTEP_TEST_CASE, or a thread it starts): objects are created inside it.
// Threads are preempted at every operation of these types (each on a
// simulated core of its own); code they do not touch (a plain int, a real
// std::atomic, a real std::mutex) is invisible to lockstep: plain shared
// memory is checked for data races only through lockstep::var<T>. See
// docs/library.md, "Code written against std::".
#pragma once

#include "std/atomic.hpp"
#include "std/chrono.hpp"
#include "std/condition_variable.hpp"
#include "std/mutex.hpp"
#include "std/semaphore.hpp"
#include "std/shared_mutex.hpp"
#include "std/this_thread.hpp"
#include "std/thread.hpp"
#include "std/var.hpp"
