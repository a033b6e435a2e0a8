#include "watchdog.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "sim/executor.hpp"
#include "tools/exit_codes.hpp"

namespace lockstep::testing {

namespace {

// What the handler needs, prepared before it can run (it allocates nothing).
struct watch_state {
  char test[512] = {};
  char rerun[2048] = {};
  std::uint32_t limit_s = 0;
  const sim::executor* last_executor = nullptr;
  std::uint64_t last_steps = 0;
  std::uint64_t last_seed = 0;
  bool seen = false;
  timer_t timer{};
  struct sigaction previous {};
};
watch_state state;

int watch_signal() { return SIGRTMIN + 5; }

// Appends to a fixed buffer; the message is cut rather than allocated.
struct line {
  char buf[4096];
  std::size_t n = 0;
  line& operator<<(const char* s) {
    for (; s != nullptr && *s != '\0' && n + 1 < sizeof buf; ++s) buf[n++] = *s;
    return *this;
  }
  line& operator<<(std::uint64_t v) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0 && n + 1 < sizeof buf) buf[n++] = digits[--k];
    return *this;
  }
};

void on_tick(int) {
  const sim::executor* ex = sim::executor::running();
  if (ex == nullptr) {
    state.seen = false;  // between runs: nothing can be stuck
    return;
  }
  const std::uint64_t steps = ex->steps();
  const std::uint64_t seed = ex->config().seed;
  if (!state.seen || ex != state.last_executor || steps != state.last_steps || seed != state.last_seed) {
    state.seen = true;
    state.last_executor = ex;
    state.last_steps = steps;
    state.last_seed = seed;
    return;
  }
  // No step for a whole period: report and leave (a hang has no other way out).
  line m;
  m << "lockstep: " << state.test << ": ";
  if (ex->in_fiber()) {
    const sim::fiber& f = const_cast<sim::executor*>(ex)->current();
    m << "fiber #" << static_cast<std::uint64_t>(f.id) << " '" << f.name_text() << "'";
  } else {
    m << "the simulation";
  }
  m << " ran " << static_cast<std::uint64_t>(state.limit_s)
    << " s of wall-clock time without a lockstep operation: a real blocking call in code under test "
       "(a std::mutex, a sleep, I/O) or a loop that reaches no lockstep operation?";
  if (ex->in_fiber()) {
    const sim::fiber& f = const_cast<sim::executor*>(ex)->current();
    const sim::fiber::operation* op = f.last_operation();
    if (op != nullptr && op->file != nullptr) {
      m << " Its last lockstep operation: " << op->name << " at " << op->file << ":"
        << static_cast<std::uint64_t>(op->line) << ".";
    } else {
      m << " It has made no sim_std operation yet.";
    }
  }
  m << " Seed " << seed << ", strategy " << ex->config().strategy.c_str() << ", step " << steps
    << ". Rerun: LOCKSTEP_SEEDS=" << seed << ".." << seed << " LOCKSTEP_STRATEGIES=" << ex->config().strategy.c_str();
  // What else makes the run that seed's: the settings that change its decisions.
  if (ex->config().seq_cst_only) m << " LOCKSTEP_SEQ_CST_ONLY=1";
  if (ex->config().timer_ties) m << " LOCKSTEP_TIMER_TIES=1";
  if (ex->config().timer_jitter_ns > 0) {
    m << " LOCKSTEP_TIMER_JITTER=" << static_cast<std::uint64_t>(ex->config().timer_jitter_ns);
  }
  m << " " << state.rerun << "\n";
  const ssize_t ignored = ::write(STDERR_FILENO, m.buf, m.n);
  (void)ignored;
  ::_exit(cli::exit_liveness);
}

void copy(char* to, std::size_t size, const std::string& from) {
  const std::size_t n = from.size() < size - 1 ? from.size() : size - 1;
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

}  // namespace

hang_watchdog::hang_watchdog(const std::string& test, const std::string& rerun, double limit_s) {
  if (limit_s <= 0) return;
  copy(state.test, sizeof state.test, test);
  copy(state.rerun, sizeof state.rerun, rerun);
  state.limit_s = static_cast<std::uint32_t>(limit_s < 1 ? 1 : limit_s);
  state.seen = false;
  struct sigaction action {};
  action.sa_handler = on_tick;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(watch_signal(), &action, &state.previous) != 0) return;
  // Delivered to this thread, the one that runs the simulation.
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = watch_signal();
  event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &event, &state.timer) != 0) {
    sigaction(watch_signal(), &state.previous, nullptr);
    return;
  }
  itimerspec period{};
  period.it_interval.tv_sec = state.limit_s;
  period.it_value.tv_sec = state.limit_s;
  timer_settime(state.timer, 0, &period, nullptr);
  armed_ = true;
}

hang_watchdog::~hang_watchdog() {
  if (!armed_) return;
  timer_delete(state.timer);
  sigaction(watch_signal(), &state.previous, nullptr);
}

}  // namespace lockstep::testing
