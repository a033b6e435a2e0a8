// The trace: every decision and event of a run as canonical JSON Lines, and a
// 64-bit hash of exactly those lines.
//
// Canonical means: keys in the order the writer emits them (fixed per event
// kind), integers only, strings escaped one way, '\n' after every line, no
// pointers, no thread ids, nothing iterated out of an unordered container.
// Two runs with equal traces have equal hashes, whatever compiler built them.
//
// The hash is XXH3-64 over a binary encoding of the lines' tokens (below),
// not over the formatted text: a run that only needs the hash (explore, the
// common case) formats nothing. The encoding is a function of the text alone,
// so the hash of a kept trace can be recomputed from its lines
// (hash_of_trace_text):
//   line    'L' str(event)  then per field: 'K' str(key) value
//   value   'u' u64 (an integer >= 0) | 'i' i64 (< 0) | 's' str(string)
//   str     u32 length, then the bytes;  integers little-endian
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::sim {

enum class trace_mode : std::uint8_t {
  off,   ///< nothing is recorded; the hash stays at empty_hash
  hash,  ///< the lines' tokens are hashed; nothing is formatted
  full,  ///< lines are hashed, and formatted and kept
};

class trace {
 public:
  /// XXH3-64 of no bytes: the hash of a run traced with mode off.
  static constexpr std::uint64_t empty_hash = 0x2d06800538d394c2ULL;

  explicit trace(trace_mode mode = trace_mode::full);
  trace(const trace&) = delete;
  trace& operator=(const trace&) = delete;

  [[nodiscard]] bool on() const { return mode_ != trace_mode::off; }
  [[nodiscard]] trace_mode mode() const { return mode_; }

  /// Starts a line: `{"ev":"<event>"`. Fields follow; end() closes it.
  trace& begin(std::string_view event);
  trace& field(std::string_view key, std::int64_t value);
  trace& field_u(std::string_view key, std::uint64_t value);
  trace& field(std::string_view key, std::string_view value);
  void end();

  /// The hash of every line ended so far.
  [[nodiscard]] std::uint64_t hash();
  [[nodiscard]] std::uint64_t lines() const { return lines_; }
  /// The kept bytes (full mode only).
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  void key(std::string_view k);
  void put(unsigned char tag, std::uint64_t bits);
  void put_string(unsigned char tag, std::string_view s);
  void flush();

  trace_mode mode_;
  std::string line_;
  std::string text_;
  std::uint64_t lines_ = 0;
  // Tokens are gathered here and handed to the hash state a block at a time.
  static constexpr std::size_t block = 1024;
  std::size_t used_ = 0;
  unsigned char pending_[block];
  alignas(64) unsigned char state_[640];  // an XXH3_state_t (checked in trace.cpp)
};

/// The hash a trace with these kept lines has (its text as trace::text() holds
/// it); throws std::invalid_argument if a line is not a canonical trace line.
std::uint64_t hash_of_trace_text(std::string_view text);

/// The hash as the CLI and failure records print it: 16 lower-case hex digits.
std::string hash_hex(std::uint64_t hash);

/// Appends `s` to `out` as a JSON string literal (quotes included).
void append_json_string(std::string& out, std::string_view s);

}  // namespace lockstep::sim
