// tools/cli/verbs.hpp — one function per verb of the command line, each in
// its own file (tools/cli/cmd_*.cpp); main.cpp parses the flags and calls one.
#pragma once

#include <string>

#include "tools/cli/options.hpp"

namespace lockstep::cli {

int cmd_run(run_options o);
int cmd_explore(run_options o);
int cmd_replay(const std::string& path, const std::string& trace_out, bool trace_given);
int cmd_check_determinism(run_options o);
int cmd_demo(const std::string& record_dir, const std::string& library, const std::string& seeds_text);

}  // namespace lockstep::cli
