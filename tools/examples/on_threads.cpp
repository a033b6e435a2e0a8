// The work queue and the lazy configuration again, unchanged, on the real
// threads backend: their alias `cc` switched to lockstep::threads_std, they
// run on a threads::runtime's pinned cores (as under the simulator with
// lockstep::sim_std, and in production with std). A plain program: it exits
// 0 when every item arrived once and every reader saw the one configuration.
#include <lockstep/threads_std.hpp>

#include <cstdio>

#define EXAMPLE_CC lockstep::threads_std
#include "lazy_config.hpp"
#include "work_queue.hpp"

namespace cc = lockstep::threads_std;

int main() {
  lockstep::threads::runtime rt(2);
  int sum = 0, ports = 0;
  rt.run([&] {
    for (int round = 0; round < 200; ++round) {
      example::work_queue<int> q(1);
      cc::atomic<int> got{0};
      auto produce = [&](int v) {
        q.push(v);
        q.push(v);
      };
      auto consume = [&] { got += q.pop() + q.pop(); };
      cc::thread p1(produce, 1), p2(produce, 10), c1(consume), c2(consume);
      p1.join();
      p2.join();
      c1.join();
      c2.join();
      sum += got.load();

      example::lazy_config config;
      cc::atomic<int> seen{0};
      auto reader = [&] { seen += config.port() == 8080 ? 1 : 0; };
      cc::thread a(reader), b(reader), c(reader);
      a.join();
      b.join();
      c.join();
      ports += seen.load();
    }
  });
  const bool held = sum == 200 * 22 && ports == 200 * 3;
  std::printf("on_threads: 200 rounds on %u cores: %s\n", rt.cores(), held ? "held" : "FAILED");
  return held ? 0 : 1;
}
