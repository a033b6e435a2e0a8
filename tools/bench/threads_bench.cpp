// threads_bench: throughput of the engine components on the pinned-thread
// backend, on exactly the workloads of the tokio peer
// (../shared/peers/rust-seeds/src/bin/bench.rs; its NOTES.md says what each
// figure measures), printing JSON lines with the peer's fields so
// tools/bench/threads_vs_tokio.sh can put the two side by side.
//
//   lane_router                 1 producer thread outside the runtime routes N
//                               items round robin over K keys; lanes on a
//                               2-core runtime (placed key % 2); the consumer
//                               does one atomic add; clock: first route .. the
//                               N-th item handled.
//   single_flight_uncontended   N sequential join > resolution > begin_publishing
//                               > answer > drop(resolution) > wait > drop(waiter)
//                               cycles on distinct keys, in one fiber.
//   single_flight_contended     1000 keys x 64 waiter fibers (spread over both
//                               cores, alternately); the driver leads every key and answers
//                               once all have joined; clock: first join .. last
//                               waiter answered.
//   shard_reactor               (no tokio peer) 2 shards, one per core, behind
//                               the router; 2 producer fibers (one per core)
//                               submit N items over K keys; clock: first submit
//                               .. shutdown() returned (every item processed,
//                               every state flushed).
//
// Each figure: one untimed warm-up, then --runs timed runs (default 5); the
// median and every sample are printed, with the share of the machine's CPU
// other processes used during each run (from /proc/stat), as the peer does.
// Usage: threads_bench [--runs N] [--only lane_router|single_flight|shard_reactor|foreign_round_trip] [--items N]
//                      [--keys K] [--ttl off|1] [--sf-place alternate|by_key] [--sf-cores 1|2]
//                      [--producer-cpu 0|1] [--gather-ns NS] [--timer-resolution-ns NS]
//                      [--timeout SECONDS]
// (--only also takes single_flight_uncontended or single_flight_contended
// alone; --only foreign_round_trip measures, alone, what the runtime's gather
// window costs a request from a thread outside it; --items scales every
// workload's item count, default 1000000: smaller for runs under callgrind; --keys and --ttl pick one lane_router figure, so a
// profile holds that workload alone; --sf-place by_key puts every waiter of a
// key on one core, instead of alternating cores waiter by waiter; --sf-cores 1
// runs that figure on one core; --producer-cpu pins the lane router's producer
// thread (the table leaves it to the kernel); --gather-ns sets the runtime's
// foreign_wake_gather_ns (0 turns the gather window off, for an A/B), and
// --timer-resolution-ns its timer_resolution_ns (0: exact timers); a run
// still going after --timeout, 600 s by default, says so on stderr and exits 3).
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>

#include "engine/lanes.hpp"
#include "engine/router.hpp"
#include "engine/shard.hpp"
#include "engine/single_flight.hpp"
#include "engine/threads/runtime.hpp"
#include "tools/bench/cross_core.hpp"

using namespace lockstep;
using lockstep::threads::runtime;
using lockstep::threads::runtime_config;

namespace {

constexpr std::uint32_t worker_threads = 2;
int g_runs = 5;
// Where single_flight_contended puts its waiters: "alternate" (waiter i on
// core i % 2, the default and the table's figure) or "by_key" (every waiter
// of key k on core k % 2, as the lane router places lanes).
std::string g_sf_place = "alternate";
// The cores of single_flight_contended's runtime (--sf-cores 1 shows what the
// second core adds to this workload).
std::uint32_t g_sf_cores = worker_threads;
// The CPU the lane router's producer thread is pinned to, once the runtime's
// threads have pinned themselves (-1: not pinned, as the peer's producer and
// the table's figures). A study knob: where the kernel puts an unpinned
// producer decides whether it shares a CPU with the lanes it feeds.
int g_producer_cpu = -1;

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
}

std::string json_list(const std::vector<double>& xs) {
  std::string s = "[";
  char buf[64];
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.1f", i == 0 ? "" : ",", xs[i]);
    s += buf;
  }
  return s + "]";
}

std::string json_list_u(const std::vector<std::uint64_t>& xs) {
  std::string s = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i == 0 ? "" : ",") + std::to_string(xs[i]);
  return s + "]";
}

