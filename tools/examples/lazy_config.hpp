// A lazily built, shared configuration: the first caller builds it, the
// others wait and read the same one. Written against std's names through the
// alias `cc` (std in production, lockstep::sim_std in tests). With
// EXAMPLE_PLANTED_BUG=1 it is the classic broken double-checked lock: the
// flag is checked without the mutex and set before the value is built, so a
// second caller can read a configuration that is not built yet.
#pragma once

#ifndef EXAMPLE_CC
#include <atomic>
#include <mutex>
#define EXAMPLE_CC std
#endif

namespace example {

namespace cc = EXAMPLE_CC;

class lazy_config {
 public:
  int port() {
#if EXAMPLE_PLANTED_BUG
    if (!built_.load()) {
      cc::lock_guard<cc::mutex> g(m_);
      if (!built_.load()) {
        built_.store(true);     // the bug: published before it is built
        port_.store(8080);
      }
    }
#else
    cc::call_once(once_, [this] {
      port_.store(8080);
      built_.store(true);
    });
#endif
    return port_.load();
  }

 private:
  cc::once_flag once_;
  cc::mutex m_;
  cc::atomic<bool> built_{false};
  cc::atomic<int> port_{0};
};

}  // namespace example
