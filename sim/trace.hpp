// The trace: every decision and event of a run as canonical JSON Lines, and a
// 64-bit FNV-1a hash over exactly those bytes.
//
// Canonical means: keys in the order the writer emits them (fixed per event
// kind), integers only, strings escaped one way, '\n' after every line, no
// pointers, no thread ids, nothing iterated out of an unordered container.
// Two runs with equal traces have equal hashes, whatever compiler built them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::sim {

enum class trace_mode : std::uint8_t {
  off,   ///< nothing is formatted; the hash stays at its initial value
  hash,  ///< lines are formatted and hashed, then discarded
  full,  ///< lines are formatted, hashed and kept
};

class trace {
 public:
  static constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;
  static constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;

  explicit trace(trace_mode mode = trace_mode::full) : mode_(mode) {}

  [[nodiscard]] bool on() const { return mode_ != trace_mode::off; }
  [[nodiscard]] trace_mode mode() const { return mode_; }

  /// Starts a line: `{"ev":"<event>"`. Fields follow; end() closes it.
  trace& begin(std::string_view event);
  trace& field(std::string_view key, std::int64_t value);
  trace& field_u(std::string_view key, std::uint64_t value);
  trace& field(std::string_view key, std::string_view value);
  void end();

  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] std::uint64_t lines() const { return lines_; }
  /// The kept bytes (full mode only).
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  void key(std::string_view k);
  trace_mode mode_;
  std::string line_;
  std::string text_;
  std::uint64_t hash_ = fnv_offset;
  std::uint64_t lines_ = 0;
};

/// The hash as the CLI and failure records print it: 16 lower-case hex digits.
std::string hash_hex(std::uint64_t hash);

/// Appends `s` to `out` as a JSON string literal (quotes included).
void append_json_string(std::string& out, std::string_view s);

}  // namespace lockstep::sim
