// lockstep run FILE...: one seed of each scenario in turn, its result line,
// its trace (--trace) and, on a failure, its record. With --backend threads:
// one run of a scenario file on the real pinned-thread backend, its oracles
// checked, no trace nor record.
#include <chrono>
#include <iostream>

#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/scenario/swarm.hpp"

namespace lockstep::cli {

namespace {

int run_on_threads(run_options& o) {
  scenario::scenario s = scenario::read_scenario_file(o.file);
  if (!o.cores_given) o.cores = s.cores;
  scenario::check_threads_settings(s);
  scenario::check_run_settings(s, "threads", o.cores);  // `expect` is refused above: this checks the cores
  const scenario::scenario scaled = scenario::scaled_durations(s, o.time_scale);
  std::cout << "backend=threads scenario=" << s.source << " cores=" << o.cores << " time_scale=" << o.time_scale
            << "\nnote: a threads run is not byte-for-byte and has no replay: the kernel schedules the threads "
               "(no seed, no strategy), durations are real (each virtual ns of the file takes "
            << o.time_scale << " ns), and a failure leaves no record to replay" << std::endl;
  crash_report::describe("lockstep: crashed running " + s.source + " with --backend threads (no replay: rerun "
                         "it, or explore it on the simulator)\n");
  const auto started = std::chrono::steady_clock::now();
  try {
    // Returns only when every oracle held: a violation ends the process
    // with its exit code (tools/scenario/event_log.hpp: threads_verdict).
    scenario::run_threads_scenario(scaled, o.cores);
  } catch (const std::exception& e) {
    crash_report::clear();
    std::cout << "outcome=exception backend=threads\nFAILED exception: " << printable(e.what(), 300)
              << " [backend threads]\nno failure record: a threads run has no replay" << std::endl;
    return exit_failed;
  }
  crash_report::clear();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  std::cout << "outcome=ok backend=threads wall_time_ms=" << ms.count() << " (every oracle held on this run)"
            << std::endl;
  return exit_held;
}

int run_file(run_options o) {
  const prepared p = prepare(o);
  auto c = config_of(o, o.seed, o.trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  std::cout << "seed=" << o.seed << " scenario=" << p.name << " strategy=" << o.strategy;
  if (c.strategy != o.strategy) std::cout << " (" << c.strategy << " for this seed)";
  std::cout << " cores=" << o.cores << timer_choices_text(c) << std::endl;
  if (p.swarm_document) {
    std::cout << "swarm: " << scenario::swarm::values_text(for_seed(p, o.seed).swarm_values) << std::endl;
  }
  c = describe_and_size(p, c);
  const auto r = run_once(p, c);
  crash_report::clear();
  const bool traced = !o.trace_given || write_trace(o.trace_out, r.trace_text);
  print_result_line(r);
  if (!r.ok()) return report_failure(p, c, r, o.record_out);
  return traced ? exit_held : exit_bad_input;
}

}  // namespace

int cmd_run(run_options o) {
  resolve(o, true);
  const std::vector<std::string> files = expand_files(o.files);
  if (o.backend == "threads") {
    // A violation on threads ends the process (other threads still run
    // fibers that use the failing one's objects), so one file per run.
    if (files.size() != 1) {
      throw input_error("--backend threads: expected one scenario FILE (a violation on threads ends the process), "
                        "found " + std::to_string(files.size()) + " files");
    }
    o.file = files.front();
    return run_on_threads(o);
  }
  require_one_file(files, o.trace_given ? "--trace" : o.record_given ? "--record" : nullptr);
  check_swarm_files(o, files);
  check_every_file(o, files);
  // Every file runs; the exit code is the first file's that did not hold.
  int code = exit_held;
  for (const std::string& f : files) {
    run_options one = o;
    one.file = f;
    const int rc = run_file(one);
    if (code == exit_held) code = rc;
  }
  return code;
}

}  // namespace lockstep::cli
