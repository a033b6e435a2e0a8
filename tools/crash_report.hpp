// tools/crash_report.hpp — so that no failure is lost when the code under
// test crashes the process (a segfault in a fiber, an abort, a stack
// overflow). Before every run the CLI stores a ready-made description of it:
// scenario, seed, strategy, cores and the one command that reruns it (a rerun
// of a seed is deterministic, so that command reproduces the crash). A fatal
// signal then only write(2)s those bytes to stderr — all a signal handler may
// safely do — and the process still dies of its signal.
#pragma once

#include <string_view>

namespace lockstep::cli::crash_report {

/// Allocates the alternate signal stack (a fiber's stack overflow leaves no
/// room on the faulting stack) and installs the handlers for SIGSEGV, SIGBUS,
/// SIGFPE, SIGILL and SIGABRT. In ASan builds ASan keeps SIGSEGV, SIGBUS and
/// SIGFPE (its report must print) and the note is printed by its death callback.
void install();

/// A thread that runs simulations (explore --jobs) needs its own alternate
/// signal stack: sigaltstack is per thread. The notes below are per thread too.
void install_thread();

/// What a crash of this thread from now on prints (cut at the buffer's size, 8 KiB).
void describe(std::string_view note);

/// Nothing is running: a crash prints no note.
void clear();

}  // namespace lockstep::cli::crash_report
