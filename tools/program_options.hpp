// tools/program_options.hpp — reading a simulated program's options (a JSON
// object) the way every program does: unknown names are refused, numbers are
// range-checked, and every error names the JSON pointer of the offending
// field (`/shards`, `/budgets/1`) through json_reader::fail, which the CLI
// turns into exit code 2. A missing option takes its default; the normalised
// object a program returns holds every option, so a failure record replays
// with exactly the values that ran.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/failure_record.hpp"

namespace lockstep::cli {

/// The options object itself; fails unless it is a JSON object.
inline const nlohmann::json& options_object(const json_reader& r) {
  const nlohmann::json& given = r.at("", "an object of program options");
  if (!given.is_object()) r.fail("", "an object of program options, found " + shown(given));
  return given;
}

/// Fails naming the first option (in key order) that is not in `known`.
inline void reject_unknown_options(const json_reader& r, const nlohmann::json& given,
                                   std::initializer_list<const char*> known) {
  std::string names;
  for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
  for (auto it = given.begin(); it != given.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) r.fail("/" + pointer_token(it.key()), "one of " + names + " (unknown option)");
  }
}

/// An unsigned option in [min, max], or `fallback` when absent.
inline std::uint64_t option_u64(const json_reader& r, const nlohmann::json& given, const char* name,
                                std::uint64_t fallback, std::uint64_t min, std::uint64_t max) {
  if (!given.contains(name)) return fallback;
  const std::string pointer = std::string("/") + name;
  const std::uint64_t v = r.u64(pointer);
  if (v < min || v > max) {
    r.fail(pointer, "an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", found " +
                        std::to_string(v));
  }
  return v;
}

/// A boolean option, or `fallback` when absent.
inline bool option_bool(const json_reader& r, const nlohmann::json& given, const char* name, bool fallback) {
  if (!given.contains(name)) return fallback;
  const std::string pointer = std::string("/") + name;
  const auto& v = r.at(pointer, "a boolean");
  if (!v.is_boolean()) r.fail(pointer, "a boolean, found " + shown(v));
  return v.get<bool>();
}

/// An array of min_size..max_size unsigned integers, each in [min, max], or
/// `fallback` when absent; an element's error names its own pointer (`/budgets/1`).
inline std::vector<std::uint64_t> option_u64_list(const json_reader& r, const nlohmann::json& given,
                                                  const char* name, std::vector<std::uint64_t> fallback,
                                                  std::size_t min_size, std::size_t max_size, std::uint64_t min,
                                                  std::uint64_t max) {
  if (!given.contains(name)) return fallback;
  const std::string pointer = std::string("/") + name;
  const std::string shape = "an array of " + std::to_string(min_size) + " to " + std::to_string(max_size) +
                            " integers from " + std::to_string(min) + " to " + std::to_string(max);
  const auto& v = r.at(pointer, shape.c_str());
  if (!v.is_array() || v.size() < min_size || v.size() > max_size) r.fail(pointer, shape + ", found " + shown(v));
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = pointer + "/" + std::to_string(i);
    const std::uint64_t n = r.u64(at);
    if (n < min || n > max) {
      r.fail(at, "an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", found " +
                     std::to_string(n));
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace lockstep::cli
