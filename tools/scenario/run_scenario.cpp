#include "tools/scenario/run_scenario.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "tools/exit_codes.hpp"
#include "tools/scenario/composed_driver.hpp"
#include "tools/scenario/event_log.hpp"
#include "tools/scenario/flights_driver.hpp"
#include "tools/scenario/lanes_driver.hpp"
#include "tools/scenario/shards_driver.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::scenario {

template <class Rt>
void run_scenario(Rt& rt, const scenario& s) {
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
  if (s.expect) {
    refuse("/expect", "no exact expectations with --backend threads (they hold under the simulator's fifo "
                      "schedule only; real threads have no fixed schedule): run this file on the simulator");
  }
  if (s.lanes && s.lanes->canary != lanes_canary::none) {
    refuse("/system/lanes/canary", "no lane-router canary with --backend threads (the canaries are models written "
                                   "for the simulator, tools/scenario/lane_canaries.hpp)");
  }
  if (!s.consumer_contains) {
    refuse("/behaviour/consumer/contain", "true with --backend threads (a consumer panic that escapes its lane "
                                          "ends the process there): run this file on the simulator");
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

void run_threads_scenario(const scenario& s, std::uint32_t cores) {
  threads::runtime_config config;
  config.cores = cores;
  // Exact timers: a file's durations, scaled, are tens of microseconds, and
  // a 1 ms tick would stretch every step, tick and ttl to a millisecond.
  config.timer_resolution_ns = 0;
  threads::runtime rt(config);
  rt.run([&rt, &s] { run_scenario(rt, s); });
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
