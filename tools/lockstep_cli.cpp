// The lockstep command line: run simulated programs, explore seeds, replay
// failure records, check determinism.
//
// Exit codes: tools/exit_codes.hpp (the table is in --help and the README).
// Every run prints `seed=` first and its trace hash last; every bad input is
// one line on stderr and exit 2; a crash of the code under test still prints
// the seed and the command that reruns it (tools/crash_report.hpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/failure_record.hpp"
#include "tools/output_file.hpp"
#include "tools/programs.hpp"
#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

// Numbers are taken as text and parsed by parse_u64: CLI11 would accept "-1"
// (wrapping it), " 1" or "0x10" for an unsigned flag.
struct run_options {
  std::string program = "pipeline";
  std::string options_json = "{}";
  std::string seed_text = "1";        // run
  std::string first_seed_text = "1";  // explore, check-determinism
  std::string seeds_text = "100";
  std::string strategy = "random";
  std::string cores_text = "2";
  std::string pct_depth_text = "3";
  std::string pct_steps_text = "0";
  std::string max_steps_text = "10000000";
  std::string trace_out;
  std::string record_out;
  std::string file;  // a scenario file: selects scenario mode
  bool trace_given = false;
  bool record_given = false;
  bool file_given = false;
  bool cores_given = false;
  bool program_given = false;
  bool options_given = false;

  std::uint64_t seed = 1;
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 100;
  std::uint32_t cores = 2;
  std::uint32_t pct_depth = 3;
  std::uint64_t pct_steps = 0;  // 0: measured from a random run of the same program and seed
  std::uint64_t max_steps = 10'000'000;
};

/// Strict decimal: digits only (no sign, space, base prefix), no overflow, in [min, max].
std::uint64_t parse_u64(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max) {
  const std::string expected = flag + ": expected a decimal integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", found '" + printable(text, max_shown_chars) + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) throw input_error(expected);
  std::uint64_t v = 0;
  for (char c : text) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) throw input_error(expected);
    v = v * 10 + digit;
  }
  if (v < min || v > max) throw input_error(expected);
  return v;
}

void resolve(run_options& o, bool with_seed) {
  if (with_seed) {
    o.seed = parse_u64("--seed", o.seed_text, 0, UINT64_MAX);
  } else {
    o.first_seed = parse_u64("--first-seed", o.first_seed_text, 0, UINT64_MAX);
    o.seeds = parse_u64("--seeds", o.seeds_text, 1, std::uint64_t{1} << 40);
    // The last seed is first + seeds - 1: it must not wrap past 2^64 - 1.
    if (o.first_seed > UINT64_MAX - (o.seeds - 1)) {
      throw input_error("--first-seed " + o.first_seed_text + " with --seeds " + o.seeds_text +
                        ": expected a range ending at most at 18446744073709551615, found one past it");
    }
  }
  o.cores = static_cast<std::uint32_t>(parse_u64("--cores", o.cores_text, 1, 64));
  o.pct_depth = static_cast<std::uint32_t>(parse_u64("--pct-depth", o.pct_depth_text, 1, 64));
  o.pct_steps = parse_u64("--pct-steps", o.pct_steps_text, 0, UINT64_MAX);
  o.max_steps = parse_u64("--max-steps", o.max_steps_text, 1, UINT64_MAX);
  if (o.trace_given) check_output_path("--trace", o.trace_out);
  if (o.record_given) check_output_path("--record", o.record_out);
}

