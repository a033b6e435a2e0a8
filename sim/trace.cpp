#include "sim/trace.hpp"

#include <charconv>

namespace lockstep::sim {

trace& trace::begin(std::string_view event) {
  line_.clear();
  line_ += "{\"ev\":";
  append_json_string(line_, event);
  return *this;
}

void trace::key(std::string_view k) {
  // Keys are identifiers chosen by the code (never data), so they need no
  // escaping: one append instead of a character-by-character copy.
  line_ += ",\"";
  line_ += k;
  line_ += "\":";
}

trace& trace::field(std::string_view k, std::int64_t value) {
  key(k);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  line_.append(buf, end);
  return *this;
}

trace& trace::field_u(std::string_view k, std::uint64_t value) {
  key(k);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  line_.append(buf, end);
  return *this;
}

trace& trace::field(std::string_view k, std::string_view value) {
  key(k);
  append_json_string(line_, value);
  return *this;
}

void trace::end() {
  line_ += "}\n";
  std::uint64_t h = hash_;
  for (unsigned char c : line_) {
    h ^= c;
    h *= fnv_prime;
  }
  hash_ = h;
  ++lines_;
  if (mode_ == trace_mode::full) text_ += line_;
}

std::string hash_hex(std::uint64_t hash) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[hash & 0xf];
    hash >>= 4;
  }
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  out += '"';
  bool plain = true;
  for (unsigned char c : s) plain = plain && c >= 0x20 && c != '"' && c != '\\';
  if (plain) {
    out += s;
    out += '"';
    return;
  }
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += digits[c >> 4];
          out += digits[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace lockstep::sim
