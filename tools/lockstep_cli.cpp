// The lockstep command line: run simulated programs, explore seeds, replay
// failure records, check determinism.
//
// Exit codes (one place, after TigerBeetle's vopr): 0 every property held,
// 1 a run failed (an oracle, a deadlock, a budget, a divergence), 2 bad input
// or usage. Every run prints `seed=` first and its trace hash last.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "sim/runtime.hpp"
#include "tools/failure_record.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

constexpr int exit_held = 0;
constexpr int exit_failed = 1;
constexpr int exit_bad_input = 2;

struct run_options {
  std::string program = "pipeline";
  std::string options_json = "{}";
  std::uint64_t seed = 1;        // run
  std::uint64_t first_seed = 1;  // explore, check-determinism
  std::uint64_t seeds = 100;
  std::string strategy = "random";
  std::uint32_t cores = 2;
  std::uint32_t pct_depth = 3;
  std::uint64_t pct_steps = 0;  // 0: measured from a random run of the same program and seed
  std::uint64_t max_steps = 10'000'000;
  std::string trace_out;
  std::string record_out;
};

void add_run_flags(CLI::App& app, run_options& o, bool with_seed) {
  app.add_option("--program", o.program, "simulated program (see `lockstep programs`)");
  app.add_option("--options", o.options_json, "the program's options as a JSON object");
  if (with_seed) {
    app.add_option("--seed", o.seed, "seed of the run");
  } else {
    app.add_option("--first-seed", o.first_seed, "first seed");
    app.add_option("--seeds", o.seeds, "how many seeds")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  }
  app.add_option("--strategy", o.strategy, "random | pct | fifo")
      ->check(CLI::IsMember({"random", "pct", "fifo"}));
  app.add_option("--cores", o.cores, "simulated cores")->check(CLI::Range(1, 64));
  app.add_option("--pct-depth", o.pct_depth, "PCT bug depth d (d-1 priority change points)")
      ->check(CLI::Range(1, 64));
  app.add_option("--pct-steps", o.pct_steps,
                 "PCT: steps k the change points are drawn from (default: the length of a random run "
                 "of the same program and seed, so change points land inside the run)");
  app.add_option("--max-steps", o.max_steps, "step budget (a livelock past it)");
  app.add_option("--record", o.record_out, "where to write the failure record");
}

struct prepared {
  const program* prog;
  nlohmann::json options;
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
    throw input_error(where.program + ": unknown program '" + name + "'; expected one of " + names);
  }
  json_reader reader(where.options_file, given, where.options_prefix);
  if (!given.is_object()) reader.fail("", "a JSON object of program options, found " + given.dump());
  return {&it->second, it->second.normalise(reader)};
}

