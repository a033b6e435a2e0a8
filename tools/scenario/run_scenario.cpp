#include "tools/scenario/run_scenario.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "tools/exit_codes.hpp"
#include "tools/scenario/composed_driver.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/flights_driver.hpp"
#include "tools/scenario/lanes_driver.hpp"
#include "tools/scenario/run_board.hpp"
#include "tools/scenario/shards_driver.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::scenario {

template <class Rt>
void run_scenario(Rt& rt, const scenario& s) {
  const plant::scope planted(plant_of(s));
  // The reader guarantees one component, or a wiring for several.
  if (s.composed()) {
    run_composed_scenario(rt, s);
  } else if (s.shards) {
    run_shards_scenario(rt, s);
  } else if (s.single_flight) {
    run_flights_scenario(rt, s);
  } else {
    run_lanes_scenario(rt, s);
  }
}

sim::run_result run_scenario(const sim::run_config& config, const scenario& s) {
  const plant::scope planted(plant_of(s));  // for the whole run, teardown included
  sim::run_result r = sim::run(config, [&s](sim::runtime& rt) { run_scenario(rt, s); });
  if (!s.expect_failure) return r;
  if (r.failed && r.failed->kind == sim::failure_kind::replay_divergence) return r;
  const failure_expectation& x = *s.expect_failure;
  const std::string wanted =
      "the run to end in " + x.kind + (x.contains.empty() ? std::string() : " with \"" + x.contains + "\"");
  if (r.failed && sim::to_string(r.failed->kind) == x.kind &&
      r.failed->message.find(x.contains) != std::string::npos) {
    r.failed.reset();  // the failure the file expects: the scenario holds
    return r;
  }
  sim::failure f;
  f.kind = sim::failure_kind::oracle;
  f.step = r.failed ? r.failed->step : r.steps;
  f.message = "oracle 'expect_failure' failed: expected " + wanted + ", but the expected " + x.kind +
              " did not happen: " +
              (r.failed ? "it ended in " + std::string(sim::to_string(r.failed->kind)) + ": " + r.failed->message
                        : std::string("every oracle held"));
  r.failed = f;
  return r;
}

template void run_scenario<sim::runtime>(sim::runtime&, const scenario&);
template void run_scenario<threads::runtime>(threads::runtime&, const scenario&);

void check_threads_settings(const scenario& s) {
  auto refuse = [&](const std::string& pointer, const std::string& expected) {
    throw cli::input_error(s.source + ": " + pointer + ": expected " + expected);
  };
  for (std::size_t a = 0; a < s.actors.size(); ++a) {
    for (std::size_t n = 0; n < s.actors[a].steps.size(); ++n) {
      if (s.actors[a].steps[n].what == step::kind::cancel_lane) {
        refuse("/workload/actors/" + std::to_string(a) + "/steps/" + std::to_string(n) + "/cancel_lane",
               "no cancel_lane step with --backend threads (it cancels a lane's fiber by id, which only the "
               "simulator can): run this file on the simulator");
      }
    }
  }
  if (s.expect) {
    refuse("/expect", "no exact expectations with --backend threads (they hold under the simulator's fifo "
                      "schedule only; real threads have no fixed schedule): run this file on the simulator");
  }
  if (s.single_flight && s.single_flight->canary == flight_canary::send_skips_without_subscribers) {
    refuse("/system/single_flight/canary", "another canary with --backend threads (send_skips_without_subscribers "
                                           "counts subscribers in a plain integer, the simulator's)");
  }
  if (s.lanes && is_consumer_canary(s.lanes->canary)) {
    refuse("/system/lanes/canary", "no consumer canary with --backend threads (the broken consumer wrapper is "
                                   "written for the simulator, tools/scenario/lane_canaries.hpp)");
  }
  if (!s.consumer_contains && !s.consumer_escape_ends_lane) {
    refuse("/behaviour/consumer/contain", "true with --backend threads (a consumer panic that escapes its lane "
                                          "ends the process there, unless escaped_panic is \"ends_lane\"): run "
                                          "this file on the simulator");
  }
  if (s.expect_failure) {
    refuse("/expect_failure", "no expect_failure with --backend threads (a threads run has no record to turn "
                              "round, and its failure ends the process): run this file on the simulator");
  }
  if (s.shards && s.shards->panic_abort) {
    refuse("/system/shards/panic_policy", "panic_policy \"contain\" with --backend threads (\"abort\" ends the "
                                          "process there, as the seed's PanicPolicy::Abort does)");
  }
}

namespace {

// Far below INT64_MAX: a deadline is now() + d, and now() is the machine's
// steady clock, not 0.
constexpr std::uint64_t max_scaled_ns = std::uint64_t{1} << 62;

std::uint64_t scale_ns(std::uint64_t ns, std::uint64_t scale) {
  return ns > max_scaled_ns / scale ? max_scaled_ns : ns * scale;
}
std::int64_t scale_ns(std::int64_t ns, std::uint64_t scale) {
  return ns <= 0 ? ns : static_cast<std::int64_t>(scale_ns(static_cast<std::uint64_t>(ns), scale));
}
void scale_ns(duration& d, std::uint64_t scale) {
  d.lo = scale_ns(d.lo, scale);
  d.hi = scale_ns(d.hi, scale);
}
template <class T>
void scale_ns(std::optional<T>& v, std::uint64_t scale) {
  if (v) *v = scale_ns(*v, scale);
}

}  // namespace