// --- contamination: CPU other processes used while a run was timed ---------

struct ticks {
  std::uint64_t busy = 0, total = 0, steal = 0, own = 0;
};

ticks read_ticks() {
  ticks t;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  std::uint64_t f[8] = {};
  stat >> cpu;
  for (auto& x : f) stat >> x;
  for (auto x : f) t.total += x;
  t.busy = t.total - f[3] - f[4];
  t.steal = f[7];
  std::ifstream self("/proc/self/stat");
  std::string line;
  std::getline(self, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 0; i < 13 && rest >> field; ++i) {
    if (i == 11 || i == 12) t.own += std::stoull(field);
  }
  return t;
}

struct meter {
  ticks start = read_ticks();
  std::pair<double, double> stop() const {
    const ticks now = read_ticks();
    const double dt = std::max<double>(1.0, static_cast<double>(now.total - start.total));
    const double foreign = static_cast<double>(now.busy - start.busy) - static_cast<double>(now.own - start.own);
    return {std::max(0.0, foreign / dt), static_cast<double>(now.steal - start.steal) / dt};
  }
};

/// Warm-up, then g_runs timed runs of `run` (which returns seconds); prints
/// nothing, returns the samples and the worst contamination seen.
struct sampled {
  std::vector<double> secs;
  double max_foreign = 0, max_steal = 0;
};
template <class F>
sampled sample(F run) {
  (void)run();
  sampled s;
  for (int i = 0; i < g_runs; ++i) {
    meter m;
    s.secs.push_back(run());
    const auto [foreign, steal] = m.stop();
    s.max_foreign = std::max(s.max_foreign, foreign);
    s.max_steal = std::max(s.max_steal, steal);
  }
  return s;
}

std::string contamination(const sampled& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "\"max_foreign_cpu_share\":%.3f,\"max_steal_share\":%.3f,\"rejected_runs\":0,\"quiet_wait_s\":0.0",
                s.max_foreign, s.max_steal);
  return buf;
}

// --gather-ns: runtime_config::foreign_wake_gather_ns (unset: the default).
std::optional<std::int64_t> g_gather_ns;
// --timer-resolution-ns: runtime_config::timer_resolution_ns (unset: the default).
std::optional<std::int64_t> g_timer_resolution_ns;

runtime_config two_cores() {
  runtime_config cfg;
  cfg.cores = worker_threads;
  cfg.stack_bytes = 64 * 1024;
  if (g_gather_ns) cfg.foreign_wake_gather_ns = *g_gather_ns;
  if (g_timer_resolution_ns) cfg.timer_resolution_ns = *g_timer_resolution_ns;
  return cfg;
}

// --- lane_router ---------------------------------------------------------------

class counting_observer : public lane_observer {
 public:
  void lane_created() override { created.fetch_add(1, std::memory_order_relaxed); }
  void lane_closed() override {
    closed.fetch_add(1, std::memory_order_acq_rel);
    closed.notify_all();
  }
  std::atomic<std::uint64_t> created{0};
  std::atomic<std::uint64_t> closed{0};
};

/// A runtime whose main fiber just waits, so threads outside it can route
/// into it (the peer's producer is the main thread, outside tokio).
class hosted_runtime {
 public:
  hosted_runtime() : rt_(two_cores()), release_(rt_) {
    host_ = std::thread([this] {
      rt_.run([this] {
        started_.store(true);
        started_.notify_all();
        release_.notified();
      });
    });
    started_.wait(false);
  }
  ~hosted_runtime() {
    release_.notify_one();
    host_.join();
  }
  runtime& rt() { return rt_; }

 private:
  runtime rt_;
  runtime::notify release_;
  std::atomic<bool> started_{false};
  std::thread host_;
};

struct lane_sample {
  double secs;
  std::uint64_t lanes_created;
};

