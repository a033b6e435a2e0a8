#include "tools/cli/progress_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace lockstep::cli {

progress_line::progress_line(std::string subject, std::optional<std::uint64_t> total,
                             std::optional<std::chrono::steady_clock::time_point> deadline)
    : on_(::isatty(STDERR_FILENO) == 1),
      subject_(std::move(subject)),
      total_(total),
      deadline_(deadline),
      started_(std::chrono::steady_clock::now()),
      last_draw_(started_) {}

namespace {
std::string duration_text(double secs) {
  char buf[32];
  if (secs < 10) {
    std::snprintf(buf, sizeof buf, "%.1fs", secs);
  } else if (secs < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", secs);
  } else if (secs < 3600) {
    const long whole = static_cast<long>(secs);
    std::snprintf(buf, sizeof buf, "%ldm%02lds", whole / 60, whole % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fh", secs / 3600);
  }
  return buf;
}
}  // namespace

void progress_line::update(std::uint64_t runs, std::uint64_t failures) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - started_).count();
  const double rate = secs > 0 ? static_cast<double>(runs) / secs : 0;
  std::string eta = "?";
  std::optional<double> left;
  if (total_ && rate > 0) left = static_cast<double>(*total_ - std::min(*total_, runs)) / rate;
  if (deadline_) {
    const double until = std::max(0.0, std::chrono::duration<double>(*deadline_ - now).count());
    left = left ? std::min(*left, until) : until;
  }
  if (left) eta = duration_text(*left);
  char line[200];
  if (total_) {
    std::snprintf(line, sizeof line, "%llu/%llu runs, %.0f runs/s, %llu failures, ETA %s, ",
                  static_cast<unsigned long long>(runs), static_cast<unsigned long long>(*total_), rate,
                  static_cast<unsigned long long>(failures), eta.c_str());
  } else {
    std::snprintf(line, sizeof line, "%llu runs, %.0f runs/s, %llu failures, ETA %s, ",
                  static_cast<unsigned long long>(runs), rate, static_cast<unsigned long long>(failures), eta.c_str());
  }
  std::string text = std::string(line) + subject_;
  // One column short of the width: a line that fills the last column wraps on some terminals.
  struct winsize ws {};
  std::size_t width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1U : 79U;
  if (text.size() > width) {
    // Bytes for columns (a file name's UTF-8 takes fewer columns than bytes: cut early,
    // never late), backed off so no character is split.
    while (width > 0 && (static_cast<unsigned char>(text[width]) & 0xC0) == 0x80) --width;
    text.resize(width);
  }
  // \r and erase-to-end: the line is redrawn where it is, whatever was longer before.
  std::cout.flush();  // results printed so far come before the line
  std::cerr << "\r\033[K" << text << std::flush;
  drawn_ = true;
}

void progress_line::clear() {
  if (!drawn_) return;
  std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace lockstep::cli
