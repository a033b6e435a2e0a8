#include "tools/cli/stop_signals.hpp"

#include <signal.h>

#include <atomic>

namespace lockstep::cli::stop_signals {
namespace {
// Lock-free, so a handler may store to it (checked below).
std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) { requested.store(sig, std::memory_order_relaxed); }
}  // namespace

void install() {
  requested.store(0, std::memory_order_relaxed);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a write in progress is not cut short by the first signal.
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int received() { return requested.load(std::memory_order_relaxed); }

const char* name(int sig) { return sig == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace lockstep::cli::stop_signals
