// lockstep trace: one run of a scenario (or the replay of a record) with the
// full trace, written as Chrome trace-event JSON for ui.perfetto.dev and
// chrome://tracing (--format perfetto) or as the trace's own JSON Lines.
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "tools/cli/perfetto.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

namespace {

/// A run's own trace, JSON Lines that start with its "run" event: what a
/// library test writes when replaying with LOCKSTEP_TRACE. Null for anything else.
std::optional<std::string> read_trace_lines(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string first;
  if (!f || !std::getline(f, first) || first.rfind("{\"ev\":\"run\"", 0) != 0) return std::nullopt;
  std::ostringstream all;
  all << first << '\n' << f.rdbuf();
  return all.str();
}

/// The failure a trace's "fail" event names (its kind; the message is not traced).
std::optional<sim::failure> failure_in(const std::string& lines) {
  const std::size_t at = lines.find("{\"ev\":\"fail\"");
  if (at == std::string::npos) return std::nullopt;
  const std::string line = lines.substr(at, lines.find('\n', at) - at);
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return std::nullopt;
  for (int k = 0; k < sim::failure_kind_count; ++k) {
    const auto kind = static_cast<sim::failure_kind>(k);
    if (sim::to_string(kind) == j["kind"].get<std::string>()) return sim::failure{kind, "", 0};
  }
  return std::nullopt;
}

}  // namespace

int cmd_trace(trace_options t) {
  if (t.format != "perfetto" && t.format != "jsonl") {
    throw input_error("--format: expected perfetto or jsonl, found '" + printable(t.format, max_shown_chars) + "'");
  }
  check_output_path("-o", t.out);
  // A run's trace (a library test's, LOCKSTEP_TRACE) is converted as it is.
  if (const std::optional<std::string> lines = read_trace_lines(t.input)) {
    if (t.seed_given || t.strategy_given || t.run.cores_given || t.timers_given) {
      throw input_error(printable(t.input, 200) +
                        ": a run's trace is converted as it is; expected no --seed, --strategy, --cores or timer "
                        "flag with it");
    }
    std::string text = *lines;
    if (t.format == "perfetto") {
      try {
        text = perfetto_json(*lines, {"trace=" + t.input, failure_in(*lines)});
      } catch (const std::runtime_error& e) {
        throw input_error(printable(t.input, 200) + ": " + e.what());
      }
    }
    if (const std::string why = write_output_file(t.out, text); !why.empty()) {
      std::cerr << "lockstep: -o " << printable(t.out, 200) << ": the trace was not written: " << why << "\n";
      return exit_bad_input;
    }
    std::cout << "trace (" << t.format << ") of " << t.input << " written to " << t.out << "\n";
    return exit_held;
  }
  // A record names itself by its first field; anything else must be a scenario file.
  const nlohmann::json doc = read_strict_file(t.input);
  sim::run_result r;
  std::string label;
  if (doc.is_object() && doc.contains("lockstep_failure_record")) {
    if (t.seed_given || t.strategy_given || t.run.cores_given || t.timers_given) {
      throw input_error(printable(t.input, 200) +
                        ": a failure record fixes its seed, strategy, cores and timer choices; expected no --seed, "
                        "--strategy, --cores or timer flag with it");
    }
    const failure_record rec = read_failure_record(t.input);
    (void)prepare_record(rec);  // bad input in the record is refused before anything is printed
    std::cout << "seed=" << rec.config.seed << " scenario=" << rec.scenario_file << " replaying "
              << rec.result.decisions.size() << " decisions recorded with strategy " << rec.config.strategy
              << std::endl;
    r = replay_record(rec, sim::trace_mode::full);
    label = "record=" + rec.path + " scenario=" + rec.scenario_file + " seed=" + std::to_string(rec.config.seed) +
            " strategy=" + rec.config.strategy + " cores=" + std::to_string(rec.config.cores);
  } else {
    run_options& o = t.run;
    o.files = {t.input};
    o.file = t.input;
    resolve(o, true);
    const prepared p = prepare(o);
    auto c = config_of(o, o.seed, sim::trace_mode::full);
    std::cout << "seed=" << o.seed << " scenario=" << p.name << " strategy=" << o.strategy << " cores=" << o.cores
              << timer_choices_text(c) << std::endl;
    c = describe_and_size(p, c);
    r = run_once(p, c);
    crash_report::clear();
    label = run_summary(p, c);
  }
  print_result_line(r);
  const std::string text = t.format == "jsonl" ? r.trace_text : perfetto_json(r.trace_text, {label, r.failed});
  if (const std::string why = write_output_file(t.out, text); !why.empty()) {
    std::cout.flush();
    std::cerr << "lockstep: -o " << printable(t.out, 200) << ": the trace was not written: " << why << "\n";
    return exit_bad_input;
  }
  std::cout << "trace (" << t.format << ") written to " << t.out << "\n";
  if (r.failed) std::cout << "failure: " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  std::cout.flush();
  return r.ok() ? exit_held : exit_code_of(r.failed->kind);
}

}  // namespace lockstep::cli
