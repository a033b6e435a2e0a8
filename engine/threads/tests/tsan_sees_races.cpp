// Goal: ThreadSanitizer reports a data race between fibers on the two cores,
// run after other fibers have come and gone on each. Built in the TSan build
// only; tsan_sees_races.sh runs it and expects the report. Exiting 0 means
// TSan saw nothing. It caught a tempting speed-up: handing an ended fiber's
// TSan context to the next fiber of its core spares TSan an unmap per fiber
// (whose TLB flushes were 23% of the shard stress test's samples, 122 -> 33 s
// at 1,000,000 items) but let this race through in 4 runs of 40 (0 of 100
// with a context per fiber), so every fiber gets a context of its own.
#include <atomic>

#include "engine/threads/runtime.hpp"

namespace {
int plain = 0;  // written from both cores with no synchronisation
}

int main() {
  lockstep::threads::runtime rt(2);
  std::atomic<int> written{0};
  rt.run([&] {
    // Fibers ended on each core first, as in any real run.
    for (int round = 0; round < 8; ++round) {
      auto a = rt.spawn_on(0, "warm-up", [] {});
      auto b = rt.spawn_on(1, "warm-up", [] {});
      a.join();
      b.join();
    }
    auto first = rt.spawn_on(1, "first writer", [&] {
      plain = 1;
      written.store(1, std::memory_order_relaxed);  // relaxed: no happens-before for TSan
    });
    auto second = rt.spawn_on(0, "second writer", [&] {
      while (written.load(std::memory_order_relaxed) == 0) rt.yield_now();
      plain = 2;
    });
    // The second first: joining the first from this core would order its
    // write before the second's through the wake.
    second.join();
    first.join();
  });
  return plain == 2 ? 0 : 1;
}
