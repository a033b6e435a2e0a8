#include "tools/crash_report.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKSTEP_ASAN_BUILD 1
#endif
#endif

#ifdef LOCKSTEP_ASAN_BUILD
#include <sanitizer/common_interface_defs.h>
#endif

namespace lockstep::cli::crash_report {
namespace {

// Not on the heap: a crash may come when the heap itself is corrupt.
// thread_local: explore --jobs runs seeds on several threads, and a fatal
// signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, abort's SIGABRT) is delivered to
// the thread that caused it, so the handler prints that thread's run. The
// executable's own TLS is allocated with the thread, safe to read in a handler.
thread_local char note_buffer[8192];
// The length is published after the bytes, so a handler never reads a half-written note.
thread_local std::atomic<std::size_t> note_length{0};

void write_all(const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w <= 0) return;  // nothing better to do in a dying process
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_str(const char* s) { write_all(s, std::strlen(s)); }

void write_note() {
  const std::size_t n = note_length.load(std::memory_order_acquire);
  if (n > 0) write_all(note_buffer, n);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
  }
}

extern "C" void on_fatal_signal(int sig) {
  write_str("\nlockstep: the process crashed with ");
  write_str(signal_name(sig));
  write_str("\n");
  write_note();
  // SA_RESETHAND restored the default action: die of the same signal, so a
  // parent (a shell, ctest) sees what happened.
  ::raise(sig);
}

#ifdef LOCKSTEP_ASAN_BUILD
extern "C" void on_sanitizer_death() {
  write_str("\nlockstep: a sanitizer stopped the process\n");
  write_note();
}
#endif

}  // namespace

void install_thread() {
  // A fiber's stack overflow faults with no stack left to run a handler on.
  // Kept for the thread's life (a thread's exit leaves it mapped: a few
  // threads per process, 64 KiB each).
  const std::size_t alt_size = 64 * 1024;
  void* alt = ::mmap(nullptr, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (alt != MAP_FAILED) {
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = alt_size;
    ss.ss_flags = 0;
    ::sigaltstack(&ss, nullptr);
  }
}

void install() {
  install_thread();
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
#ifdef LOCKSTEP_ASAN_BUILD
  __sanitizer_set_death_callback(on_sanitizer_death);
  for (int sig : {SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
#else
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
#endif
}

void describe(std::string_view note) {
  note_length.store(0, std::memory_order_release);
  const std::size_t n = note.size() < sizeof note_buffer ? note.size() : sizeof note_buffer;
  std::memcpy(note_buffer, note.data(), n);
  note_length.store(n, std::memory_order_release);
}

void clear() { note_length.store(0, std::memory_order_release); }

}  // namespace lockstep::cli::crash_report
