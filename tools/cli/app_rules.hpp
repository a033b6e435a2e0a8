// tools/cli/app_rules.hpp — the rules the command line itself keeps, around
// CLI11's parse: a word that is no verb refused by name (with a guess), every
// value's type named in --help, an empty value refused rather than read as
// "not given", and `-` as standard output for one text output.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::cli {

/// The verbs, as `lockstep help` and "did you mean" list them.
std::vector<std::string> verb_names(const CLI::App& app);

/// The one line for a word that is no verb (`what` prefixes it: "help "):
/// the verbs, and the closest one; returns exit_bad_input.
int refuse_verb(const CLI::App& app, const std::string& what, const std::string& typed);

/// Names what each flag's value is in --help (CLI11 says TEXT for them all).
void name_value_types(CLI::App& app);

/// A flag of the verb run given an empty value: one line, exit_bad_input.
std::optional<int> refuse_empty_values(const CLI::App& app);

/// One output a verb may write: its flag, where, and whether it was given.
struct named_output {
  const char* flag;
  const std::string* path;
  bool given;
};

/// `-` as standard output: at most one of `text_outputs`, none of
/// `record_outputs`; when one is `-`, stdout is kept for it and the CLI's own
/// lines go to stderr from here on. A refusal: one line, exit_bad_input.
std::optional<int> route_dash(const std::vector<named_output>& text_outputs,
                              const std::vector<named_output>& record_outputs);

/// `lockstep WORD ...` where WORD is no verb and no flag, or no word at all:
/// refused by name, never with CLI11's "A subcommand is required".
std::optional<int> refuse_unknown_verb(const CLI::App& app, int argc, char** argv);

}  // namespace lockstep::cli
