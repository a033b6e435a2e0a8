// tools/cli/report.hpp — what a run prints and writes: the result line, the
// failure record with the command that replays it, the rerun command, the
// crash description stored before each run.
#pragma once

#include <string>

#include "sim/runtime.hpp"
#include "tools/cli/prepared.hpp"

namespace lockstep::cli {

/// The printed commands start with the path this binary was started by
/// (argv[0] as given), so they work as printed from where it was started.
void set_invoked_as(const std::string& argv0);
const std::string& invoked_as();

std::string shell_quote(const std::string& s);

/// `<argv[0]> replay '<record_path>'`.
std::string replay_command(const std::string& record_path);

/// Where report_failure put the record ("" when it was lost) and the command
/// that replays it (or, when lost, reruns the seed).
struct written_record {
  std::string path;
  std::string command;
};

/// The one command that reruns this configuration (a seed's run is
/// deterministic, so it reproduces a failure or a crash).
std::string rerun_command(const prepared& p, const sim::run_config& c);

std::string run_summary(const prepared& p, const sim::run_config& c);

/// " timer_ties timer_jitter_ns=N", the timer choices a run makes (empty when off).
std::string timer_choices_text(const sim::run_config& c);

/// Stores what a crash during the next run prints: the run and its rerun command.
void describe_run(const prepared& p, const sim::run_config& c);

/// describe_run, then PCT's probe run when k is not given (with_sizing_run);
/// a crash after the probe prints the command as given, which probes again.
sim::run_config describe_and_size(const prepared& p, sim::run_config c);

/// Writes the trace; a failed write is reported on stderr and returns false.
bool write_trace(const std::string& path, const std::string& text);

// Writes the record and prints where, with the one command that replays it.
// If the record cannot be written the failure is still printed in full, with
// the command that reruns it, and the run's exit code is kept.
// An empty `path`: <record_dir>/<file's stem>-<strategy>-<seed>.json.
int report_failure(const prepared& p, const sim::run_config& c, const sim::run_result& r, std::string path,
                   written_record* out = nullptr, const std::string& record_dir = "results/failures");

// A failure past explore's --max-records: printed in full, with the command
// that reruns it (and so writes its record), but no record is written.
int report_unrecorded(const prepared& p, const sim::run_config& c, const sim::run_result& r, const std::string& why,
                      written_record* out);

void print_result_line(const sim::run_result& r);

}  // namespace lockstep::cli