prepared prepare(const std::string& name, const std::string& options_json) {
  nlohmann::json given;
  try {
    given = nlohmann::json::parse(options_json);
  } catch (const nlohmann::json::parse_error& e) {
    throw input_error(std::string("--options: not valid JSON: ") + e.what());
  }
  return prepare(name, given, option_source{});
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

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw input_error(path + ": cannot write here");
  out << text;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Writes the record and prints where, with the one command that replays it.
void report_failure(const prepared& p, const std::string& program, const sim::run_config& c,
                    const sim::run_result& r, std::string path) {
  if (path.empty()) path = "lockstep-failure-" + program + "-" + std::to_string(c.seed) + ".json";
  failure_record rec{program, p.options, c, r, ""};
  write_failure_record(path, rec);
  std::cout << "FAILED " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n"
            << "failure record: " << path << "\n"
            << "replay with: lockstep replay " << shell_quote(path) << "\n";
}

void print_result_line(const sim::run_result& r) {
  std::cout << "steps=" << r.steps << " virtual_time_ns=" << r.end_time_ns
            << " decisions=" << r.decisions.size() << " outcome="
            << (r.ok() ? std::string("ok") : std::string(sim::to_string(r.failed->kind)))
            << " trace_hash=" << sim::hash_hex(r.trace_hash) << "\n";
}

int cmd_run(const run_options& o) {
  const prepared p = prepare(o.program, o.options_json);
  const auto c = with_pct_steps(p, config_of(o, o.seed, o.trace_out.empty() ? sim::trace_mode::hash : sim::trace_mode::full));
  std::cout << "seed=" << o.seed << " program=" << o.program << " strategy=" << o.strategy
            << " cores=" << o.cores << "\n";
  const auto r = run_once(p, c);
  if (!o.trace_out.empty()) write_text(o.trace_out, r.trace_text);
  print_result_line(r);
  if (r.ok()) return exit_held;
  report_failure(p, o.program, c, r, o.record_out);
  return exit_failed;
}

int cmd_explore(const run_options& o, std::uint64_t first_seed, std::uint64_t seeds) {
  const prepared p = prepare(o.program, o.options_json);
  std::cout << "exploring program=" << o.program << " strategy=" << o.strategy << " cores=" << o.cores
            << " seeds=" << first_seed << ".." << first_seed + seeds - 1 << "\n";
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t done = 0;
  for (std::uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
    const auto c = with_pct_steps(p, config_of(o, seed, sim::trace_mode::hash));
    const auto r = run_once(p, c);
    ++done;
    if (!r.ok()) {
      std::cout << "seed=" << seed << " ";
      print_result_line(r);
      report_failure(p, o.program, c, r, o.record_out);
      return exit_failed;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "all " << done << " seeds held (" << static_cast<std::uint64_t>(done / (secs > 0 ? secs : 1e-9))
            << " runs/s)\n";
  return exit_held;
}

// Runs a record's program again, following its recorded decisions.
sim::run_result replay_record(const failure_record& rec, sim::trace_mode trace) {
  sim::run_config c = rec.config;
  c.strategy = "replay";
  c.options.decisions = rec.result.decisions;
  c.trace = trace;
  option_source where;
  if (!rec.path.empty()) where = {rec.path + ": /program", rec.path, "/options"};
  return run_once(prepare(rec.program, rec.options, where), c);
}

int cmd_replay(const std::string& path, const std::string& trace_out) {
  const failure_record rec = read_failure_record(path);
  std::cout << "seed=" << rec.config.seed << " program=" << rec.program << " replaying "
            << rec.result.decisions.size() << " decisions recorded with strategy " << rec.config.strategy << "\n";
  const auto r = replay_record(rec, trace_out.empty() ? sim::trace_mode::hash : sim::trace_mode::full);
  if (!trace_out.empty()) write_text(trace_out, r.trace_text);
  print_result_line(r);
  if (r.trace_hash == rec.result.trace_hash) {
    std::cout << "reproduced: the same trace hash " << sim::hash_hex(r.trace_hash) << "\n";
  } else {
    std::cout << "DIVERGED: recorded trace hash " << sim::hash_hex(rec.result.trace_hash) << ", replay gave "
              << sim::hash_hex(r.trace_hash) << "\n";
  }
  if (r.failed) std::cout << "failure: " << sim::to_string(r.failed->kind) << ": " << r.failed->message << "\n";
  return r.ok() && r.trace_hash == rec.result.trace_hash ? exit_held : exit_failed;
}

int cmd_check_determinism(const run_options& o, std::uint64_t first_seed, std::uint64_t seeds) {
  const prepared p = prepare(o.program, o.options_json);
  for (std::uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
    const auto c = with_pct_steps(p, config_of(o, seed, sim::trace_mode::hash));
    const auto a = run_once(p, c);
    const auto b = run_once(p, c);
    std::cout << "seed=" << seed << " trace_hash=" << sim::hash_hex(a.trace_hash);
    if (a.trace_hash != b.trace_hash || a.decisions != b.decisions) {
      std::cout << " NONDETERMINISTIC: second run gave " << sim::hash_hex(b.trace_hash) << "\n";
      return exit_failed;
    }
    std::cout << " (twice)\n";
  }
  return exit_held;
}

// The quick start's main job: every program runs clean on a few seeds; then
// each program's canary (a planted bug) is found by exploration, recorded,
// and replayed to the same bytes.
int cmd_demo(const std::string& record_dir) {
  run_options o;
  for (const auto& [name, prog] : programs()) {
    std::cout << "== " << name << ": " << prog.description << "\n";
    const prepared clean = prepare(name, "{}");
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      for (const char* strategy : {"random", "pct"}) {
        o.strategy = strategy;
        const auto r = run_once(clean, with_pct_steps(clean, config_of(o, seed, sim::trace_mode::hash)));
        std::cout << "seed=" << seed << " strategy=" << strategy << " ";
        print_result_line(r);
        if (!r.ok()) {
          std::cout << "demo FAILED: " << r.failed->message << "\n";
          return exit_failed;
        }
      }
    }
    o.strategy = "random";
    const prepared canary = prepare(name, R"({"canary":true})");
    bool found = false;
    for (std::uint64_t seed = 1; seed <= 1000 && !found; ++seed) {
      const auto c = config_of(o, seed, sim::trace_mode::hash);
      const auto r = run_once(canary, c);
      if (r.ok()) continue;
      found = true;
      const std::string path = record_dir + "/lockstep-demo-" + name + ".json";
      std::cout << "canary (a planted bug) caught at seed=" << seed << ": " << sim::to_string(r.failed->kind) << "\n";
      write_failure_record(path, failure_record{name, canary.options, c, r, ""});
      // The record alone must reproduce the failure with the same bytes.
      const auto again = replay_record(read_failure_record(path), sim::trace_mode::hash);
      if (again.ok() || again.trace_hash != r.trace_hash) {
        std::cout << "demo FAILED: replaying " << path << " did not reproduce the failure byte for byte\n";
        return exit_failed;
      }
      std::cout << "replayed " << path << ": same failure, same trace_hash=" << sim::hash_hex(r.trace_hash)
                << "\n  (lockstep replay " << shell_quote(path) << ")\n";
    }
    if (!found) {
      std::cout << "demo FAILED: 1000 seeds did not expose the " << name << " canary\n";
      return exit_failed;
    }
  }
  std::cout << "demo ok: every program held its oracles; every planted bug was caught and replayed\n";
  return exit_held;
}

}  // namespace
}  // namespace lockstep::cli

