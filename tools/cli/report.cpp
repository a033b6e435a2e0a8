#include "tools/cli/report.hpp"

#include <filesystem>
#include <iostream>

#include "sim/dfs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

namespace {
std::string invoked_as_ = "lockstep";  // set once by main, before any thread starts
}  // namespace

void set_invoked_as(const std::string& argv0) {
  if (argv0.empty()) return;
  // Quoted only when the shell would split or expand it, so the usual
  // build/tools/lockstep prints as typed.
  invoked_as_ = argv0.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-=,:@%") ==
                        std::string::npos
                    ? argv0
                    : shell_quote(argv0);
}

const std::string& invoked_as() { return invoked_as_; }

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

/// --timer-ties and --timer-jitter as far as --swarm (which draws both from
/// the seed) does not already say them.
std::string timer_flags(const prepared& p, const sim::run_config& c) {
  const swarm_timer_draw drawn = p.swarm_document != nullptr ? swarm_timers(c.seed) : swarm_timer_draw{};
  std::string flags;
  if (c.timer_ties && !drawn.ties) flags += " --timer-ties";
  if (c.timer_jitter_ns != drawn.jitter_ns) flags += " --timer-jitter " + std::to_string(c.timer_jitter_ns);
  return flags;
}

}  // namespace

/// The one command that reruns this configuration (a seed's run is
/// deterministic, so it reproduces a failure or a crash).
std::string rerun_command(const prepared& p, const sim::run_config& c) {
  if (c.options.dfs) {
    // A schedule of a search: no seed picks it, the search reaches it again.
    const sim::dfs_bounds& b = c.options.dfs->bounds();
    const auto bound = [](const std::optional<std::uint32_t>& v) { return v ? std::to_string(*v) : std::string("none"); };
    return invoked_as_ + " explore " + shell_quote(p.name) + " --strategy dfs --first-seed " + std::to_string(c.seed) +
           " --cores " + std::to_string(c.cores) + " --max-steps " + std::to_string(c.max_steps) +
           " --preemption-bound " + bound(b.preemptions) + " --delay-bound " + bound(b.delays) +
           (b.dpor ? " --dpor" : "") + timer_flags(p, c) + " --max-schedules 0";  // the budget last: resume commands replace it
  }
  std::string cmd = invoked_as_ + " run " + shell_quote(p.name);
  cmd += " --seed " + std::to_string(c.seed) + " --strategy " + c.strategy + " --cores " +
         std::to_string(c.cores) + " --max-steps " + std::to_string(c.max_steps);
  if (c.strategy == "pct") {
    cmd += " --pct-depth " + std::to_string(c.options.pct_depth);
    // 0 is "measure it": the rerun measures the same k again.
    if (c.options.pct_steps != 0) cmd += " --pct-steps " + std::to_string(c.options.pct_steps);
  }
  if (p.swarm_document) cmd += " --swarm";  // the seed draws the same values again
  cmd += timer_flags(p, c);
  return cmd;
}

std::string run_summary(const prepared& p, const sim::run_config& c) {
  return "scenario=" + p.name + " seed=" + std::to_string(c.seed) +
         " strategy=" + c.strategy + " cores=" + std::to_string(c.cores) + timer_choices_text(c);
}

std::string timer_choices_text(const sim::run_config& c) {
  std::string s;
  if (c.timer_ties) s += " timer_ties";
  if (c.timer_jitter_ns != 0) s += " timer_jitter_ns=" + std::to_string(c.timer_jitter_ns);
  return s;
}

/// Stores what a crash during the next run prints: the run and its rerun command.
void describe_run(const prepared& p, const sim::run_config& c) {
  crash_report::describe("lockstep: crashed in the run " + run_summary(p, c) + "\nrerun with: " +
                         rerun_command(p, c) + "\n");
}

