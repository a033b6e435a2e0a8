#include "tools/strict_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace lockstep::cli {
namespace {

// A pointer can hold max_json_depth tokens of any length: cut what is shown.
constexpr std::size_t max_shown_pointer_chars = 200;

std::string hex_byte(unsigned char c) {
  static const char digits[] = "0123456789abcdef";
  return std::string("\\x") + digits[c >> 4] + digits[c & 15];
}

// Builds the DOM from SAX events, refusing (by throwing input_error) as soon
// as an event breaks a rule, so nothing is ever built past a limit.
class strict_builder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit strict_builder(const std::string& source) : source_(source) {}
  nlohmann::json take() { return std::move(root_); }

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    // nlohmann falls back to a double for an integer literal beyond 64 bits,
    // silently losing digits: an integer must stay an integer.
    if (text.find_first_of(".eE") == std::string::npos) {
      refuse(pointer(), "an integer from -9223372036854775808 to 18446744073709551615", printable(text, max_shown_chars));
    }
    return put(v);
  }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t&) override { refuse(pointer(), "JSON text", "binary data"); }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool key(string_t& k) override {
    frame& f = stack_.back();
    const bool duplicate = f.value->contains(k);
    f.key = std::move(k);
    if (duplicate) refuse(pointer(), "each key at most once in an object", "a duplicate key");
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    if (ex.id == 406) refuse(pointer(), "a finite number", printable(last_token, max_shown_chars, false));
    // nlohmann's what() is "[json.exception...] parse error at line L, column
    // C: WHAT; last read: 'TOKEN'": keep WHAT, show the token cut short.
    std::string what = ex.what();
    const auto column = what.find("column ");
    if (column != std::string::npos) {
      const auto colon = what.find(": ", column);
      if (colon != std::string::npos) what.erase(0, colon + 2);
    }
    const auto last = what.find("; last read");
    if (last != std::string::npos) what.erase(last);
    std::string message = source_ + ": byte " + std::to_string(position) + ": " + printable(what, 120, false);
    if (!last_token.empty()) message += ", found '" + printable(last_token, max_shown_chars, false) + "'";
    throw input_error(message);
  }

 private:
  struct frame {
    nlohmann::json* value;
    std::string key;  // objects: the key whose value is being read
  };

  // The JSON pointer of the value being read now.
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const frame& f = stack_[i];
      if (f.value->is_object()) {
        p += "/" + pointer_token(f.key);
      } else {
        // An inner array's open child is its last element; the innermost
        // array's next element is not appended yet.
        const std::size_t n = f.value->size();
        p += "/" + std::to_string(i + 1 == stack_.size() ? n : n - 1);
      }
    }
    return p;
  }

  [[noreturn]] void refuse(const std::string& where, const std::string& expected, const std::string& found) const {
    throw input_error(source_ + ": " + printable(where.empty() ? "/" : where, max_shown_pointer_chars) +
                      ": expected " + expected + ", found " + found);
  }

  nlohmann::json& slot() {
    if (stack_.empty()) return root_;
    frame& f = stack_.back();
    if (f.value->is_object()) return (*f.value)[f.key];
    f.value->push_back(nullptr);
    return f.value->back();
  }

  bool put(nlohmann::json v) {
    slot() = std::move(v);
    return true;
  }

  bool open(nlohmann::json empty) {
    if (stack_.size() >= max_json_depth) {
      refuse(pointer(), "at most " + std::to_string(max_json_depth) + " levels of nesting", "deeper nesting");
    }
    nlohmann::json& s = slot();
    s = std::move(empty);
    // Safe to keep: an array only grows after this child is closed again.
    stack_.push_back({&s, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& source_;
  nlohmann::json root_;
  std::vector<frame> stack_;
};

}  // namespace

nlohmann::json parse_strict(std::string_view text, const std::string& source_name) {
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw input_error(source_name + ": byte " + std::to_string(nul + 1) +
                      ": expected JSON text, found a NUL byte (nothing after it would be read)");
  }
  strict_builder b(source_name);
  const char* begin = text.data();
  nlohmann::json::sax_parse(begin, begin + text.size(), &b, nlohmann::json::input_format_t::json, true);
  return b.take();
}

std::string read_input_file(const std::string& path) {
  const std::string name = path.empty() ? "''" : printable(path, max_shown_pointer_chars);
  // O_NONBLOCK: opening a FIFO must not hang; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    throw input_error(name + ": cannot open the file: " + std::strerror(e));
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw input_error(name + ": cannot open the file: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw input_error(name + ": expected a file, found a directory");
  if (!S_ISREG(st.st_mode)) throw input_error(name + ": expected a regular file, found a device, FIFO or socket");
  const auto too_big = [&name](std::uint64_t size) {
    return input_error(name + ": expected a file of at most " + std::to_string(max_input_file_bytes >> 20) +
                       " MiB, found " + std::to_string(size) + " bytes");
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_input_file_bytes) throw too_big(static_cast<std::uint64_t>(st.st_size));
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw input_error(name + ": reading the file failed: " + std::strerror(errno));
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_input_file_bytes) throw too_big(text.size());  // it grew while being read
  }
  return text;
}

nlohmann::json read_strict_file(const std::string& path) {
  return parse_strict(read_input_file(path), path.empty() ? "''" : printable(path, max_shown_pointer_chars));
}

std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string shown(const nlohmann::json& value) {
  // `replace`: a DOM built in code may hold invalid UTF-8, and an error
  // message must not throw.
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() <= max_shown_chars) return s;
  std::size_t cut = max_shown_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

std::string printable(std::string_view text, std::size_t max_chars, bool keep_utf8) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) {
      // Back off to a UTF-8 boundary so the cut never splits a character.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80) != 0) out.pop_back();
      return out + "...";
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || (!keep_utf8 && c >= 0x80)) {
      out += hex_byte(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace lockstep::cli