void add_run_flags(CLI::App& app, run_options& o, bool with_seed) {
  app.add_option("file", o.file, "a scenario file (JSON, scenarios/README.md); instead of --program");
  app.add_option("--program", o.program, "simulated program (see `lockstep programs`)");
  app.add_option("--options", o.options_json, "the program's options as a JSON object");
  if (with_seed) {
    app.add_option("--seed", o.seed_text, "seed of the run (decimal, 0 to 2^64-1)");
  } else {
    app.add_option("--first-seed", o.first_seed_text, "first seed (decimal)");
    app.add_option("--seeds", o.seeds_text, "how many seeds (1 to 2^40)");
  }
  app.add_option("--strategy", o.strategy, "random | pct | fifo")
      ->check(CLI::IsMember({"random", "pct", "fifo"}));
  app.add_option("--cores", o.cores_text, "simulated cores (1 to 64)");
  app.add_option("--pct-depth", o.pct_depth_text, "PCT bug depth d (d-1 priority change points; 1 to 64)");
  app.add_option("--pct-steps", o.pct_steps_text,
                 "PCT: steps k the change points are drawn from (default 0: the length of a random run "
                 "of the same program and seed, so change points land inside the run)");
  app.add_option("--max-steps", o.max_steps_text, "step budget (a livelock past it; at least 1)");
  app.add_option("--record", o.record_out,
                 "where to write the failure record (default: lockstep-failure-PROGRAM-SEED.json here; for a "
                 "scenario, results/failures/FILE-STRATEGY-SEED.json)");
}

/// What a run runs: a built-in program with its options, or a scenario.
struct prepared {
  const program* prog = nullptr;
  nlohmann::json options;
  std::shared_ptr<const scenario::scenario> scen;
  std::string name;  // the program's name, or the scenario's file
};

// `where` names the source in errors: the CLI flags, or a record file.
struct option_source {
  std::string program = "--program";
  std::string options_file = "--options";
  std::string options_prefix;  // the options' JSON pointer inside that file
};

prepared prepare(const std::string& name, const nlohmann::json& given, const option_source& where) {
  const auto& all = programs();
  auto it = all.find(name);
  if (it == all.end()) {
    std::string names;
    for (const auto& [n, p] : all) names += (names.empty() ? "" : ", ") + n;
    throw input_error(where.program + ": unknown program '" + printable(name, max_shown_chars) +
                      "'; expected one of " + names);
  }
  json_reader reader(where.options_file, given, where.options_prefix);
  if (!given.is_object()) reader.fail("", "a JSON object of program options, found " + shown(given));
  return {&it->second, it->second.normalise(reader), nullptr, name};
}

prepared prepare(const std::string& name, const std::string& options_json) {
  return prepare(name, parse_strict(options_json, "--options"), option_source{});
}

prepared prepare_scenario(scenario::scenario s) {
  prepared p;
  p.name = s.source;
  p.scen = std::make_shared<const scenario::scenario>(std::move(s));
  return p;
}

/// What the flags select: a scenario FILE (whose system.cores is the default
/// for --cores), or --program with --options. Run-time rules are checked here.
prepared prepare(run_options& o) {
  if (!o.file_given) return prepare(o.program, o.options_json);
  if (o.program_given || o.options_given) {
    throw input_error(std::string(o.program_given ? "--program" : "--options") +
                      ": expected either a scenario FILE or --program/--options, found both");
  }
  scenario::scenario s = scenario::read_scenario_file(o.file);
  if (!o.cores_given) o.cores = s.cores;
  scenario::check_run_settings(s, o.strategy, o.cores);
  return prepare_scenario(std::move(s));
}

sim::run_config config_of(const run_options& o, std::uint64_t seed, sim::trace_mode trace) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = o.strategy;
  c.cores = o.cores;
  c.options.pct_depth = o.pct_depth;
  c.options.pct_steps = o.pct_steps;
  c.max_steps = o.max_steps;
  c.trace = trace;
  return c;
}

sim::run_result run_once(const prepared& p, const sim::run_config& c) {
  if (p.scen) return sim::run(c, [&](sim::runtime& rt) { scenario::run_scenario(rt, *p.scen); });
  return sim::run(c, [&](sim::runtime& rt) { p.prog->run(rt, p.options); });
}