scenario scaled_durations(const scenario& s, std::uint64_t scale) {
  scenario out = s;
  scale_ns(out.consumer_duration, scale);
  scale_ns(out.worker.duration_ns, scale);
  scale_ns(out.processor.duration_ns, scale);
  out.liveness_ns = scale_ns(out.liveness_ns, scale);
  if (out.lanes) scale_ns(out.lanes->idle_ttl_ns, scale);
  if (out.shards) {
    out.shards->evict_after_ns = scale_ns(out.shards->evict_after_ns, scale);
    out.shards->tick_ns = scale_ns(out.shards->tick_ns, scale);
  }
  for (actor& a : out.actors) {
    for (step& st : a.steps) {
      st.gap_ns = scale_ns(st.gap_ns, scale);
      st.sleep_ns = scale_ns(st.sleep_ns, scale);
      scale_ns(st.leave_after_ns, scale);
      scale_ns(st.ttl_ns, scale);
    }
  }
  return out;
}

namespace {

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() : sum;
}
std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::int64_t>::max() : product;
}
std::int64_t as_ns(std::uint64_t ns) {
  return ns > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
             ? std::numeric_limits<std::int64_t>::max()
             : static_cast<std::int64_t>(ns);
}

}  // namespace

std::int64_t run_budget_ns(const scenario& s) {
  std::int64_t longest = 0;
  for (const actor& a : s.actors) {
    std::int64_t own = 0;
    for (const step& st : a.steps) {
      own = saturating_add(own, as_ns(st.sleep_ns));
      if (st.what == step::kind::wait_until) own = saturating_add(own, s.liveness_ns);  // it may wait that long
      if (st.count > 1) own = saturating_add(own, saturating_mul(as_ns(st.gap_ns), as_ns(st.count - 1)));
    }
    longest = std::max(longest, own);
  }
  const std::int64_t phases = (s.lanes ? 2 : 0) + (s.shards ? 1 : 0) + (s.single_flight ? 1 : 0);
  return saturating_add(longest, saturating_mul(s.liveness_ns, phases + 1));
}

void run_threads_scenario(const scenario& s, std::uint32_t cores) {
  const plant::scope planted(plant_of(s));  // the runtime's cores take it from this thread
  threads::runtime_config config;
  config.cores = cores;
  // Exact timers: a file's durations, scaled, are tens of microseconds, and
  // a 1 ms tick would stretch every step, tick and ttl to a millisecond.
  config.timer_resolution_ns = 0;
  threads_board().reset(s);

  // The watchdog: a verdict (a violation ends the process) or the run's end
  // must come within the budget, or the run fails liveness. A plain thread
  // outside the runtime, waiting on a condition variable: the runtime's own
  // timers would stop with the cores a hang may hold.
  const std::int64_t limit = saturating_add(run_budget_ns(s), watchdog_margin_ns);
  std::mutex mu;
  std::condition_variable ended;
  bool over = false;
  std::thread watchdog([&] {
    std::unique_lock hold(mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(std::min<std::int64_t>(
                                                                limit, std::int64_t{1} << 62));
    if (ended.wait_until(hold, deadline, [&] { return over; })) return;
    threads_verdict("liveness", "no verdict " + std::to_string(limit) + "ns after the run started (its budget, " +
                                    std::to_string(limit - watchdog_margin_ns) + "ns: the actors' own sleeps and " +
                                    "one liveness_ns for the workload and for each liveness phase, plus " +
                                    std::to_string(watchdog_margin_ns) + "ns of margin); " +
                                    threads_board().describe(),
                    true);
  });
  struct stop_watchdog {
    std::mutex& mu;
    std::condition_variable& ended;
    bool& over;
    std::thread& t;
    ~stop_watchdog() {
      {
        const std::lock_guard hold(mu);
        over = true;
      }
      ended.notify_one();
      t.join();
    }
  } stop{mu, ended, over, watchdog};
  threads::runtime rt(config);
  rt.run([&rt, &s] { run_scenario(rt, s); });
}

run_board& threads_board() {
  static run_board board;
  return board;
}

void run_board::reset(const scenario& s) {
  const std::lock_guard hold(mu_);
  phase_ = "starting";
  names_.clear();
  doing_.clear();
  for (const actor& a : s.actors) {
    names_.push_back(a.name);
    doing_.push_back("not started");
  }
}

void run_board::at(std::size_t a, std::size_t index, const step& stp) {
  const std::lock_guard hold(mu_);
  if (a >= doing_.size()) return;
  doing_[a] = "in step " + std::to_string(index) + " (" + std::string(name_of(stp.what)) + ")";
}

void run_board::done(std::size_t a) {
  const std::lock_guard hold(mu_);
  if (a < doing_.size()) doing_[a].clear();
}

void run_board::phase(std::string_view what) {
  const std::lock_guard hold(mu_);
  phase_ = what;
}

std::string run_board::describe() const {
  const std::lock_guard hold(mu_);
  std::string out = "phase: " + phase_;
  std::string running;
  for (std::size_t a = 0; a < doing_.size(); ++a) {
    if (doing_[a].empty()) continue;
    running += (running.empty() ? "" : ", ") + std::string("actor '") + names_[a] + "' " + doing_[a];
  }
  return out + "; " + (running.empty() ? std::string("every actor done") : "still running: " + running);
}

void threads_verdict(std::string_view oracle, const std::string& message, bool liveness) {
  const char* kind = liveness ? "liveness" : "oracle";
  std::cout << "outcome=" << kind << " backend=threads\n"
            << "FAILED " << kind << ": oracle '" << oracle << "' failed: " << message << " [backend threads]\n"
            << "no failure record: a threads run is not byte-for-byte and has no replay (explore the file on the "
               "simulator for a schedule that replays)"
            << std::endl;
  std::fflush(stderr);
  // Not exit(): static destructors would run while the scenario's fibers
  // still run on the other threads.
  std::_Exit(liveness ? cli::exit_liveness : cli::exit_failed);
}

}  // namespace lockstep::scenario