lane_sample lane_run(runtime& rt, std::uint64_t keys, std::uint64_t items, std::optional<std::int64_t> ttl_ns) {
  // On a cache line of its own, as the peer's (a separate heap block): both
  // consumers write `handled`, and a neighbour the producer reads on every
  // route (the router sits in this frame) would bounce with it.
  struct alignas(64) sink_t {
    std::atomic<std::uint64_t> handled{0};
    std::atomic<bool> done{false};
  };
  sink_t sink;
  auto& handled = sink.handled;
  auto& done = sink.done;
  auto observer = std::make_shared<counting_observer>();
  lane_router_config<std::uint64_t> cfg;
  cfg.idle_ttl_ns = ttl_ns;
  cfg.observer = observer;
  cfg.place = [](const std::uint64_t& key) { return static_cast<std::uint32_t>(key % worker_threads); };
  double secs = 0;
  {
    lane_router<runtime, std::uint64_t, std::uint64_t> router(
        rt,
        [&](std::uint64_t) {
          if (handled.fetch_add(1, std::memory_order_acq_rel) + 1 == items) {
            done.store(true, std::memory_order_release);
            done.notify_one();
          }
        },
        cfg);
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t key = 0;
    for (std::uint64_t item = 0; item < items; ++item) {
      (void)router.route(key, item);
      if (++key == keys) key = 0;
    }
    done.wait(false, std::memory_order_acquire);
    secs = secs_since(t0);
  }  // untimed teardown: every lane drains and exits before the next run
  for (std::uint64_t c = observer->closed.load(); c != observer->created.load(); c = observer->closed.load()) {
    observer->closed.wait(c);
  }
  return {secs, observer->created.load()};
}

void bench_lane_router(std::uint64_t keys, std::uint64_t items, std::optional<std::int64_t> ttl_ns) {
  hosted_runtime host;
  if (g_producer_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(g_producer_cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
      std::fprintf(stderr, "threads_bench: could not pin the producer to CPU %d\n", g_producer_cpu);
      std::exit(2);
    }
  }
  std::vector<std::uint64_t> lanes;
  bool warm = false;
  sampled s = sample([&] {
    lane_sample r = lane_run(host.rt(), keys, items, ttl_ns);
    if (warm) lanes.push_back(r.lanes_created);
    warm = true;
    return r.secs;
  });
  std::vector<double> rates;
  for (double t : s.secs) rates.push_back(static_cast<double>(items) / t);
  std::printf(
      "{\"bench\":\"lane_router\",\"keys\":%llu,\"items\":%llu,\"idle_ttl_ms\":%s,\"producer_threads\":1,"
      "\"worker_threads\":%u,\"key_order\":\"round_robin\",\"median_items_per_sec\":%.1f,\"median_secs\":%.6f,"
      "\"samples_items_per_sec\":%s,\"lanes_created\":%s,%s}\n",
      static_cast<unsigned long long>(keys), static_cast<unsigned long long>(items), ttl_ns ? "1" : "null",
      worker_threads, median(rates), median(s.secs), json_list(rates).c_str(), json_list_u(lanes).c_str(),
      contamination(s).c_str());
  std::fflush(stdout);
}

// --- foreign_round_trip ----------------------------------------------------------

/// What the gather window costs a request from outside the runtime: a thread
/// outside it sends an item to a fiber on core 1 and spins until the fiber
/// has stored it back, `trips` times, pausing `pause_us` between trips (10:
/// the core is still in its idle spin; 100: it has gone to sleep). Not in the
/// table: tokio has no such figure here.
void bench_foreign_round_trip(std::uint64_t trips, int pause_us) {
  hosted_runtime host;
  runtime& rt = host.rt();
  std::vector<double> us;
  us.reserve(trips);
  {
    auto [tx, rx] = runtime::channel<std::uint64_t>::unbounded(rt);
    struct alignas(64) answer_t {
      std::atomic<std::uint64_t> value{0};
    };
    auto answer = std::make_shared<answer_t>();
    (void)rt.spawn_on(1, "echo", [answer, rx = std::move(rx)]() mutable {
      while (auto v = rx.recv()) answer->value.store(*v, std::memory_order_release);
    });
    for (std::uint64_t i = 1; i <= trips; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)tx.send(i);
      while (answer->value.load(std::memory_order_acquire) != i) {
      }
      us.push_back(secs_since(t0) * 1e6);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(pause_us);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  }  // the sender goes: the echo fiber ends, and the host's run() can return
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) { return us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))]; };
  std::printf(
      "{\"bench\":\"foreign_round_trip\",\"trips\":%llu,\"pause_us\":%d,\"foreign_wake_gather_ns\":%lld,"
      "\"median_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f}\n",
      static_cast<unsigned long long>(trips), pause_us, static_cast<long long>(two_cores().foreign_wake_gather_ns),
      at(0.5), at(0.9), at(0.99));
  std::fflush(stdout);
}