int main(int argc, char** argv) {
  using namespace lockstep::cli;
  CLI::App app{"lockstep: deterministic simulation of concurrent components"};
  app.require_subcommand(1);

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
  det_opts.seeds = 10;
  auto* det = app.add_subcommand("check-determinism", "run each seed twice and compare the trace bytes");
  add_run_flags(*det, det_opts, false);

  std::string demo_dir = ".";
  auto* demo = app.add_subcommand("demo", "the quick start: every program clean, every planted bug found and replayed");
  demo->add_option("--record-dir", demo_dir, "where the demo writes its failure records");

  auto* list = app.add_subcommand("programs", "list the simulated programs");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return exit_bad_input;
  }

  try {
    if (*run) return cmd_run(run_opts);
    if (*explore) return cmd_explore(explore_opts, explore_opts.first_seed, explore_opts.seeds);
    if (*replay) return cmd_replay(replay_path, replay_trace);
    if (*det) return cmd_check_determinism(det_opts, det_opts.first_seed, det_opts.seeds);
    if (*demo) return cmd_demo(demo_dir);
    if (*list) {
      for (const auto& [name, p] : programs()) std::cout << name << ": " << p.description << "\n";
      return exit_held;
    }
  } catch (const input_error& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return exit_bad_input;
  } catch (const std::invalid_argument& e) {
    std::cerr << "lockstep: " << e.what() << "\n";
    return exit_bad_input;
  }
  return exit_bad_input;
}
