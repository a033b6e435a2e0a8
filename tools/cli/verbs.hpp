// tools/cli/verbs.hpp — one function per verb of the command line, each in
// its own file (tools/cli/cmd_*.cpp); main.cpp parses the flags and calls one.
#pragma once

#include <string>
#include <vector>

#include "tools/cli/options.hpp"

namespace lockstep::cli {

int cmd_run(run_options o);
int cmd_explore(run_options o, explore_options e);
/// explore --strategy dfs (explore_dfs.cpp): options resolved, files expanded.
int explore_dfs(const run_options& o, const explore_options& e, const std::vector<std::string>& files);
int cmd_merge(const std::vector<std::string>& inputs, const explore_options& out);
/// replay --continue and where it writes a continued run that fails.
struct replay_continue {
  bool on = false;
  std::string record_out;
  bool record_given = false;
};
int cmd_replay(const std::string& path, const std::string& trace_out, bool trace_given,
               const replay_continue& more = {});
int cmd_check_determinism(run_options o, const std::string& jobs_text = "", bool jobs_given = false);

/// lockstep trace: its input (a scenario file or a record), format and output.
struct trace_options {
  std::string input;
  std::string format = "perfetto";
  std::string out;
  run_options run;  // seed, strategy, cores, timer choices for a scenario file (as text)
  bool seed_given = false;
  bool strategy_given = false;
  bool timers_given = false;  // --timer-ties or --timer-jitter
};
int cmd_trace(trace_options t);

/// shrink's flags, as text (checked by cmd_shrink).
struct shrink_options {
  std::string record;
  std::string out;  // empty: next to the record, <name>.shrunk.json
  std::string time_text = "60s";
  std::string max_runs_text = "2000";
};
int cmd_shrink(const shrink_options& o);
/// selfcheck's flags, as text (checked by cmd_selfcheck).
struct selfcheck_options {
  std::string budget_text = "60s";
  std::string jobs_text = "1";
  std::string runs_text;  ///< --runs: the simulated searches' bound in runs ("": --budget's clock)
  std::string library = "scenarios";
  std::vector<std::string> only;  ///< planted bugs to check (default: every one)
};
int cmd_selfcheck(const selfcheck_options& o);
int cmd_demo(const std::string& record_dir, const std::string& library, const std::string& seeds_text);
/// The scenario documents explore --generate COMPONENT runs: --seed N's, or --seeds' as JSON Lines.
int cmd_generate(const std::string& component, run_options o, bool one_seed);

struct explore_summary;
/// explore's and merge's ending: the summary printed, the exit code of what
/// it found (exit_bad_input when it found nothing but an output was not written).
int finish_summary(const explore_summary& s, bool outputs_written);
/// Writes --json and --junit; a failed write is one line on stderr and false.
/// One file's summary alone; several FILEs' (`several`: more than one was
/// given, however many ran) in one JSON document ({"lockstep_explore_summaries":
/// 1, "summaries": [...], "not_run": [...]}) — `not_run`: the files a stop
/// (--time, a signal) kept from running — and one JUnit test suite.
bool write_outputs(const explore_options& e, const std::vector<explore_summary>& all, bool several,
                   const std::vector<std::string>& not_run = {});

}  // namespace lockstep::cli