// --- single_flight ----------------------------------------------------------------

using flight_table = single_flight<runtime, std::uint64_t, std::uint64_t>;
constexpr std::uint64_t abandoned = ~std::uint64_t{0};

double sf_uncontended(runtime& rt, std::uint64_t cycles) {
  double secs = 0;
  rt.run([&] {
    flight_table flight(rt);
    std::uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t key = 0; key < cycles; ++key) {
      flight_table::joined j = flight.join(key);
      {
        flight_table::resolution res(flight, key, j.work, abandoned, std::string());
        if (j.work->begin_publishing()) res.answer(key);
      }
      sum += j.work->wait().value_or(0);
    }  // each j (and its waiter) dropped at the end of its iteration
    secs = secs_since(t0);
    if (sum != cycles * (cycles - 1) / 2 || flight.in_flight() != 0) rt.abort("single_flight_uncontended: wrong answers");
  });
  return secs;
}

void bench_sf_uncontended(std::uint64_t cycles) {
  runtime rt(two_cores());  // one runtime per figure, as the peer has
  sampled s = sample([&] { return sf_uncontended(rt, cycles); });
  std::vector<double> rates;
  for (double t : s.secs) rates.push_back(static_cast<double>(cycles) / t);
  const double med = median(rates);
  std::printf(
      "{\"bench\":\"single_flight_uncontended\",\"cycles\":%llu,\"distinct_keys\":true,\"worker_threads\":%u,"
      "\"cycle\":\"join>resolution>begin_publishing>answer>drop(resolution)>wait>drop(waiter)\","
      "\"median_ops_per_sec\":%.1f,\"median_ns_per_op\":%.1f,\"samples_ops_per_sec\":%s,%s}\n",
      static_cast<unsigned long long>(cycles), worker_threads, med, 1e9 / med, json_list(rates).c_str(),
      contamination(s).c_str());
  std::fflush(stdout);
}

struct contended_sample {
  double secs, join_secs, answer_secs;
};

contended_sample sf_contended(runtime& rt, std::uint64_t keys, std::uint64_t per_key) {
  contended_sample out{};
  rt.run([&] {
    flight_table flight(rt);
    const std::uint64_t total = keys * per_key;
    // The waiters' counters on lines of their own, as the peer's (one heap
    // block): every waiter on both cores writes them, and the table sits in
    // this frame beside them.
    struct alignas(64) tally_t {
      explicit tally_t(runtime& r) : joined(r, 0), answered(r, 0), wrong(r, 0), all_joined(r), all_answered(r) {}
      runtime::atomic<std::uint64_t> joined, answered, wrong;
      runtime::notify all_joined, all_answered;
    };  // alignas rounds its size up to whole lines, so no neighbour shares the last one
    tally_t tally(rt);
    // Plain references, not a structured binding: clang before 16 cannot
    // capture a binding in the waiters' lambdas.
    auto& joined = tally.joined;
    auto& answered = tally.answered;
    auto& wrong = tally.wrong;
    auto& all_joined = tally.all_joined;
    auto& all_answered = tally.all_answered;
    std::vector<flight_table::joined> leads;
    std::vector<flight_table::resolution> resolutions;
    leads.reserve(keys);
    resolutions.reserve(keys);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t key = 0; key < keys; ++key) {
      leads.push_back(flight.join(key));
      resolutions.emplace_back(flight, key, leads.back().work, abandoned, std::string());
    }
    std::uint32_t core = 0;
    const bool by_key = g_sf_place == "by_key";
    for (std::uint64_t key = 0; key < keys; ++key) {
      for (std::uint64_t i = 0; i < per_key; ++i) {
        const std::uint32_t on = by_key ? static_cast<std::uint32_t>(key % g_sf_cores) : core;
        (void)rt.spawn_on(on, "waiter", [&, key] {
          flight_table::joined j = flight.join(key);
          if (joined.fetch_add(1) + 1 == total) all_joined.notify_one();
          if (j.work->wait() != std::optional<std::uint64_t>(key + 1)) wrong.fetch_add(1);
          { flight_table::joined gone = std::move(j); }  // drop the waiter before counting the answer
          if (answered.fetch_add(1) + 1 == total) all_answered.notify_one();
        });
        core = (core + 1) % g_sf_cores;
      }
    }
    all_joined.notified();
    const auto t1 = std::chrono::steady_clock::now();
    for (std::uint64_t key = 0; key < keys; ++key) {
      if (leads[key].work->begin_publishing()) resolutions[key].answer(key + 1);
    }
    resolutions.clear();
    leads.clear();
    all_answered.notified();
    const auto t2 = std::chrono::steady_clock::now();
    out.secs = std::chrono::duration<double>(t2 - t0).count();
    out.join_secs = std::chrono::duration<double>(t1 - t0).count();
    out.answer_secs = std::chrono::duration<double>(t2 - t1).count();
    if (wrong.load() != 0 || flight.in_flight() != 0) rt.abort("single_flight_contended: wrong answers");
  });
  return out;
}

