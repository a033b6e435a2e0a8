// tools/cli/stop_signals.hpp — SIGINT and SIGTERM ask a long explore to stop:
// the first one sets a flag the explore polls (it then finishes the runs in
// flight, writes every record found and prints the summary); the handler is
// reset by it, so a second one kills the process as usual.
#pragma once

namespace lockstep::cli::stop_signals {

/// Installs the handlers (SA_RESETHAND) and clears the flag.
void install();

/// The signal that asked to stop (SIGINT or SIGTERM), or 0.
int received();

/// "SIGINT" or "SIGTERM".
const char* name(int sig);

}  // namespace lockstep::cli::stop_signals