// PCT draws its d-1 change points from [1, k]; a k far beyond the run's
// length leaves them all past its end, and PCT degenerates to fixed
// priorities. Unless given, k is the step count of a random run of the same
// program and seed: deterministic, and the right order of magnitude.
sim::run_config with_pct_steps(const prepared& p, sim::run_config c) {
  if (c.strategy != "pct" || c.options.pct_steps != 0) return c;
  sim::run_config probe = c;
  probe.strategy = "random";
  probe.trace = sim::trace_mode::off;
  probe.record_decisions = false;
  const auto r = run_once(p, probe);
  c.options.pct_steps = r.steps == 0 ? 1 : r.steps;
  return c;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The one command that reruns this configuration (a seed's run is
/// deterministic, so it reproduces a failure or a crash).
std::string rerun_command(const prepared& p, const sim::run_config& c) {
  std::string cmd = p.scen ? "lockstep run " + shell_quote(p.name)
                           : "lockstep run --program " + p.name + " --options " + shell_quote(p.options.dump());
  cmd += " --seed " + std::to_string(c.seed) + " --strategy " + c.strategy + " --cores " +
         std::to_string(c.cores) + " --max-steps " + std::to_string(c.max_steps);
  if (c.strategy == "pct") {
    cmd += " --pct-depth " + std::to_string(c.options.pct_depth);
    // 0 is "measure it": the rerun measures the same k again.
    if (c.options.pct_steps != 0) cmd += " --pct-steps " + std::to_string(c.options.pct_steps);
  }
  return cmd;
}

std::string run_summary(const prepared& p, const sim::run_config& c) {
  return (p.scen ? "scenario=" : "program=") + p.name + " seed=" + std::to_string(c.seed) +
         " strategy=" + c.strategy + " cores=" + std::to_string(c.cores);
}

/// Stores what a crash during the next run prints: the run and its rerun command.
void describe_run(const prepared& p, const sim::run_config& c) {
  crash_report::describe("lockstep: crashed in the run " + run_summary(p, c) + "\nrerun with: " +
                         rerun_command(p, c) + "\n");
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
int report_failure(const prepared& p, const sim::run_config& c, const sim::run_result& r, std::string path) {
  std::cout << "FAILED " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  failure_record rec{p.scen ? "" : p.name, p.options, c, r, "", nlohmann::json(), ""};
  if (p.scen) {
    rec.scenario = p.scen->document;
    rec.scenario_file = p.name;
  }
  if (path.empty() && p.scen) {
    // Scenario failures collect under results/failures/, named after the file.
    path = "results/failures/" + std::filesystem::path(p.name).stem().string() + "-" + c.strategy + "-" +
           std::to_string(c.seed) + ".json";
    std::error_code ignored;  // a directory that cannot be made fails the write below, which says so
    std::filesystem::create_directories("results/failures", ignored);
  }
  if (path.empty()) path = "lockstep-failure-" + p.name + "-" + std::to_string(c.seed) + ".json";
  try {
    write_failure_record(path, rec);
    std::cout << "failure record: " << path << "\n"
              << "replay with: lockstep replay " << shell_quote(path) << "\n";
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "lockstep: " << e.what() << "\n";
    std::cout << "the failure record was lost; the failing run: " << run_summary(p, c) << "\n"
              << "rerun with: " << rerun_command(p, c) << "\n";
  }
  std::cout.flush();
  return exit_code_of(r.failed->kind);
}

void print_result_line(const sim::run_result& r) {
  std::cout << "steps=" << r.steps << " virtual_time_ns=" << r.end_time_ns
            << " decisions=" << r.decisions.size() << " outcome="
            << (r.ok() ? std::string("ok") : std::string(sim::to_string(r.failed->kind)))
            << " trace_hash=" << sim::hash_hex(r.trace_hash) << std::endl;
}

int cmd_run(run_options o) {
  resolve(o, true);
  const prepared p = prepare(o);
  auto c = config_of(o, o.seed, o.trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  std::cout << "seed=" << o.seed << (p.scen ? " scenario=" : " program=") << p.name << " strategy=" << o.strategy
            << " cores=" << o.cores << std::endl;
  describe_run(p, c);
  c = with_pct_steps(p, c);
  describe_run(p, c);
  const auto r = run_once(p, c);
  crash_report::clear();
  const bool traced = !o.trace_given || write_trace(o.trace_out, r.trace_text);
  print_result_line(r);
  if (!r.ok()) return report_failure(p, c, r, o.record_out);
  return traced ? exit_held : exit_bad_input;
}

int cmd_explore(run_options o) {
  resolve(o, false);
  const prepared p = prepare(o);
  std::cout << "exploring " << (p.scen ? "scenario=" : "program=") << p.name << " strategy=" << o.strategy << " cores=" << o.cores
            << " seeds=" << o.first_seed << ".." << o.first_seed + (o.seeds - 1) << std::endl;
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t done = 0;
  // Counted, not compared against first+seeds: the range may end at 2^64-1.
  for (std::uint64_t i = 0; i < o.seeds; ++i) {
    const std::uint64_t seed = o.first_seed + i;
    auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    c = with_pct_steps(p, c);
    if (o.strategy == "pct") describe_run(p, c);
    const auto r = run_once(p, c);
    ++done;
    if (!r.ok()) {
      crash_report::clear();
      std::cout << "seed=" << seed << " ";
      print_result_line(r);
      return report_failure(p, c, r, o.record_out);
    }
  }
  crash_report::clear();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "all " << done << " seeds held (" << static_cast<std::uint64_t>(done / (secs > 0 ? secs : 1e-9))
            << " runs/s)" << std::endl;
  return exit_held;
}

/// What a record ran: its program and options, or the scenario it embeds
/// (checked like a file, errors naming the record and /scenario/...).
prepared prepare_record(const failure_record& rec) {
  if (rec.is_scenario()) {
    scenario::scenario s = scenario::read_scenario(rec.scenario, rec.path, "/scenario");
    scenario::check_run_settings(s, rec.config.strategy, rec.config.cores, "/scenario");
    s.source = rec.scenario_file;  // reruns and summaries name the file it came from
    return prepare_scenario(std::move(s));
  }
  option_source where;
  if (!rec.path.empty()) where = {rec.path + ": /program", rec.path, "/options"};
  return prepare(rec.program, rec.options, where);
}

// Runs a record's program or scenario again, following its recorded decisions.
sim::run_result replay_record(const failure_record& rec, sim::trace_mode trace) {
  sim::run_config c = rec.config;
  c.strategy = "replay";
  c.options.decisions = rec.result.decisions;
  c.trace = trace;
  const prepared p = prepare_record(rec);
  crash_report::describe("lockstep: crashed replaying " + rec.path + " (" + run_summary(p, rec.config) +
                         ")\nrerun with: lockstep replay " + shell_quote(rec.path) + "\nor: " +
                         rerun_command(p, rec.config) + "\n");
  auto r = run_once(p, c);
  crash_report::clear();
  return r;
}

/// Whether a replay reproduced the recorded failure: it failed, not by
/// diverging, with the same trace hash, after following exactly the
/// recorded decisions (a run that fails before using them all is not the
/// recorded run).
bool reproduced(const failure_record& rec, const sim::run_result& r) {
  return r.failed && r.failed->kind != sim::failure_kind::replay_divergence &&
         r.trace_hash == rec.result.trace_hash && r.decisions == rec.result.decisions;
}

int cmd_replay(const std::string& path, const std::string& trace_out, bool trace_given) {
  const failure_record rec = read_failure_record(path);
  if (trace_given) check_output_path("--trace", trace_out);
  (void)prepare_record(rec);  // bad input in the record is refused before anything is printed
  std::cout << "seed=" << rec.config.seed << (rec.is_scenario() ? " scenario=" + rec.scenario_file : " program=" + rec.program)
            << " replaying "
            << rec.result.decisions.size() << " decisions recorded with strategy " << rec.config.strategy
            << std::endl;
  const auto r = replay_record(rec, trace_given ? sim::trace_mode::full : sim::trace_mode::hash);
  const bool traced = !trace_given || write_trace(trace_out, r.trace_text);
  print_result_line(r);
  int code = exit_held;
  if (r.ok()) {
    std::cout << "no longer reproduces: the run held (recorded trace hash " << sim::hash_hex(rec.result.trace_hash)
              << ", replay gave " << sim::hash_hex(r.trace_hash) << ")\n";
  } else if (reproduced(rec, r)) {
    std::cout << "reproduced: the same trace hash " << sim::hash_hex(r.trace_hash) << " after all "
              << r.decisions.size() << " recorded decisions\n";
    code = exit_failed;
  } else {
    std::cout << "DIVERGED: recorded trace hash " << sim::hash_hex(rec.result.trace_hash) << " after "
              << rec.result.decisions.size() << " decisions, replay gave " << sim::hash_hex(r.trace_hash)
              << " after " << r.decisions.size() << "\n";
    code = exit_nondeterminism;
  }
  if (r.failed) std::cout << "failure: " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  std::cout.flush();
  return traced ? code : exit_bad_input;
}

int cmd_check_determinism(run_options o) {
  resolve(o, false);
  const prepared p = prepare(o);
  for (std::uint64_t i = 0; i < o.seeds; ++i) {
    const std::uint64_t seed = o.first_seed + i;
    auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    c = with_pct_steps(p, c);
    describe_run(p, c);
    const auto a = run_once(p, c);
    const auto b = run_once(p, c);
    std::cout << "seed=" << seed << " trace_hash=" << sim::hash_hex(a.trace_hash);
    if (a.trace_hash != b.trace_hash || a.decisions != b.decisions) {
      crash_report::clear();
      std::cout << " NONDETERMINISTIC: second run gave " << sim::hash_hex(b.trace_hash) << "\n"
                << "rerun with: " << rerun_command(p, c) << std::endl;
      return exit_nondeterminism;
    }
    std::cout << " (twice)" << std::endl;
  }
  crash_report::clear();
  return exit_held;
}

// The quick start's main job: every program runs clean on a few seeds; then
// each program's canary (a planted bug) is found by exploration, recorded,
// and replayed to the same bytes.
// What the main job explores: every scenario file of the library (sorted by
// name; a file with `expect` runs under fifo only, as its counts are exact
// there), then every built-in program.
struct demo_subject {
  std::string label;
  prepared p;
  std::vector<std::string> strategies;
};

std::vector<std::string> json_files_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  if (ec) throw input_error(dir + ": cannot list the directory: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<demo_subject> demo_subjects(const std::string& library) {
  std::vector<demo_subject> out;
  for (const std::string& file : json_files_in(library)) {
    scenario::scenario s = scenario::read_scenario_file(file);
    std::vector<std::string> strategies = s.expect ? std::vector<std::string>{"fifo"}
                                                   : std::vector<std::string>{"random", "pct"};
    out.push_back({file, prepare_scenario(std::move(s)), std::move(strategies)});
  }
  for (const auto& [name, prog] : programs()) {
    out.push_back({"program " + name, prepare(name, "{}"), {"random", "pct"}});
  }
  return out;
}

/// One row of the main job's table: a subject under one strategy over seeds
/// 1..seeds. A failure is reported (record written, replay command printed)
/// and ends the demo with its exit code.
int demo_row(const demo_subject& d, const std::string& strategy, std::uint64_t seeds, const std::string& record_dir,
             std::uint64_t& total_runs) {
  run_options o;
  o.strategy = strategy;
  o.cores = d.p.scen ? d.p.scen->cores : 2;
  std::set<std::uint64_t> schedules;
  const auto started = std::chrono::steady_clock::now();
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(d.p, c);
    c = with_pct_steps(d.p, c);
    describe_run(d.p, c);
    const auto r = run_once(d.p, c);
    crash_report::clear();
    if (!r.ok()) {
      std::cout << "demo FAILED: " << d.label << " seed=" << seed << " strategy=" << strategy << std::endl;
      const std::string path = record_dir + "/lockstep-demo-failure-" + std::to_string(seed) + ".json";
      return report_failure(d.p, c, r, path);
    }
    schedules.insert(r.trace_hash);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  total_runs += seeds;
  char line[256];
  std::snprintf(line, sizeof line, "%-44s %-8s %6llu %8d %10zu %9.0f", d.label.c_str(), strategy.c_str(),
                static_cast<unsigned long long>(seeds), 0, schedules.size(), static_cast<double>(seeds) / secs);
  std::cout << line << std::endl;
  return exit_held;
}

/// A failure message without the executor's "[seed .., strategy .., ...]" suffix.
std::string headline_of(const std::string& message) { return message.substr(0, message.rfind(" [seed ")); }

/// A planted bug: explored with random seeds until an oracle catches it,
/// written as a record and replayed from the record alone, byte for byte.
int demo_planted_bug(const std::string& file, const std::string& record_dir) {
  const prepared p = prepare_scenario(scenario::read_scenario_file(file));
  run_options o;
  o.cores = p.scen->cores;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    const auto c = config_of(o, seed, sim::trace_mode::hash);
    describe_run(p, c);
    const auto r = run_once(p, c);
    crash_report::clear();
    if (r.ok()) continue;
    const std::string path =
        record_dir + "/lockstep-demo-" + std::filesystem::path(file).stem().string() + ".json";
    failure_record rec{"", p.options, c, r, "", p.scen->document, p.name};
    write_failure_record(path, rec);
    const failure_record back = read_failure_record(path);
    const auto again = replay_record(back, sim::trace_mode::hash);
    if (!reproduced(back, again)) {
      std::cout << "demo FAILED: replaying " << path << " did not reproduce the failure byte for byte" << std::endl;
      return exit_nondeterminism;
    }
    std::cout << file << ": caught at seed=" << seed << " (" << sim::to_string(r.failed->kind) << ")\n  "
              << headline_of(r.failed->message) << "\n  record " << path << " replayed: same failure, trace_hash="
              << sim::hash_hex(r.trace_hash) << "\n  replay with: lockstep replay " << shell_quote(path) << std::endl;
    return exit_held;
  }
  std::cout << "demo FAILED: 1000 seeds did not expose the planted bug of " << file << std::endl;
  return exit_failed;
}

// The quick start's main job: explore the whole scenario library (and the
// built-in programs) over a fixed seed range with random and pct, print a
// table, then show each planted bug in the library's canaries/ caught,
// recorded and replayed.
int cmd_demo(const std::string& record_dir, const std::string& library, const std::string& seeds_text) {
  check_output_dir("--record-dir", record_dir);
  const std::uint64_t seeds = parse_u64("--seeds", seeds_text, 1, 1'000'000);
  const std::vector<demo_subject> subjects = demo_subjects(library);
  const std::vector<std::string> canaries = json_files_in(library + "/canaries");
  std::cout << "== the scenario library (" << library << ") and the built-in programs, seeds 1.." << seeds
            << " (pct rows include the random run that sizes k)" << std::endl;
  char header[256];
  std::snprintf(header, sizeof header, "%-44s %-8s %6s %8s %10s %9s", "scenario / program", "strategy", "runs",
                "failures", "schedules", "runs/s");
  std::cout << header << std::endl;
  std::uint64_t total = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const demo_subject& d : subjects) {
    for (const std::string& strategy : d.strategies) {
      if (const int rc = demo_row(d, strategy, seeds, record_dir, total); rc != exit_held) return rc;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << total << " runs, 0 failures, " << static_cast<std::uint64_t>(static_cast<double>(total) / secs)
            << " runs/s" << std::endl;
  std::cout << "== planted bugs (" << library << "/canaries): found, recorded, replayed" << std::endl;
  if (canaries.empty()) {
    std::cout << "demo FAILED: no planted-bug scenario in " << library << "/canaries" << std::endl;
    return exit_failed;
  }
  for (const std::string& file : canaries) {
    if (const int rc = demo_planted_bug(file, record_dir); rc != exit_held) return rc;
  }
  std::cout << "demo ok: every scenario and program held on every seed; every planted bug was caught and "
               "replayed byte for byte"
            << std::endl;
  return exit_held;
}

constexpr const char* exit_code_table =
    "Exit codes:\n"
    "  0   every property held (replay: the recorded failure no longer reproduces)\n"
    "  1   a run failed: an oracle, an uncaught exception, an abort, a resource limit\n"
    "      (replay: the recorded failure reproduced, same trace hash, same decisions)\n"
    "  2   bad input or usage (one line naming the flag or file, the JSON pointer and\n"
    "      what was expected), or an output file that could not be written\n"
    "  3   liveness: a deadlock, the step or virtual-time budget, a liveness oracle\n"
    "  4   nondeterminism: a replay that diverged, check-determinism runs that differed\n"
    "  86  a sanitizer report (sanitizer builds link in exitcode=86)\n"
    "  128+N  the process died of signal N (a crash in the code under test); stderr\n"
    "      names the run and the command that reruns it";

}  // namespace
}  // namespace lockstep::cli

int main(int argc, char** argv) {
  using namespace lockstep::cli;
  crash_report::install();
  CLI::App app{"lockstep: deterministic simulation of concurrent components"};
  app.require_subcommand(1);
  app.footer(exit_code_table);

  run_options run_opts;
  auto* run = app.add_subcommand("run", "run one simulated program once");
  add_run_flags(*run, run_opts, true);
  run->add_option("--trace", run_opts.trace_out, "write the trace (JSON Lines) here");

  run_options explore_opts;
  auto* explore = app.add_subcommand("explore", "run many seeds; stop at and record the first failure");
  add_run_flags(*explore, explore_opts, false);

  std::string replay_path, replay_trace;
  auto* replay = app.add_subcommand("replay", "replay a failure record's decisions; compare trace hashes");
  replay->add_option("record", replay_path, "failure record (JSON)")->required();
  replay->add_option("--trace", replay_trace, "write the replayed trace (JSON Lines) here");

  run_options det_opts;
  det_opts.seeds_text = "10";
  auto* det = app.add_subcommand("check-determinism", "run each seed twice and compare the trace bytes");
  add_run_flags(*det, det_opts, false);

  std::string demo_dir = ".";
  std::string demo_library = "scenarios";
  std::string demo_seeds = "200";
  auto* demo = app.add_subcommand(
      "demo", "the main job: explore the scenario library and the programs, then catch and replay planted bugs");
  demo->add_option("--record-dir", demo_dir, "where the demo writes its failure records");
  demo->add_option("--library", demo_library, "the scenario library (its canaries/ holds the planted bugs)");
  demo->add_option("--seeds", demo_seeds, "seeds 1..N for every scenario, program and strategy (default 200)");

  auto* list = app.add_subcommand("programs", "list the simulated programs");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other bad input (CLI11's own adds a help hint).
    std::cerr << "lockstep: " << printable(e.what(), 300) << " (see --help)\n";
    return exit_bad_input;
  }
  for (const auto& [sub, opts] : {std::pair{run, &run_opts}, std::pair{explore, &explore_opts}, std::pair{det, &det_opts}}) {
    opts->record_given = sub->count("--record") > 0;
    opts->file_given = sub->count("file") > 0;
    opts->cores_given = sub->count("--cores") > 0;
    opts->program_given = sub->count("--program") > 0;
    opts->options_given = sub->count("--options") > 0;
  }
  run_opts.trace_given = run->count("--trace") > 0;

  try {
    if (*run) return cmd_run(run_opts);
    if (*explore) return cmd_explore(explore_opts);
    if (*replay) return cmd_replay(replay_path, replay_trace, replay->count("--trace") > 0);
    if (*det) return cmd_check_determinism(det_opts);
    if (*demo) return cmd_demo(demo_dir, demo_library, demo_seeds);
    if (*list) {
      for (const auto& [name, p] : programs()) std::cout << name << ": " << p.description << "\n";
      return exit_held;
    }
  } catch (const input_error& e) {
    std::cout.flush();
    std::cerr << "lockstep: " << e.what() << "\n";
    return exit_bad_input;
  } catch (const std::exception& e) {
    // Not the input's fault, but not a run's failure either: never terminate().
    std::cout.flush();
    std::cerr << "lockstep: error: " << printable(e.what(), 300) << "\n";
    return exit_bad_input;
  }
  return exit_bad_input;
}