void bench_sf_contended(std::uint64_t keys, std::uint64_t per_key) {
  std::vector<contended_sample> all;
  bool warm = false;
  runtime_config cfg = two_cores();
  cfg.cores = g_sf_cores;
  runtime rt(cfg);  // one runtime per figure: its stacks are reused run to run
  sampled s = sample([&] {
    contended_sample c = sf_contended(rt, keys, per_key);
    if (warm) all.push_back(c);
    warm = true;
    return c.secs;
  });
  const double total = static_cast<double>(keys * per_key);
  std::vector<double> rates, join_rates, answer_rates;
  for (const auto& c : all) {
    rates.push_back(total / c.secs);
    join_rates.push_back(total / c.join_secs);
    answer_rates.push_back(total / c.answer_secs);
  }
  std::printf(
      "{\"bench\":\"single_flight_contended\",\"keys\":%llu,\"waiters_per_key\":%llu,\"waiter_tasks\":%llu,"
      "\"leader\":\"driver fiber joins first and answers after all waiters joined\",\"placement\":\"%s\",\"worker_threads\":%u,"
      "\"median_waiter_answers_per_sec\":%.1f,\"samples_waiter_answers_per_sec\":%s,"
      "\"median_join_phase_per_sec\":%.1f,\"median_answer_phase_per_sec\":%.1f,%s}\n",
      static_cast<unsigned long long>(keys), static_cast<unsigned long long>(per_key),
      static_cast<unsigned long long>(keys * per_key), g_sf_place.c_str(), g_sf_cores, median(rates),
      json_list(rates).c_str(), median(join_rates), median(answer_rates), contamination(s).c_str());
  std::fflush(stdout);
}

// --- shard_reactor (no tokio peer) ------------------------------------------------------

struct job {
  using key_type = std::uint64_t;
  using id_type = std::uint64_t;
  std::uint64_t k = 0;
  key_type key() const { return k; }
  class_id cls() const { return 0; }
  std::optional<std::int64_t> ttl_ns() const { return std::nullopt; }
  std::optional<id_type> request_id() const { return std::nullopt; }
};
struct no_error {
  lockstep::fallout fallout() const { return lockstep::fallout::clean; }
};
struct counting_processor {
  using work_type = job;
  using state_type = std::uint64_t;
  using error_type = no_error;
  process_result<std::uint64_t, no_error> process(const std::uint64_t&, std::optional<std::uint64_t> s, job) {
    return disposition<std::uint64_t>::keep(s.value_or(0) + 1);
  }
  void on_error(const std::uint64_t&, const no_error&) {}
  void on_coalesced(const std::uint64_t&, job) {}
  void on_evict(const std::uint64_t&, std::uint64_t) {}
  void on_expired(const std::uint64_t&, job) {}
};

