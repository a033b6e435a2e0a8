// The lockstep command line: run scenario files, explore seeds, replay
// failure records, check determinism.
//
// Exit codes: tools/exit_codes.hpp (the table is in --help and docs/cli.md).
// Every run prints `seed=` first and its trace hash last; every bad input is
// one line on stderr and exit 2; a crash of the code under test still prints
// the seed and the command that reruns it (tools/crash_report.hpp).
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <utility>
#include <vector>

#include "sim/strategy.hpp"
#include "tools/cli/app_rules.hpp"
#include "tools/cli/options.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/crash_report.hpp"
#include "tools/exit_codes.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

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
    "      names the run and the command that reruns it; or explore was stopped by\n"
    "      SIGINT (130) or SIGTERM (143) before it found a failure";

#ifndef LOCKSTEP_VERSION
#define LOCKSTEP_VERSION "unknown"
#endif
constexpr const char* version_line = "lockstep " LOCKSTEP_VERSION;

}  // namespace
}  // namespace lockstep::cli

int main(int argc, char** argv) {
  using namespace lockstep::cli;
  crash_report::install();
  if (argc > 0) set_invoked_as(argv[0]);
  CLI::App app{"lockstep: deterministic simulation of concurrent components"};
  app.require_subcommand(1);
  app.footer(exit_code_table);
  app.set_version_flag("--version", version_line, "print lockstep's version and exit");

  run_options run_opts;
  auto* run = app.add_subcommand("run", "run each scenario FILE once");
  add_run_flags(*run, run_opts, true);
  add_swarm_flag(*run, run_opts);
  run->add_option("--trace", run_opts.trace_out, "write the trace (JSON Lines) here");

  run_options explore_opts;
  // Many seeds: the four sampling strategies in turn (results/strategies.md:
  // no one strategy finds every bug soonest; alternated, the worst case is smallest).
  explore_opts.strategy = "portfolio";
  explore_options explore_more;
  auto* explore = app.add_subcommand(
      "explore", "run many seeds on --jobs threads; record every failure until --stop-after (default 1); "
                 "end with a summary");
  add_run_flags(*explore, explore_opts, false, true);
  add_explore_flags(*explore, explore_more);
  add_swarm_flag(*explore, explore_opts);
  add_generate_flag(*explore, explore_opts);

  std::vector<std::string> merge_inputs;
  explore_options merge_out;
  auto* merge = app.add_subcommand("merge", "combine the --json summaries of explore --shard I/N runs into "
                                            "the report one machine would have written");
  merge->add_option("results", merge_inputs, "the shards' --json files, one per shard, in any order")->required();
  merge->add_option("--json", merge_out.json_out, "write the merged summary as JSON to this file");
  merge->add_option("--junit", merge_out.junit_out, "write the merged summary as JUnit XML to this file");

  std::string replay_path, replay_trace;
  auto* replay = app.add_subcommand("replay", "replay a failure record's decisions; compare trace hashes");
  replay->add_option("record", replay_path, "failure record (JSON)")->required();
  replay->add_option("--trace", replay_trace, "write the replayed trace (JSON Lines) here");
  replay_continue replay_more;
  replay->add_flag("--continue", replay_more.on,
                   "where the recorded decisions stop fitting (a changed scenario or engine), go on under the "
                   "random strategy with the record's seed; say where, judge the new run, record it if it fails");
  replay->add_option("--record", replay_more.record_out,
                     "with --continue: where a failing continued run's record goes (default: RECORD-continued.json "
                     "next to the record)");

  shrink_options shrink_opts;
  auto* shrink = app.add_subcommand("shrink", "make a scenario record's failing case smaller (actors, steps, items, "
                                              "keys, then preemptions) while it fails the same oracle");
  shrink->add_option("record", shrink_opts.record, "failure record of a scenario run (JSON)")->required();
  shrink->add_option("-o,--out", shrink_opts.out, "write the shrunk record here (default: <record>.shrunk.json)");
  shrink->add_option("--time", shrink_opts.time_text, "wall-clock budget for the search, e.g. 60s, 5m (default 60s)");
  shrink->add_option("--max-runs", shrink_opts.max_runs_text, "at most this many candidate runs (default 2000)");
  add_replay_backend_flag(*replay);

  run_options det_opts;
  det_opts.seeds_text = "10";
  auto* det = app.add_subcommand("check-determinism", "run each seed twice and compare the trace bytes");
  add_run_flags(*det, det_opts, false);
  det->get_option("--record")->group("");  // refused below, so not in its --help
  add_swarm_flag(*det, det_opts);
  std::string det_jobs;
  det->add_option("--jobs", det_jobs,
                  "also run the seeds as explore does on 1 and on N threads (1 to 1024) and compare every "
                  "outcome: trace hashes, schedules, failures and their records");

  trace_options trace_opts;
  auto* trace = app.add_subcommand("trace", "run a scenario FILE (or replay a RECORD) with the full trace, or take a "
                                            "run's TRACE as it is, and write it for ui.perfetto.dev (--format "
                                            "perfetto) or as JSON Lines");
  trace->add_option("input", trace_opts.input,
                    "a scenario file, a failure record, or a run's trace (JSON Lines, as a library test's replay "
                    "writes it with LOCKSTEP_TRACE)")
      ->required();
  trace->add_option("--format", trace_opts.format, "perfetto (Chrome trace-event JSON; the default) | jsonl");
  trace->add_option("-o,--output", trace_opts.out, "where to write the trace")->required();
  trace->add_option("--seed", trace_opts.run.seed_text, "a scenario's seed (decimal; default 1)");
  trace->add_option("--strategy", trace_opts.run.strategy, "a scenario's strategy: random | pct | pos | surw | fifo")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(lockstep::sim::sampling_strategies),
                                                     std::end(lockstep::sim::sampling_strategies))));
  trace->add_option("--cores", trace_opts.run.cores_text, "a scenario's simulated cores (default: its system.cores)");
  trace->add_flag("--timer-ties", trace_opts.run.timer_ties, "a scenario's timer ties as choices (as `run --timer-ties`)");
  trace->add_option("--timer-jitter", trace_opts.run.timer_jitter_text,
                    "a scenario's timer jitter bound in virtual ns (as `run --timer-jitter`; default 0)")
      ->type_name("NS");

  std::string demo_dir = ".";
  std::string demo_library = "scenarios";
  std::string demo_seeds = "200";
  auto* demo = app.add_subcommand(
      "demo", "the main job: explore the scenario library, then catch and replay planted bugs");
  demo->add_option("--record-dir", demo_dir, "where the demo writes its failure records");
  demo->add_option("--library", demo_library, "the scenario library (its canaries/ holds the planted bugs)");
  demo->add_option("--seeds", demo_seeds, "seeds 1..N for every scenario and strategy (default 200)");

  std::string generate_component;
  run_options generate_opts;
  auto* generate = app.add_subcommand(
      "generate", "print the scenario documents explore --generate COMPONENT runs: one seed's, or a range's as "
                  "JSON Lines (one document per seed)");
  generate->add_option("component", generate_component, "lanes | shards | flights | composed | any")
      ->required()
      ->check(CLI::IsMember({"lanes", "shards", "flights", "composed", "any"}))
      ->type_name("COMPONENT");
  generate->add_option("--seed", generate_opts.seed_text, "the one seed whose document to print, pretty (default 1)");
  generate->add_option("--seeds", generate_opts.seeds_text,
                       "a count from 1 or a range A..B (at most 1000000 seeds): one compact document per line");
  selfcheck_options selfcheck_opts;
  auto* selfcheck = app.add_subcommand(
      "selfcheck", "(a selfcheck build) for each bug planted in the engine: does the library catch it, does "
                   "--generate, does a stress run on real threads; each search within --budget");
  selfcheck->add_option("--budget", selfcheck_opts.budget_text,
                        "wall-clock time for each search of each bug: digits then ms, s, m or h (default 60s)")
      ->type_name("DURATION");
  selfcheck->add_option("--jobs", selfcheck_opts.jobs_text, "planted bugs checked at once, each on its own thread "
                                                             "(1 to 256; default 1)")
      ->type_name("N");
  selfcheck->add_option("--runs", selfcheck_opts.runs_text,
                        "bound each simulated search (library, --generate) by runs instead of --budget's clock: "
                        "the same result on any machine; the threads baseline keeps --budget")
      ->type_name("N");
  selfcheck->add_option("--library", selfcheck_opts.library, "the scenario library (default scenarios)")
      ->type_name("DIR");
  selfcheck->add_option("--only", selfcheck_opts.only, "check only these planted bugs (engine/plant.hpp names)")
      ->type_name("NAME");
  auto* version = app.add_subcommand("version", "print lockstep's version");
  std::vector<std::string> help_topic;
  auto* help = app.add_subcommand("help", "print the help of lockstep, or of one VERB");
  help->add_option("verb", help_topic, "a verb (run, explore, ...)")->expected(0, 1);

  name_value_types(app);
  if (const auto refused = refuse_unknown_verb(app, argc, argv)) return *refused;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other bad input (CLI11's own adds a help hint).
    std::cerr << "lockstep: " << printable(e.what(), 300) << " (see --help)\n";
    return exit_bad_input;
  }
  if (const auto refused = refuse_empty_values(app)) return *refused;
  // Scenario FILEs: required, but for explore --generate, which draws its own.
  for (const auto& [sub, opts] : {std::pair{run, &run_opts}, std::pair{explore, &explore_opts}, std::pair{det, &det_opts}}) {
    if (!*sub) continue;
    if (opts->files.empty() && opts->generate.empty()) {
      std::cerr << "lockstep: files is required (see --help)" << (sub == explore ? "; or --generate COMPONENT" : "")
                << "\n";
      return exit_bad_input;
    }
    if (!opts->files.empty() && !opts->generate.empty()) {
      std::cerr << "lockstep: --generate: expected either scenario FILEs or --generate COMPONENT, found both\n";
      return exit_bad_input;
    }
    if (!opts->generate.empty() && opts->swarm) {
      std::cerr << "lockstep: --generate: expected no --swarm with it (each seed draws its whole scenario already)\n";
      return exit_bad_input;
    }
  }
  for (const auto& [sub, opts] : {std::pair{run, &run_opts}, std::pair{explore, &explore_opts}, std::pair{det, &det_opts}}) {
    opts->record_given = sub->count("--record") > 0;
    opts->cores_given = sub->count("--cores") > 0;
  }
  if (det_opts.record_given) {
    // check-determinism compares runs and writes no record: a --record it took would be ignored.
    std::cerr << "lockstep: --record: expected no record with check-determinism (it compares runs and writes "
                 "none; `lockstep run --seed N --record FILE` writes one)\n";
    return exit_bad_input;
  }
  run_opts.trace_given = run->count("--trace") > 0;
  explore_opts.first_seed_given = explore->count("--first-seed") > 0;
  det_opts.first_seed_given = det->count("--first-seed") > 0;
  replay_more.record_given = replay->count("--record") > 0;
  trace_opts.seed_given = trace->count("--seed") > 0;
  trace_opts.strategy_given = trace->count("--strategy") > 0;
  trace_opts.run.cores_given = trace->count("--cores") > 0;
  trace_opts.timers_given = trace->count("--timer-ties") > 0 || trace->count("--timer-jitter") > 0;
  explore_more.json_given = explore->count("--json") > 0;
  explore_more.junit_given = explore->count("--junit") > 0;
  explore_more.record_dir_given = explore->count("--record-dir") > 0;
  explore_more.stop_after_liveness_given = explore->count("--stop-after-liveness") > 0;
  for (const char* flag : {"--runs", "--shard", "--stop-after", "--stop-after-liveness", "--json", "--junit", "--swarm",
                           "--generate", "--pct-depth", "--pct-steps", "--seeds", "--preemption-bound",
                           "--delay-bound", "--max-schedules", "--dfs-from", "--dpor"}) {
    if (explore->count(flag) > 0) explore_more.given.emplace_back(flag);
  }
  merge_out.json_given = merge->count("--json") > 0;
  merge_out.junit_given = merge->count("--junit") > 0;

  if (*version) {
    std::cout << version_line << "\n";
    return exit_held;
  }
  if (*help) {
    if (help_topic.empty()) {
      // Not app.help(): with a verb parsed (this one), it prints that verb's.
      std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return exit_held;
    }
    for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == help_topic.front()) {
        std::cout << sub->help(app.get_name());
        return exit_held;
      }
    }
    return refuse_verb(app, "help ", help_topic.front());
  }
  const std::vector<named_output> text_outputs = {
      {"--trace", &run_opts.trace_out, *run && run_opts.trace_given},
      {"--trace", &replay_trace, *replay && replay->count("--trace") > 0},
      {"-o", &trace_opts.out, static_cast<bool>(*trace)},
      {"--json", &explore_more.json_out, *explore && explore_more.json_given},
      {"--junit", &explore_more.junit_out, *explore && explore_more.junit_given},
      {"--json", &merge_out.json_out, *merge && merge_out.json_given},
      {"--junit", &merge_out.junit_out, *merge && merge_out.junit_given}};
  const std::vector<named_output> record_outputs = {
      {"--record", &run_opts.record_out, *run && run_opts.record_given},
      {"--record", &explore_opts.record_out, *explore && explore_opts.record_given},
      {"--record", &replay_more.record_out, *replay && replay_more.record_given},
      {"-o", &shrink_opts.out, *shrink && shrink->count("--out") > 0}};
  if (const auto refused = route_dash(text_outputs, record_outputs)) return *refused;
  try {
    if (*run) return cmd_run(run_opts);
    if (*explore) return cmd_explore(explore_opts, explore_more);
    if (*merge) return cmd_merge(merge_inputs, merge_out);
    if (*replay) return cmd_replay(replay_path, replay_trace, replay->count("--trace") > 0, replay_more);
    if (*det) return cmd_check_determinism(det_opts, det_jobs, det->count("--jobs") > 0);
    if (*trace) return cmd_trace(trace_opts);
    if (*shrink) return cmd_shrink(shrink_opts);
    if (*demo) return cmd_demo(demo_dir, demo_library, demo_seeds);
    if (*selfcheck) return cmd_selfcheck(selfcheck_opts);
    if (*generate) {
      if (generate->count("--seed") > 0 && generate->count("--seeds") > 0) {
        throw input_error("--seed and --seeds: expected one seed or a range, found both");
      }
      return cmd_generate(generate_component, generate_opts, generate->count("--seeds") == 0);
    }
  } catch (const input_error& e) {
    std::cout.flush();
    std::cerr << "lockstep: " << e.what() << "\n";
    return exit_bad_input;
  } catch (const std::bad_alloc&) {
    std::cout.flush();
    std::cerr << "lockstep: error: out of memory (fewer --jobs, or a smaller scenario, needs less)\n";
    return exit_bad_input;
  } catch (const std::exception& e) {
    // Not the input's fault, but not a run's failure either: never terminate().
    std::cout.flush();
    std::cerr << "lockstep: error: " << printable(e.what(), 300) << "\n";
    return exit_bad_input;
  }
  return exit_bad_input;
}

