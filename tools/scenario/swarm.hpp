// tools/scenario/swarm.hpp — swarm testing (Groce et al., ISSTA 2012): a
// scenario may leave its configuration knobs and fault probabilities to the
// seed, as {"range": [lo, hi]} or {"one_of": [...]}; `--swarm` resolves them
// here, on the JSON document, before the scenario reader sees it.
//
// Which values may be swarm ranges is fixed by the list in swarm.cpp (the
// schema accepts the forms exactly there): values used once per run. A
// duration's {"range": [lo, hi]} is not one of them: it is a fresh draw per
// call (draws.hpp) and stays in the document as it is.
//
// The draws come from their own stream (the seed xor a constant), so a
// scenario's schedule and its own draws are the same with and without
// ranges, and in document order (object keys sorted, array items by index),
// so one seed gives the same values with every compiler and build.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::scenario::swarm {

/// One drawn value: the JSON pointer of the range (from the document's top)
/// and the value it was replaced by.
struct drawn {
  std::string pointer;
  nlohmann::json value;
};

struct resolution {
  nlohmann::json document;     ///< the scenario with every range replaced
  std::vector<drawn> values;  ///< in document order
};

/// The pointers of the document's swarm ranges, in document order (empty:
/// none). The document need not be checked: this only looks.
std::vector<std::string> ranges_in(const nlohmann::json& doc);

/// Checks what the schema cannot say about each range: lo <= hi. Throws
/// cli::input_error naming `file`, `prefix` + the pointer and the expectation.
void check_ranges(const nlohmann::json& doc, const std::string& file, const std::string& prefix = "");

/// Throws cli::input_error naming the first range's pointer unless the
/// document has none: a run without --swarm never picks a value silently.
void refuse_ranges(const nlohmann::json& doc, const std::string& file, const std::string& prefix = "");

/// Every range replaced by its value for `seed`. The document must have been
/// checked against the schema and by check_ranges.
resolution resolve(const nlohmann::json& doc, std::uint64_t seed);

/// {pointer: value, ...} for records and summaries (keys sorted, as nlohmann
/// objects are; a pointer's own order is the document order anyway).
nlohmann::json values_json(const std::vector<drawn>& values);

/// "/a/b=3 /c=true": one line, for the failure lines of run, explore, replay.
std::string values_text(const nlohmann::json& values);

}  // namespace lockstep::scenario::swarm
