// What a wake between the two CPUs costs on this machine right now, measured
// in a fraction of a second before the figures: a round trip between two
// threads pinned to different CPUs, once spinning on a shared word and once
// sleeping on it with futex wait/wake (what lock_t and an idle scheduler do).
//
// Why the bench prints it: on these VMs the cross-core costs move from one
// machine, and one process run, to the next (the futex round trip was ~10 us
// on one machine and ~90 us on the next), and every lane figure depends on
// them. A table that carries them can be compared with another one.
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace lockstep::bench {

struct cross_core_costs {
  double spin_round_trip_ns = 0;   ///< median of the repetitions
  double futex_round_trip_ns = 0;  ///< median of the repetitions
  bool pinned = false;             ///< both threads were pinned, to CPUs 0 and 1
};

namespace detail {

inline bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
}

inline void futex_wake(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

/// ns per round trip: `trips` times, this thread hands the turn over (word
/// 0 -> 1) and the other hands it back (1 -> 0), each waiting as `sleep` says.
inline double round_trips(int trips, bool sleep, bool& pinned) {
  alignas(64) std::atomic<std::uint32_t> word{0};
  std::atomic<bool> other_pinned{false};
  auto wait_for = [&](std::uint32_t want) {
    for (std::uint32_t seen = word.load(); seen != want; seen = word.load()) {
      if (sleep) futex_wait(word, seen);
    }
  };
  auto hand_over = [&](std::uint32_t to) {
    word.store(to);
    if (sleep) futex_wake(word);
  };
  std::thread other([&] {
    other_pinned.store(pin_to(1));
    for (int i = 0; i < trips; ++i) {
      wait_for(1);
      hand_over(0);
    }
  });
  const bool me_pinned = pin_to(0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < trips; ++i) {
    hand_over(1);
    wait_for(0);
  }
  const auto t1 = std::chrono::steady_clock::now();
  other.join();
  pinned = me_pinned && other_pinned.load();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / trips;
}

inline double median_of(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace detail

/// Five repetitions each: 20,000 spinning round trips, 300 sleeping ones
/// (about 30 ms at 90 us each). Needs two CPUs; with one, both are 0.
inline cross_core_costs measure_cross_core() {
  cross_core_costs out;
  if (std::thread::hardware_concurrency() < 2) return out;
  // The calling thread is pinned to CPU 0 while it measures: what runs after
  // gets back the CPUs it had.
  cpu_set_t before;
  const bool saved = pthread_getaffinity_np(pthread_self(), sizeof before, &before) == 0;
  std::vector<double> spin, futex;
  bool pinned = true;
  for (int rep = 0; rep < 5; ++rep) {
    bool p = false;
    spin.push_back(detail::round_trips(20'000, false, p));
    pinned = pinned && p;
    futex.push_back(detail::round_trips(300, true, p));
    pinned = pinned && p;
  }
  if (saved) pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  out.spin_round_trip_ns = detail::median_of(spin);
  out.futex_round_trip_ns = detail::median_of(futex);
  out.pinned = pinned;
  return out;
}

}  // namespace lockstep::bench
