// tools/cli/progress_line.hpp — explore's live line on a terminal: runs done,
// runs/s, failures, ETA and what is being explored, redrawn in place with \r
// at most ten times a second, on stderr (stdout holds only results), cut to
// the terminal's width so it never wraps (a wrapped line is not redrawn in
// place: a narrow pane scrolled stale lines). Nothing at all when stderr is
// not a terminal, so logs and the tests' captured output hold only the results.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace lockstep::cli {

class progress_line {
 public:
  /// `total`: the runs planned, when the range bounds them; `deadline`: --time's end.
  progress_line(std::string subject, std::optional<std::uint64_t> total,
                std::optional<std::chrono::steady_clock::time_point> deadline);
  /// Redraws if a tenth of a second passed since the last draw.
  void update(std::uint64_t runs, std::uint64_t failures);
  /// Erases the line (before a result line is printed, and at the end).
  void clear();
  [[nodiscard]] bool on() const { return on_; }

 private:
  bool on_ = false;
  bool drawn_ = false;
  std::string subject_;
  std::optional<std::uint64_t> total_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace lockstep::cli