double shard_run(runtime& rt, std::uint64_t keys, std::uint64_t items) {
  double secs = 0;
  std::uint64_t started = 0;
  rt.run([&] {
    shard_config cfg = shard_config::with_budgets({64});
    cfg.check_invariants = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto group = launch_shards<runtime, counting_processor>(
        rt, worker_threads, [](std::size_t) { return counting_processor{}; }, cfg, 1024);
    std::vector<runtime::task> producers;
    for (std::uint32_t p = 0; p < worker_threads; ++p) {
      producers.push_back(rt.spawn_on(p, "producer", [&, p, route = group.route]() mutable {
        for (std::uint64_t n = p; n < items; n += worker_threads) (void)route.submit(job{n % keys});
        route.close();
      }));
    }
    group.shutdown();
    for (auto& t : producers) t.join();
    secs = secs_since(t0);
    for (auto& s : group.stats) started += s->read().counters.started;
  });
  if (started != items) rt.abort("shard_reactor: items lost");
  return secs;
}

void bench_shard_reactor(std::uint64_t keys, std::uint64_t items) {
  runtime rt(two_cores());
  sampled s = sample([&] { return shard_run(rt, keys, items); });
  std::vector<double> rates;
  for (double t : s.secs) rates.push_back(static_cast<double>(items) / t);
  std::printf(
      "{\"bench\":\"shard_reactor\",\"keys\":%llu,\"items\":%llu,\"shards\":%u,\"producer_fibers\":%u,"
      "\"worker_threads\":%u,\"class_budget\":64,\"mailbox_capacity\":1024,\"median_items_per_sec\":%.1f,"
      "\"median_items_per_sec_per_core\":%.1f,\"samples_items_per_sec\":%s,%s}\n",
      static_cast<unsigned long long>(keys), static_cast<unsigned long long>(items), worker_threads,
      worker_threads, worker_threads, median(rates), median(rates) / worker_threads, json_list(rates).c_str(),
      contamination(s).c_str());
  std::fflush(stdout);
}

std::string read_first_line(const char* path, const char* prefix) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (prefix == nullptr || line.rfind(prefix, 0) == 0) {
      const auto colon = line.find(':');
      return prefix == nullptr || colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown";
}

