// tools/cli/app_rules.cpp — see app_rules.hpp.
#include "tools/cli/app_rules.hpp"

#include <unistd.h>

#include <iostream>

#include "tools/exit_codes.hpp"
#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"
#include "tools/suggest.hpp"

namespace lockstep::cli {

/// The verbs, as `lockstep help` and "did you mean" list them.
std::vector<std::string> verb_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

/// The one line for a word that is no verb: the verbs, and the closest one.
int refuse_verb(const CLI::App& app, const std::string& what, const std::string& typed) {
  const std::vector<std::string> verbs = verb_names(app);
  std::string listed;
  for (const std::string& v : verbs) listed += (listed.empty() ? "" : ", ") + v;
  std::cerr << "lockstep: " << what << printable(typed, max_shown_chars) << ": expected a verb (" << listed << ")";
  if (const auto near = closest_name(typed, verbs)) std::cerr << "; did you mean '" << *near << "'?";
  std::cerr << "\n";
  return exit_bad_input;
}

/// What each flag takes, as --help shows it (CLI11 would say TEXT for all of
/// them: the CLI reads every value as text and parses it itself, for its
/// one-line errors). Ranges and defaults are in the descriptions.
void name_value_types(CLI::App& app) {
  static const std::pair<const char*, const char*> types[] = {
      {"--seed", "UINT64"}, {"--first-seed", "UINT64"}, {"--seeds", "N|A..B|A.."},
      {"--jobs", "1..1024"}, {"--runs", "N"}, {"--time", "DURATION"}, {"--stop-after", "N"}, {"--stop-after-liveness", "N"},
      {"--max-records", "N"}, {"--preemption-bound", "N|none"}, {"--delay-bound", "N|none"}, {"--max-schedules", "N"}, {"--dfs-from", "POSITION"}, {"--shard", "I/N"}, {"--cores", "1..64"}, {"--pct-depth", "1..64"},
      {"--pct-steps", "N"}, {"--max-steps", "N"}, {"--max-runs", "N"}, {"--time-scale", "1..1000000"},
      {"--strategy", "STRATEGY"}, {"--backend", "BACKEND"}, {"--format", "FORMAT"}, {"--trace", "FILE|-"},
      {"--json", "FILE|-"}, {"--junit", "FILE|-"}, {"--record", "FILE"}, {"--output", "FILE|-"}, {"--out", "FILE"},
      {"--record-dir", "DIR"}, {"--library", "DIR"}};
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const bool selfcheck = sub->get_name() == "selfcheck";  // its --jobs: planted bugs at once, 1..256
    for (CLI::Option* opt : sub->get_options()) {
      if (opt->get_name() == "files") opt->type_name("FILE|DIR");
      if (opt->get_name() == "results" || opt->get_name() == "record" || opt->get_name() == "input") opt->type_name("FILE");
      if (opt->get_name() == "verb") opt->type_name("VERB");
      for (const auto& [flag, type] : types) {
        for (const std::string& name : opt->get_lnames()) {
          if ("--" + name == flag) opt->type_name(selfcheck && name == "jobs" ? "1..256" : type);
        }
      }
    }
  }
}

/// A flag given an empty value (`--jobs ''`) is refused, never read as "not
/// given": `--seeds 1.. --time ''` would otherwise be an unbounded run.
std::optional<int> refuse_empty_values(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->count() == 0) continue;
    for (const CLI::Option* opt : sub->get_options()) {
      if (!opt->nonpositional() || opt->get_expected_min() == 0 || opt->count() == 0) continue;  // flags take no value
      for (const std::string& value : opt->results()) {
        if (!value.empty()) continue;
        std::cerr << "lockstep: " << opt->get_name() << ": expected a value, found an empty one\n";
        return exit_bad_input;
      }
    }
  }
  return std::nullopt;
}

/// `-` for standard output: allowed for one text output of the command run
/// (a trace, a summary, JUnit), whose bytes then go to stdout alone while the
/// CLI's own lines go to stderr; refused for a record, which is replayed from
/// its file (the printed replay command names it).
std::optional<int> route_dash(const std::vector<named_output>& text_outputs,
                              const std::vector<named_output>& record_outputs) {
  for (const named_output& o : record_outputs) {
    if (o.given && *o.path == "-") {
      std::cerr << "lockstep: " << o.flag << ": expected a file path (a record is replayed from its file), found '-'\n";
      return exit_bad_input;
    }
  }
  std::vector<const char*> dashes;
  for (const named_output& o : text_outputs)
    if (o.given && *o.path == "-") dashes.push_back(o.flag);
  if (dashes.empty()) return std::nullopt;
  if (dashes.size() > 1) {
    std::cerr << "lockstep: " << dashes[0] << " and " << dashes[1]
              << ": expected at most one output on standard output ('-'), found " << dashes.size() << "\n";
    return exit_bad_input;
  }
  std::cout.flush();
  const int out = ::dup(STDOUT_FILENO);
  if (out < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "lockstep: " << dashes[0] << " -: cannot write to standard output\n";
    return exit_bad_input;
  }
  send_dash_to(out);
  return std::nullopt;
}

/// `lockstep WORD ...` where WORD is no verb and no flag: refused by name,
/// never with CLI11's "A subcommand is required".
std::optional<int> refuse_unknown_verb(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    std::string listed;
    for (const std::string& v : verb_names(app)) listed += (listed.empty() ? "" : ", ") + v;
    std::cerr << "lockstep: expected a verb (" << listed << "); `lockstep help` says what each does\n";
    return exit_bad_input;
  }
  if (argv[1][0] == '-') return std::nullopt;
  const std::string typed = argv[1];
  for (const std::string& v : verb_names(app))
    if (v == typed) return std::nullopt;
  return refuse_verb(app, "", typed);
}

}  // namespace lockstep::cli
