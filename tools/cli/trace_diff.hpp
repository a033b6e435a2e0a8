// tools/cli/trace_diff.hpp — where two traces (JSON Lines) first differ:
// check-determinism prints the first differing line of each run and the step
// it belongs to, which says where to look far better than two hashes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::cli {

struct trace_line_at {
  std::string text;  ///< the line without its '\n'; empty past the trace's end
  bool present = false;  ///< false: the trace ended before this line
  /// The step the line belongs to: the `n` of the last "step" line at or
  /// before it (none before the first step).
  std::optional<std::uint64_t> step;
};

struct trace_difference {
  std::uint64_t line = 0;  ///< 1-based line number of the first difference
  trace_line_at a;
  trace_line_at b;
};

/// The step number of a `{"ev":"step","n":N,...}` line, if it is one (the
/// trace writes fields in a fixed order, so a prefix test is exact).
inline std::optional<std::uint64_t> step_of_line(std::string_view line) {
  constexpr std::string_view prefix = "{\"ev\":\"step\",\"n\":";
  if (line.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::uint64_t n = 0;
  std::size_t i = prefix.size();
  if (i >= line.size() || line[i] < '0' || line[i] > '9') return std::nullopt;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) n = n * 10 + static_cast<std::uint64_t>(line[i] - '0');
  return n;
}

/// None when the two are byte for byte equal; else the first line (1-based)
/// where they differ, each side's text there and its step.
inline std::optional<trace_difference> first_trace_difference(std::string_view a, std::string_view b) {
  if (a == b) return std::nullopt;
  std::size_t pa = 0, pb = 0;
  std::uint64_t line = 1;
  std::optional<std::uint64_t> step_a, step_b;
  // Splits off the next line at `pos` (without '\n'); false at the end.
  const auto next_line = [](std::string_view s, std::size_t& pos, std::string_view& out) {
    if (pos >= s.size()) return false;
    const std::size_t nl = s.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? s.size() : nl;
    out = s.substr(pos, end - pos);
    pos = nl == std::string_view::npos ? s.size() : nl + 1;
    return true;
  };
  for (;; ++line) {
    std::string_view la, lb;
    const bool has_a = next_line(a, pa, la);
    const bool has_b = next_line(b, pb, lb);
    if (has_a) {
      if (const auto s = step_of_line(la)) step_a = s;
    }
    if (has_b) {
      if (const auto s = step_of_line(lb)) step_b = s;
    }
    // A missing final '\n' on one side is a difference too.
    const bool nl_a = has_a && a[pa - 1] == '\n';
    const bool nl_b = has_b && b[pb - 1] == '\n';
    const bool same = has_a == has_b && la == lb && nl_a == nl_b;
    if (!same || (!has_a && !has_b)) {
      trace_difference d;
      d.line = line;
      d.a = {std::string(la), has_a, step_a};
      d.b = {std::string(lb), has_b, step_b};
      return d;
    }
  }
}

}  // namespace lockstep::cli