sim::run_config describe_and_size(const prepared& p, sim::run_config c) {
  if (!sim::needs_sizing_run(c.strategy, c.options)) {
    describe_run(p, c);
    return c;
  }
  const bool pct = c.strategy == "pct";
  const sim::run_config given = c;
  crash_report::describe(std::string("lockstep: crashed in the probe run (strategy random, ") +
                         (pct ? "sizing pct's k" : "profiling surw's fibers") + ") of the run " +
                         run_summary(p, given) + "\nrerun with: " + rerun_command(p, given) + "\n");
  c = with_sizing_run(p, c);
  // The rerun command stays the one without --pct-steps: it runs the probe
  // again first, so a crash that needs what the probe run left behind (state
  // on this thread's reused stacks, say) is reproduced too.
  crash_report::describe("lockstep: crashed in the run " + run_summary(p, given) + ", after its probe run " +
                         (pct ? "measured pct steps k=" + std::to_string(c.options.pct_steps) : "profiled its fibers") +
                         "\nrerun with: " + rerun_command(p, given) + "\n");
  return c;
}

/// Writes the trace; a failed write is reported on stderr and returns false.
bool write_trace(const std::string& path, const std::string& text) {
  const std::string why = write_output_file(path, text);
  if (why.empty()) return true;
  std::cerr << "lockstep: --trace " << printable(path, 200) << ": the trace was not written: " << why << "\n";
  return false;
}

// Writes the record and prints where, with the one command that replays it.
// If the record cannot be written the failure is still printed in full, with
// the command that reruns it, and the run's exit code is kept.
std::string replay_command(const std::string& record_path) {
  return invoked_as_ + " replay " + shell_quote(record_path);
}

int report_failure(const prepared& p, const sim::run_config& c, const sim::run_result& r, std::string path,
                   written_record* out, const std::string& record_dir) {
  std::cout << "FAILED " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  // A swarm file's record holds the scenario as this seed resolved it, so it replays without --swarm.
  const prepared ran = for_seed(p, c.seed);
  failure_record rec{c, r, "", ran.scen->document, p.name, ran.swarm_values};
  // A search's schedule is its decisions, which no seed's strategy draws: it replays as a shrunk one does.
  if (c.strategy == "dfs") rec.config.strategy = "replay";
  if (!ran.swarm_values.is_null()) std::cout << "swarm: " << scenario::swarm::values_text(ran.swarm_values) << "\n";
  std::string no_directory;  // why the record's directory could not be made ("" when it is there)
  if (path.empty()) {
    // Scenario failures collect under results/failures/ (or --record-dir), named after the file.
    path = (std::filesystem::path(record_dir) /
            (std::filesystem::path(p.name).stem().string() + "-" + c.strategy + "-" + std::to_string(c.seed) + ".json"))
               .string();
    std::error_code made;
    std::filesystem::create_directories(record_dir, made);
    if (made) {
      // Said as it is (a read-only folder, a file in the way): the write would only say "No such file or directory".
      no_directory = path + ": the failure record was not written: cannot create its directory " +
                     printable(record_dir, 200) + ": " + made.message();
    }
  }
  try {
    if (!no_directory.empty()) throw std::runtime_error(no_directory);
    write_failure_record(path, rec);
    std::cout << "failure record: " << path << "\n"
              << "replay with: " << replay_command(path) << "\n";
    if (out) *out = {path, replay_command(path)};
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "lockstep: " << e.what() << "\n";
    std::cout << "the failure record was lost; the failing run: " << run_summary(p, c) << "\n"
              << "rerun with: " << rerun_command(p, c) << "\n";
    if (out) *out = {"", rerun_command(p, c)};
  }
  std::cout.flush();
  return exit_code_of(r.failed->kind);
}

int report_unrecorded(const prepared& p, const sim::run_config& c, const sim::run_result& r, const std::string& why,
                      written_record* out) {
  std::cout << "FAILED " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  const prepared ran = for_seed(p, c.seed);
  if (!ran.swarm_values.is_null()) std::cout << "swarm: " << scenario::swarm::values_text(ran.swarm_values) << "\n";
  std::cout << "no failure record (" << why << "); the failing run: " << run_summary(p, c) << "\n"
            << "rerun with: " << rerun_command(p, c) << "\n";
  if (out) *out = {"", rerun_command(p, c)};
  std::cout.flush();
  return exit_code_of(r.failed->kind);
}

void print_result_line(const sim::run_result& r) {
  std::cout << "steps=" << r.steps << " virtual_time_ns=" << r.end_time_ns
            << " decisions=" << r.decisions.size() << " outcome="
            << (r.ok() ? std::string("ok") : std::string(sim::to_string(r.failed->kind)))
            << " trace_hash=" << sim::hash_hex(r.trace_hash) << std::endl;
}

}  // namespace lockstep::cli
