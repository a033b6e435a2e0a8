#include "sim/trace.hpp"

#include <charconv>
#include <cstring>
#include <stdexcept>

#define XXH_INLINE_ALL  // the hash's hot path is inlined here; nothing to link
#include <xxhash.h>

namespace lockstep::sim {

namespace {

static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64, "trace::state_ cannot hold an XXH3_state_t");

XXH3_state_t* state_of(unsigned char* storage) { return reinterpret_cast<XXH3_state_t*>(storage); }

}  // namespace

trace::trace(trace_mode mode) : mode_(mode) {
  if (on()) XXH3_64bits_reset(state_of(state_));
}

void trace::step_line_by_tokens(std::uint64_t n, std::int64_t t, std::int64_t fiber, std::int64_t of) {
  begin("step").field_u("n", n).field("t", t).field("fiber", fiber).field("of", of).end();
}

void trace::flush() {
  XXH3_64bits_update(state_of(state_), pending_, used_);
  used_ = 0;
}

void trace::put_long_string(unsigned char tag, std::string_view s) {
  if (s.size() < 255) {  // short, but the block is full
    flush();
    put_string(tag, s);
    return;
  }
  unsigned char head[6] = {tag, 0xff, 0, 0, 0, 0};
  store_le(head + 2, static_cast<std::uint32_t>(s.size()));
  if (used_ + sizeof head + s.size() > block) {
    flush();
    if (sizeof head + s.size() > block) {  // too long to gather: hashed straight from the caller's bytes
      XXH3_64bits_update(state_of(state_), head, sizeof head);
      XXH3_64bits_update(state_of(state_), s.data(), s.size());
      return;
    }
  }
  std::memcpy(pending_ + used_, head, sizeof head);
  std::memcpy(pending_ + used_ + sizeof head, s.data(), s.size());
  used_ += sizeof head + s.size();
}

void trace::format_begin(std::string_view event) {
  line_.clear();
  line_ += "{\"ev\":";
  append_json_string(line_, event);
}

void trace::format_key(std::string_view k) {
  // Keys are identifiers chosen by the code (never data), so they need no
  // escaping: one append instead of a character-by-character copy.
  line_ += ",\"";
  line_ += k;
  line_ += "\":";
}

void trace::format_field(std::string_view k, std::int64_t value) {
  format_key(k);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  line_.append(buf, end);
}

void trace::format_field_u(std::string_view k, std::uint64_t value) {
  format_key(k);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  line_.append(buf, end);
}

void trace::format_field(std::string_view k, std::string_view value) {
  format_key(k);
  append_json_string(line_, value);
}

void trace::format_end() {
  line_ += "}\n";
  text_ += line_;
}

std::uint64_t trace::hash() {
  if (!on()) return empty_hash;
  flush();
  return XXH3_64bits_digest(state_of(state_));
}

namespace {

// Reads the canonical lines trace::end() writes, token by token, and feeds a
// trace in hash mode exactly as the writer did.
class line_reader {
 public:
  line_reader(std::string_view line, std::size_t number) : s_(line), number_(number) {}

  void replay_into(trace& t) {
    expect("{\"ev\":");
    t.begin(string());
    while (peek() == ',') {
      ++at_;
      const std::string k = string();
      expect(":");
      if (peek() == '"') {
        t.field(k, std::string_view(string()));
      } else if (peek() == '-') {
        t.field(k, signed_integer());
      } else {
        t.field_u(k, unsigned_integer());
      }
    }
    expect("}");
    if (at_ != s_.size()) bad("text after the closing brace");
    t.end();
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw std::invalid_argument("trace line " + std::to_string(number_) + ", column " + std::to_string(at_ + 1) +
                                ": " + what);
  }
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void expect(std::string_view lit) {
    if (s_.substr(at_, lit.size()) != lit) bad("expected " + std::string(lit));
    at_ += lit.size();
  }
  std::string string() {
    expect("\"");
    std::string out;
    while (true) {
      if (at_ >= s_.size()) bad("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++at_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'u': {
          if (s_.substr(at_, 2) != "00" || at_ + 4 > s_.size()) bad("expected \\u00XX");
          unsigned v = 0;
          const auto r = std::from_chars(s_.data() + at_ + 2, s_.data() + at_ + 4, v, 16);
          if (r.ec != std::errc() || r.ptr != s_.data() + at_ + 4) bad("expected \\u00XX");
          out += static_cast<char>(v);
          at_ += 4;
          break;
        }
        default: bad("unknown escape");
      }
    }
  }
  std::uint64_t unsigned_integer() {
    std::uint64_t v = 0;
    const auto r = std::from_chars(s_.data() + at_, s_.data() + s_.size(), v);
    if (r.ec != std::errc()) bad("expected an integer or a string");
    at_ = static_cast<std::size_t>(r.ptr - s_.data());
    return v;
  }
  std::int64_t signed_integer() {
    std::int64_t v = 0;
    const auto r = std::from_chars(s_.data() + at_, s_.data() + s_.size(), v);
    if (r.ec != std::errc()) bad("expected an integer");
    at_ = static_cast<std::size_t>(r.ptr - s_.data());
    return v;
  }

  std::string_view s_;
  std::size_t number_;
  std::size_t at_ = 0;
};

}  // namespace

std::uint64_t hash_of_trace_text(std::string_view text) {
  trace t(trace_mode::hash);
  std::size_t number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) throw std::invalid_argument("the trace does not end with a newline");
    line_reader(text.substr(0, nl), ++number).replay_into(t);
    text.remove_prefix(nl + 1);
  }
  return t.hash();
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
