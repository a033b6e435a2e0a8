// tools/suggest.hpp — "did you mean": the known name closest to a
// mistyped one, by edit distance (Levenshtein: insertions, deletions and
// substitutions of one character each cost 1), when it is close enough to be
// what was meant — at most a third of the longer name's length, and at least
// one edit. Ties go to the name listed first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::cli {

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The name in `known` closest to `typed`, if one is close enough.
inline std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& known) {
  if (typed.size() > 64) return std::nullopt;  // no verb is that long: not a typo
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& name : known) {
    const std::size_t d = edit_distance(typed, name);
    const std::size_t limit = std::max<std::size_t>(1, std::max(typed.size(), name.size()) / 3);
    if (d <= limit && (!best || d < best_distance)) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace lockstep::cli
