// tools/strict_json.hpp — the one JSON reader for everything a user hands the
// CLI (scenario files, failure records). It parses with
// nlohmann's SAX interface, which keeps its own stack instead of recursing,
// builds the DOM itself, and refuses while parsing — before anything
// downstream (dump, copies, error messages) could recurse or misread:
//
//   * nesting deeper than max_json_depth (64) containers;
//   * an object with the same key twice (nlohmann keeps the last one silently);
//   * an integer outside int64/uint64 (nlohmann would turn it into a double);
//   * a float that overflows to infinity (nlohmann throws out_of_range 406);
//   * a NUL byte anywhere (nlohmann's lexer would end the input there and
//     ignore what follows);
//   * a file larger than max_input_file_bytes (64 MiB), before reading it.
//
// Every error is an input_error of one line:
//   FILE: /json/pointer: expected ..., found ...     (a value it refuses)
//   FILE: byte N: syntax error ..., found '...'      (text that is not JSON)
// Pointers are escaped per RFC 6901 (`~` as `~0`, `/` as `~1`); what is shown
// as "found" is cut at max_shown_chars and control bytes are escaped, so no
// message floods a terminal or spans lines.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lockstep::cli {

/// Bad input: the message names the file or flag, the JSON pointer and what
/// was expected. The CLI prints it and exits 2.
struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Containers may nest this deep (the top-level object or array is level 1).
inline constexpr std::size_t max_json_depth = 64;
/// A file handed to the CLI (scenario, record, merge input) is refused above
/// this size before it is read: the largest record of a run within the
/// default budgets is a few MiB.
inline constexpr std::size_t max_input_file_bytes = std::size_t{64} << 20;
/// A "found" value in an error message is cut after this many characters.
inline constexpr std::size_t max_shown_chars = 60;

/// Parses `text` strictly (see above); errors name `source_name`.
nlohmann::json parse_strict(std::string_view text, const std::string& source_name);

/// The whole content of a regular file; a missing, unreadable or non-regular
/// file (a directory, a FIFO, a device) is an input_error naming `path`.
std::string read_input_file(const std::string& path);

/// read_input_file + parse_strict, errors naming `path`.
nlohmann::json read_strict_file(const std::string& path);

/// One reference token of a JSON pointer, escaped per RFC 6901.
std::string pointer_token(std::string_view key);

/// `value` as compact JSON for an error message: at most max_shown_chars
/// characters (then "..."), never split inside a UTF-8 sequence.
std::string shown(const nlohmann::json& value);

/// Raw text for an error message: control bytes (and, unless `keep_utf8`,
/// every byte >= 0x80) as \xNN, cut after `max_chars` (then "...").
std::string printable(std::string_view text, std::size_t max_chars, bool keep_utf8 = true);

}  // namespace lockstep::cli
