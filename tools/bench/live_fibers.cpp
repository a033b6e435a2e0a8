// How many fibers one simulation holds alive at once, and what they cost:
// spawns N fibers that all block on one notify, then wakes them all. Prints
// one Markdown row: fibers, peak RSS, RSS per fiber, the process's memory
// mappings while they are alive (the kernel caps mappings with
// vm.max_map_count; stacks used to cost two each), and wall time.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "sim/runtime.hpp"

namespace {
long mappings() {
  std::ifstream maps("/proc/self/maps");
  long n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}
long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}
}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100'000;
  using namespace lockstep::sim;
  run_config c;
  c.seed = 1;
  c.cores = 1;
  c.trace = trace_mode::off;
  c.record_decisions = false;
  const long rss_before = peak_rss_kib();
  long maps_alive = 0;
  long woke = 0;
  const auto start = std::chrono::steady_clock::now();
  auto r = run(c, [&](runtime& rt) {
    notify go(rt);
    std::vector<task> fibers;
    fibers.reserve(static_cast<std::size_t>(n));
    for (long i = 0; i < n; ++i) {
      fibers.push_back(rt.spawn("waiter", [&] {
        go.notified();
        ++woke;
      }));
    }
    rt.sleep_for(1);  // every waiter runs and blocks
    maps_alive = mappings();
    go.notify_waiters();
    for (auto& t : fibers) t.join();
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok() || woke != n) {
    std::printf("FAILED: %s (woke %ld of %ld)\n", r.failed ? r.failed->message.c_str() : "", woke, n);
    return 1;
  }
  const long rss = peak_rss_kib() - rss_before;
  std::printf("| %ld | %.1f MiB | %.1f KiB | %ld | %.2f s |\n", n, rss / 1024.0, static_cast<double>(rss) / n,
              maps_alive, secs);
  return 0;
}
