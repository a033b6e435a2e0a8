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
//   str     u8 length (below 255) or 0xff and a u32 length, then the bytes
//   integers little-endian
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
  /// In mode off every writer returns at once (callers such as the
  /// scenarios' event logs write without asking on()).
  trace& begin(std::string_view event) {
    if (mode_ == trace_mode::off) return *this;
    put_string('L', event);
    if (mode_ == trace_mode::full) format_begin(event);
    return *this;
  }
  trace& field(std::string_view key, std::int64_t value) {
    if (mode_ == trace_mode::off) return *this;
    put_string('K', key);
    // Tagged by sign, not by the writer's type, so the text alone decides the
    // encoding: "5" is the same token from field() and field_u().
    put(value < 0 ? 'i' : 'u', static_cast<std::uint64_t>(value));
    if (mode_ == trace_mode::full) format_field(key, value);
    return *this;
  }
  trace& field_u(std::string_view key, std::uint64_t value) {
    if (mode_ == trace_mode::off) return *this;
    put_string('K', key);
    put('u', value);
    if (mode_ == trace_mode::full) format_field_u(key, value);
    return *this;
  }
  trace& field(std::string_view key, std::string_view value) {
    if (mode_ == trace_mode::off) return *this;
    put_string('K', key);
    put_string('s', value);
    if (mode_ == trace_mode::full) format_field(key, value);
    return *this;
  }
  void end() {
    if (mode_ == trace_mode::off) return;
    ++lines_;
    if (mode_ == trace_mode::full) format_end();
  }

  /// The executor's step line, `{"ev":"step","n":N,"t":T,"fiber":F,"of":K}`:
  /// exactly the tokens begin/field_u/field/end would write, so the same
  /// hash, but in hash mode laid down as one fixed 59-byte record. It is the
  /// line of every step, and token by token it cost two thirds of a traced
  /// step's extra instructions.
  void step_line(std::uint64_t n, std::int64_t t, std::int64_t fiber, std::int64_t of) {
    if (mode_ == trace_mode::off) return;
    if (mode_ == trace_mode::full || used_ + step_line_bytes > block) {
      step_line_by_tokens(n, t, fiber, of);  // out of line: no register saves on the fast path
      return;
    }
    static constexpr unsigned char event_and_n[] = {'L', 4, 's', 't', 'e', 'p', 'K', 1, 'n'};
    static constexpr unsigned char key_time[] = {'K', 1, 't'};
    static constexpr unsigned char key_fiber[] = {'K', 5, 'f', 'i', 'b', 'e', 'r'};
    static constexpr unsigned char key_of[] = {'K', 2, 'o', 'f'};
    unsigned char* out = pending_ + used_;
    std::memcpy(out, event_and_n, 9);
    out[9] = 'u';
    store_le(out + 10, n);
    std::memcpy(out + 18, key_time, 3);
    put_signed_at(out + 21, t);
    std::memcpy(out + 30, key_fiber, 7);
    put_signed_at(out + 37, fiber);
    std::memcpy(out + 46, key_of, 4);
    put_signed_at(out + 50, of);
    used_ += step_line_bytes;
    ++lines_;
  }

  /// The hash of every line ended so far.
  [[nodiscard]] std::uint64_t hash();
  [[nodiscard]] std::uint64_t lines() const { return lines_; }
  /// The kept bytes (full mode only).
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  // Inline: a traced step writes a line of four fields, and calls and their
  // register saves were most of its cost. Only a full block leaves this path.
  void put(unsigned char tag, std::uint64_t bits) {
    if (used_ + 9 > block) flush();
    pending_[used_] = tag;
    store_le(pending_ + used_ + 1, bits);
    used_ += 9;
  }
  void put_string(unsigned char tag, std::string_view s) {
    if (s.size() >= 255 || used_ + 2 + s.size() > block) {
      put_long_string(tag, s);
      return;
    }
    unsigned char* out = pending_ + used_;
    out[0] = tag;
    out[1] = static_cast<unsigned char>(s.size());
    copy_short(out + 2, s.data(), s.size());
    used_ += 2 + s.size();
  }
  // Little-endian whatever the host, so a hash means the same on every
  // machine; on a little-endian host one store.
  template <class U>
  static void store_le(unsigned char* out, U v) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out, &v, sizeof v);
    } else {
      for (std::size_t i = 0; i < sizeof v; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
    }
  }
  // Keys and event names are a few bytes: fixed-size overlapping copies
  // instead of a call to memcpy for each.
  static void copy_short(unsigned char* out, const char* in, std::size_t n) {
    if (n >= 8 && n <= 16) {
      std::memcpy(out, in, 8);
      std::memcpy(out + n - 8, in + n - 8, 8);
    } else if (n >= 4 && n < 8) {
      std::memcpy(out, in, 4);
      std::memcpy(out + n - 4, in + n - 4, 4);
    } else if (n < 4) {
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(in[i]);
    } else {
      std::memcpy(out, in, n);
    }
  }
  // A value token of field(key, int64) at `out`: tagged by sign, as put() is.
  static void put_signed_at(unsigned char* out, std::int64_t value) {
    out[0] = value < 0 ? 'i' : 'u';
    store_le(out + 1, static_cast<std::uint64_t>(value));
  }
  static constexpr std::size_t step_line_bytes = 59;
  void step_line_by_tokens(std::uint64_t n, std::int64_t t, std::int64_t fiber, std::int64_t of);
  void put_long_string(unsigned char tag, std::string_view s);
  void flush();
  void format_begin(std::string_view event);
  void format_key(std::string_view k);
  void format_field(std::string_view k, std::int64_t value);
  void format_field_u(std::string_view k, std::uint64_t value);
  void format_field(std::string_view k, std::string_view value);
  void format_end();

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
