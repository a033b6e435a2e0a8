// Goal: the strict JSON reader accepts exactly JSON within its limits and
// refuses the rest while parsing, with one-line messages that name the
// source and an RFC 6901 pointer (or the byte of a syntax error).
#define BOOST_TEST_MODULE tools_strict_json
#include <boost/test/unit_test.hpp>

#include <string>

#include "tools/strict_json.hpp"

using lockstep::cli::input_error;
using lockstep::cli::parse_strict;

namespace {

std::string refusal(const std::string& text) {
  try {
    (void)parse_strict(text, "in.json");
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

BOOST_AUTO_TEST_CASE(accepts_json_within_the_limits_unchanged) {
  const std::string text = R"({"a":[1,-2,18446744073709551615,-9223372036854775808,1.5,null,true,"\u00e9"],"b":{}})";
  BOOST_TEST(parse_strict(text, "in.json") == nlohmann::json::parse(text));
  BOOST_TEST(parse_strict(nested(64), "in.json").is_array());
  BOOST_TEST(parse_strict("1e-400", "in.json").is_number_float());  // underflow is 0, not an error
}

BOOST_AUTO_TEST_CASE(refuses_while_parsing_naming_the_pointer) {
  BOOST_TEST(refusal(nested(65)).find("in.json: /0/0/") == 0);
  BOOST_TEST(refusal(nested(65)).find("expected at most 64 levels of nesting") != std::string::npos);
  BOOST_TEST(refusal(nested(1'000'000)).find("expected at most 64 levels of nesting") != std::string::npos);
  BOOST_TEST(refusal(R"({"a":{"x":1,"x":2}})") ==
             "in.json: /a/x: expected each key at most once in an object, found a duplicate key");
  BOOST_TEST(refusal(R"({"a/b":[0,{"~":1e999}]})") == "in.json: /a~1b/1/~0: expected a finite number, found 1e999");
  BOOST_TEST(refusal("[1,18446744073709551616]") ==
             "in.json: /1: expected an integer from -9223372036854775808 to 18446744073709551615, found "
             "18446744073709551616");
  BOOST_TEST(refusal("-1e400") == "in.json: /: expected a finite number, found -1e400");
}

BOOST_AUTO_TEST_CASE(syntax_errors_name_the_byte_in_one_short_line) {
  BOOST_TEST(refusal("[1,]").find("in.json: byte 4: syntax error") == 0);
  BOOST_TEST(refusal("").find("in.json: byte 1: ") == 0);
  BOOST_TEST(refusal("{} x").find("in.json: byte 4: ") == 0);  // one value only
  const std::string flood = "\"" + std::string(100000, 'a') + "\n\"";
  const std::string m = refusal(flood);
  BOOST_TEST(m.find('\n') == std::string::npos);
  BOOST_TEST(m.size() < 400u);
}

BOOST_AUTO_TEST_CASE(shown_values_are_cut_and_pointer_tokens_escaped) {
  BOOST_TEST(lockstep::cli::pointer_token("a/b~c") == "a~1b~0c");
  const std::string s = lockstep::cli::shown(nlohmann::json(std::string(500, 'x')));
  BOOST_TEST(s.size() == lockstep::cli::max_shown_chars + 3);
  BOOST_TEST(s.substr(s.size() - 3) == "...");
  BOOST_TEST(lockstep::cli::printable("a\nb", 60) == "a\\x0ab");
}

BOOST_AUTO_TEST_CASE(reading_a_file_refuses_directories_and_missing_files) {
  auto read_error = [](const std::string& path) {
    try {
      (void)lockstep::cli::read_input_file(path);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  BOOST_TEST(read_error("/") == "/: expected a file, found a directory");
  BOOST_TEST(read_error("/nonexistent/x.json").find("/nonexistent/x.json: cannot open the file") == 0);
  BOOST_TEST(read_error("/dev/null") == "/dev/null: expected a regular file, found a device, FIFO or socket");
}
