#include "engine/threads/runtime.hpp"

#include "engine/threads/record_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace lockstep::threads {

namespace {

constexpr std::size_t records_kept_after_a_runtime = 1024;
// A record and its reference counts must fit a pooled block, or every spawn
// silently falls back to malloc (record_pool::allocator).
static_assert(sizeof(detail::fiber) + 64 <= detail::record_pool::block_bytes);

// xoshiro256** seeded through splitmix64: fast, and good enough for jitter
// and random starts; one per thread, so no sharing.
struct xoshiro {
  std::uint64_t s[4];
  explicit xoshiro(std::uint64_t seed) {
    for (auto& word : s) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

std::uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

runtime::runtime(const runtime_config& config) : config_(config) {
  // Past a second, neither is a tuning any more: a core would stall in its
  // window, or every timer would wait out a tick that long.
  const auto within_a_second = [](const char* field, std::int64_t ns) {
    if (ns < 0 || ns > 1'000'000'000) {
      throw std::invalid_argument(std::string("lockstep::threads: ") + field +
                                  " must be from 0 to 1000000000 ns, got " + std::to_string(ns));
    }
  };
  within_a_second("foreign_wake_gather_ns", config_.foreign_wake_gather_ns);
  within_a_second("timer_resolution_ns", config_.timer_resolution_ns);
  constexpr std::int64_t an_hour_ns = 3'600'000'000'000;
  if (config_.stall_limit_ns < 0 || config_.stall_limit_ns > an_hour_ns) {
    throw std::invalid_argument("lockstep::threads: stall_limit_ns must be from 0 to 3600000000000 ns, got " +
                                std::to_string(config_.stall_limit_ns));
  }
  if (config_.stall_limit_ns == 0) {
    if (const char* text = std::getenv("LOCKSTEP_STALL_LIMIT_S"); text != nullptr && *text != '\0') {
      char* end = nullptr;
      const double seconds = std::strtod(text, &end);
      if (end == text || *end != '\0' || !(seconds > 0) || seconds > 3600) {
        throw std::invalid_argument(std::string("LOCKSTEP_STALL_LIMIT_S=") + text +
                                    ": expected seconds, a number above 0 and at most 3600");
      }
      config_.stall_limit_ns = static_cast<std::int64_t>(seconds * 1e9);
    }
  }
  std::uint32_t n = config_.cores;
  if (n == 0) n = std::max(1U, std::thread::hardware_concurrency());
  cpus_ = config_.cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (cpus_.empty() && sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpus_.push_back(cpu);
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    schedulers_.push_back(std::make_unique<detail::scheduler>(*this, i, config_.stack_bytes,
                                                                  config_.max_stacks_per_core,
                                                                  config_.foreign_wake_gather_ns,
                                                                  config_.timer_resolution_ns));
  }
}

runtime::~runtime() {
  for (auto& s : schedulers_) s->stop_and_join();
  // Its runs' records are back in the pool, held for the next run as its
  // stacks are; with the runtime gone, keep only a few.
  detail::record_pool::trim(records_kept_after_a_runtime);
}

std::uint64_t runtime::idle_yields() const {
  std::uint64_t n = 0;
  for (const auto& s : schedulers_) n += s->idle_yields();
  return n;
}

std::uint64_t runtime::foreign_gathers() const {
  std::uint64_t n = 0;
  for (const auto& s : schedulers_) n += s->foreign_gathers();
  return n;
}

std::uint32_t runtime::current_core() const {
  const detail::scheduler* s = detail::this_scheduler();
  return s != nullptr && &s->owner() == this ? s->core() : 0;
}

std::uint64_t runtime::current_fiber_id() const {
  const detail::scheduler* s = detail::this_scheduler();
  if (s == nullptr || &s->owner() != this || s->current() == nullptr) return 0;
  return s->current()->id;
}

std::shared_ptr<detail::fiber> runtime::start(std::uint32_t core, std::string name, detail::unique_function body,
                                              bool is_main) {
  if (core >= schedulers_.size()) {
    throw std::out_of_range("spawn on core " + std::to_string(core) + " but the runtime has " +
                            std::to_string(schedulers_.size()) + " cores");
  }
  auto f = std::allocate_shared<detail::fiber>(detail::record_pool::allocator<detail::fiber>(), *this,
                                               *schedulers_[core], std::move(name), std::move(body));
  f->id = last_fiber_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!running_.load()) throw std::logic_error("lockstep::threads: spawn outside runtime::run");
  // One spawned during the teardown is born cancelled (runtime.hpp): its home
  // cancels it when it adopts it, before it runs (scheduler::adopt).
  f->live_self = f;
  live_count_.fetch_add(1);
  if (is_main) main_.store(f.get());  // before it can run, so its end is never missed
  f->home.enqueue(*f);
  return f;
}

void runtime::run_main(detail::unique_function main) {
  if (running_.exchange(true)) throw std::logic_error("lockstep::threads: runtime::run is already running");
  tearing_down_.store(false);
  {
    std::lock_guard<std::mutex> hold(mu_);
    main_done_ = false;
    escaped_ = nullptr;
  }
  // Cores beyond the CPUs wrap around, and a configured list may name a CPU twice.
  std::set<int> distinct;
  for (std::uint32_t i = 0; i < schedulers_.size() && !cpus_.empty(); ++i) distinct.insert(cpus_[i % cpus_.size()]);
  const bool cpus_shared = distinct.size() < schedulers_.size();
  for (std::uint32_t i = 0; i < schedulers_.size(); ++i) {
    std::optional<int> cpu;
    if (config_.pin && !cpus_.empty()) cpu = cpus_[i % cpus_.size()];
    schedulers_[i]->start(cpu, cpus_shared);
  }
  std::shared_ptr<detail::fiber> m = start(0, "main", std::move(main), true);
  {
    std::unique_lock<std::mutex> hold(mu_);
    wait_watched(hold, [&] { return main_done_; });
  }
  m.reset();
  // Each scheduler cancels the fibers it lists; one adopted after its sweep
  // sees tearing_down_ and is cancelled then.
  tearing_down_.store(true);
  for (auto& s : schedulers_) s->cancel_all();
  {
    std::unique_lock<std::mutex> hold(mu_);
    wait_watched(hold, [&] { return live_count_.load() == 0; });
  }
  for (auto& s : schedulers_) s->stop_and_join();
  std::exception_ptr first;
  {
    std::lock_guard<std::mutex> hold(mu_);
    main_.store(nullptr);
    first = std::exchange(escaped_, nullptr);
  }
  running_.store(false);
  if (first) std::rethrow_exception(first);
}

void runtime::wait_watched(std::unique_lock<std::mutex>& hold, const std::function<bool()>& done) {
  const std::int64_t limit = config_.stall_limit_ns;
  if (limit == 0) {
    changed_.wait(hold, done);
    return;
  }
  // Looked at ten times a limit (at least every 100 ms): progress is fibers
  // resumed, on any core; a timed wait pending means the run waits for time.
  const auto look_every = std::chrono::nanoseconds(std::min<std::int64_t>(limit / 10 + 1, 100'000'000));
  const auto progress = [&] {
    std::uint64_t n = 0;
    for (const auto& s : schedulers_) n += s->resumes();
    return n;
  };
  const auto timers_pending = [&] {
    return std::any_of(schedulers_.begin(), schedulers_.end(), [](const auto& s) { return s->timers_pending(); });
  };
  // And per core: one fiber running the whole limit without switching out
  // is reported even while other cores make progress or wait for a timer
  // (a fiber that never reaches an await point, beside a periodic timer).
  struct core_look {
    std::uint64_t resumes = 0;
    std::uint64_t running = 0;
    std::int64_t since = 0;
  };
  std::vector<core_look> cores(schedulers_.size());
  // The index of a core that has run one fiber the whole limit, if any.
  const auto look_at_cores = [&](std::int64_t now) -> std::optional<std::size_t> {
    std::optional<std::size_t> busy;
    for (std::size_t i = 0; i < schedulers_.size(); ++i) {
      const detail::scheduler& s = *schedulers_[i];
      const core_look seen_now{s.resumes(), s.running_fiber(), now};
      core_look& c = cores[i];
      if (seen_now.running == 0 || seen_now.resumes != c.resumes || seen_now.running != c.running) {
        c = seen_now;
      } else if (now - c.since >= limit && !busy) {
        busy = i;
      }
    }
    return busy;
  };
  std::uint64_t seen = 0;
  std::int64_t since = 0;
  const auto start_watching = [&] {
    seen = progress();
    since = detail::steady_now();
    (void)look_at_cores(since);
    for (core_look& c : cores) c.since = since;
  };
  const auto report = [&](const char* head) {
    hold.unlock();
    report_stall(head);
    hold.lock();
    start_watching();  // after a report (a handler may have ended the stall), from scratch
  };
  start_watching();
  char head[256];
  while (!done()) {
    changed_.wait_for(hold, look_every);
    if (done()) return;
    const std::uint64_t now_seen = progress();
    const std::int64_t now = detail::steady_now();
    if (const std::optional<std::size_t> busy = look_at_cores(now)) {
      std::snprintf(head, sizeof head,
                    "lockstep: threads::runtime stalled: fiber #%llu has run on core %zu for %.1f s without "
                    "reaching an await point (a busy loop, a real blocking call?); its live fibers:\n",
                    static_cast<unsigned long long>(cores[*busy].running), *busy,
                    static_cast<double>(now - cores[*busy].since) / 1e9);
      report(head);
      continue;
    }
    if (now_seen != seen || timers_pending()) {
      seen = now_seen;
      since = now;
      continue;
    }
    if (now - since < limit) continue;
    std::snprintf(head, sizeof head,
                  "lockstep: threads::runtime stalled: no fiber resumed for %.1f s and no timed wait pending (a lost "
                  "wake-up, a deadlock, a fiber that never reaches an await point?); its live fibers:\n",
                  static_cast<double>(now - since) / 1e9);
    report(head);
  }
}

void runtime::report_stall(const char* head) {
  std::string report = head;
  for (const auto& s : schedulers_) s->request_report();
  const auto answer_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (const auto& s : schedulers_) {
    if (std::optional<std::string> lines = s->wait_report(answer_by)) {
      report += *lines;
    } else {
      const std::uint64_t id = s->running_fiber();
      report += "  core " + std::to_string(s->core()) + ": did not answer within a second: " +
                (id != 0 ? "fiber #" + std::to_string(id) : std::string("its thread")) +
                " runs without reaching an await point\n";
    }
  }
  if (config_.on_stall) {
    config_.on_stall(report);
    return;
  }
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  constexpr int exit_liveness = 3;  // tools/exit_codes.hpp (engine/threads/tests pins the two together)
  std::_Exit(exit_liveness);
}

void runtime::fiber_ended(detail::fiber& f) {
  std::shared_ptr<detail::fiber> last = std::move(f.live_self);  // released on return
  if (&f == main_.load()) {
    std::lock_guard<std::mutex> hold(mu_);
    main_done_ = true;
    changed_.notify_all();
  }
  // run() waits for exactly these two moments: waking its thread on every
  // fiber's end cost a futex wake and two context switches per fiber. The
  // notify is under mu_, so run() cannot test the count and then miss it.
  if (live_count_.fetch_sub(1) == 1) {
    std::lock_guard<std::mutex> hold(mu_);
    changed_.notify_all();
  }
}

void runtime::record_escape(const std::string& fiber_name, std::exception_ptr e) {
  std::fprintf(stderr, "lockstep: fiber '%s' ended with an uncaught exception\n", fiber_name.c_str());
  std::lock_guard<std::mutex> hold(mu_);
  if (!escaped_) escaped_ = std::move(e);
}

void runtime::record_start_failure(const std::string& fiber_name, const char* why) {
  const std::string msg = "could not start fiber '" + fiber_name + "': " + why + "; it was dropped unrun";
  std::fprintf(stderr, "lockstep: %s\n", msg.c_str());
  std::lock_guard<std::mutex> hold(mu_);
  if (!escaped_) escaped_ = std::make_exception_ptr(std::runtime_error(msg));
}

void runtime::pinning_refused(std::uint32_t core, int cpu, int error) {
  if (pin_warned_.exchange(true)) return;
  std::fprintf(stderr, "lockstep: could not pin core %u to cpu %d (%s); running unpinned\n", core, cpu,
               std::strerror(error));
}

void runtime::sleep_until(std::int64_t t) {
  detail::fiber& self = detail::require_fiber("sleep_until");
  self.wait_what = "sleep_until";
  if (detail::steady_now() >= t) {
    yield_now();  // already due: still an await point that lets others run
    return;
  }
  while (detail::steady_now() < t) {
    detail::suspend(nullptr, t, detail::cancellable);
    detail::check_cancel();
  }
}

void runtime::yield_now() {
  detail::require_fiber("yield_now");
  detail::this_scheduler()->yield();
  detail::check_cancel();
}

std::uint64_t runtime::random() {
  thread_local xoshiro gen(fresh_seed());
  return gen.next();
}

void runtime::abort(std::string_view why) {
  std::fprintf(stderr, "lockstep: abort: %.*s\n", static_cast<int>(why.size()), why.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace lockstep::threads