/// Ends the process, with a line on stderr, if the bench outlives `limit`: a
/// hang in the runtime would otherwise hang threads_vs_tokio.sh with it. The
/// figures already printed stay on stdout.
class watchdog {
 public:
  explicit watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!done_changed_.wait_for(lock, limit, [this] { return done_; })) {
            std::fflush(stdout);
            std::fprintf(stderr, "threads_bench: still running after %lld s (--timeout): a hang in the runtime? giving up\n",
                         static_cast<long long>(limit.count()));
            std::_Exit(3);
          }
        }) {}
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() {
    {
      std::lock_guard<std::mutex> hold(mu_);
      done_ = true;
    }
    done_changed_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace

int main(int argc, char** argv) {
  std::string only, ttl_only;
  std::uint64_t items = 1'000'000, keys_only = 0, timeout_s = 600;
  const char* const usage =
      "usage: threads_bench [--runs N] [--only lane_router|single_flight[_uncontended|_contended]|shard_reactor|foreign_round_trip] [--items N] "
      "[--keys K] [--ttl off|1] [--sf-place alternate|by_key] [--sf-cores 1|2] [--producer-cpu 0|1] [--gather-ns NS] [--timer-resolution-ns NS] [--timeout SECONDS, default 600, at most a week]\n";
  // A positive whole number, or a line naming the flag and what it wanted.
  const auto count = [](const std::string& flag, const char* text, std::uint64_t& out) {
    const char* end = text + std::strlen(text);
    const auto [at, err] = std::from_chars(text, end, out);
    if (err != std::errc() || at != end || out == 0) {
      std::fprintf(stderr, "threads_bench: %s expects a whole number above 0, got '%s'\n", flag.c_str(), text);
      return false;
    }
    return true;
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "threads_bench: %s has no value\n%s", flag.c_str(), usage);
      return 2;
    }
    const std::string value = argv[i + 1];
    std::uint64_t n = 0;
    if (flag == "--runs" || flag == "--items" || flag == "--keys" || flag == "--timeout") {
      if (!count(flag, argv[i + 1], n)) return 2;
      // Upper bounds keep a typo from meaning "forever": a --timeout past
      // the range of std::chrono::seconds fired at once, reporting -1 s.
      const std::uint64_t most = flag == "--runs" ? 10000 : flag == "--timeout" ? 604800 : n;
      if (n > most) {
        std::fprintf(stderr, "threads_bench: %s expects at most %llu, got %s\n", flag.c_str(),
                     static_cast<unsigned long long>(most), argv[i + 1]);
        return 2;
      }
      if (flag == "--runs") g_runs = static_cast<int>(n);
      if (flag == "--items") items = n;
      if (flag == "--keys") keys_only = n;
      if (flag == "--timeout") timeout_s = n;
    } else if (flag == "--only" && (value == "lane_router" || value == "single_flight" ||
                                    value == "single_flight_uncontended" || value == "single_flight_contended" ||
                                    value == "shard_reactor" || value == "foreign_round_trip")) {
      only = value;
    } else if (flag == "--ttl" && (value == "off" || value == "1")) {
      ttl_only = value;
    } else if (flag == "--sf-cores" && (value == "1" || value == "2")) {
      g_sf_cores = static_cast<std::uint32_t>(value[0] - '0');
    } else if (flag == "--sf-place" && (value == "alternate" || value == "by_key")) {
      g_sf_place = value;
    } else if (flag == "--producer-cpu" && (value == "0" || value == "1")) {
      g_producer_cpu = value[0] - '0';
    } else if (flag == "--gather-ns" || flag == "--timer-resolution-ns") {
      std::int64_t ns = -1;
      const char* end = value.data() + value.size();
      const auto [at, err] = std::from_chars(value.data(), end, ns);
      if (err != std::errc() || at != end || ns < 0 || ns > 1'000'000'000) {
        std::fprintf(stderr, "threads_bench: %s expects a whole number of ns from 0 to 1000000000, got '%s'\n",
                     flag.c_str(), value.c_str());
        return 2;
      }
      (flag == "--gather-ns" ? g_gather_ns : g_timer_resolution_ns) = ns;
    } else {
      std::fprintf(stderr, "threads_bench: %s %s is not understood\n%s", flag.c_str(), value.c_str(), usage);
      return 2;
    }
  }
  const watchdog guard{std::chrono::seconds(timeout_s)};
  const auto wall = std::chrono::steady_clock::now();
  // Before the figures, while the process is alone (see cross_core.hpp).
  const lockstep::bench::cross_core_costs costs = lockstep::bench::measure_cross_core();
  std::printf(
      "{\"bench\":\"machine\",\"nproc\":%u,\"cpu_model\":\"%s\",\"compiler\":\"%s\",\"backend\":\"lockstep::threads\","
      "\"stack_bytes\":%d,\"runs_per_figure\":%d,\"warmup_runs\":1,\"loadavg_at_start\":\"%s\","
      "\"cross_core_spin_round_trip_ns\":%.0f,\"cross_core_futex_round_trip_ns\":%.0f,\"cross_core_pinned\":%s,"
      "\"foreign_wake_gather_ns\":%lld,\"timer_resolution_ns\":%lld}\n",
      std::thread::hardware_concurrency(), read_first_line("/proc/cpuinfo", "model name").c_str(), __VERSION__,
      64 * 1024, g_runs, read_first_line("/proc/loadavg", nullptr).c_str(), costs.spin_round_trip_ns,
      costs.futex_round_trip_ns, costs.pinned ? "true" : "false",
      static_cast<long long>(two_cores().foreign_wake_gather_ns),
      static_cast<long long>(two_cores().timer_resolution_ns));
  if (only.empty() || only == "lane_router") {
    // The table's three key counts, or the one --keys names (any count).
    std::vector<std::uint64_t> key_counts{1, 64, 4096};
    if (keys_only != 0) key_counts = {keys_only};
    for (std::uint64_t keys : key_counts) {
      if (ttl_only != "1") bench_lane_router(keys, items, std::nullopt);
      if (ttl_only != "off") bench_lane_router(keys, items, 1'000'000);
    }
  }
  if (only.empty() || only == "single_flight" || only == "single_flight_uncontended") bench_sf_uncontended(items);
  if (only.empty() || only == "single_flight" || only == "single_flight_contended") bench_sf_contended(1000, 64);
  if (only.empty() || only == "shard_reactor") bench_shard_reactor(4096, items);
  if (only == "foreign_round_trip") {
    bench_foreign_round_trip(20000, 10);
    bench_foreign_round_trip(20000, 100);
  }
  std::printf("{\"bench\":\"wall\",\"secs\":%.2f}\n", secs_since(wall));
  return 0;
}
