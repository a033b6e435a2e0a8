// tools/scenario/schema_check.hpp — validates a document against the
// scenario JSON Schema (scenarios/schema/scenario.schema.json, compiled into
// the binary) with valijson, and turns the deepest error into the CLI's one
// line: `FILE: /json/pointer: expected ..., found ...`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace lockstep::scenario {

/// The schema's text as compiled in.
const char* schema_text();

/// Throws cli::input_error naming `file`, `prefix` + the RFC 6901 pointer of
/// the offending value and what the schema expects there, if `doc` does not
/// validate. `prefix` is where doc sits inside file (a record's /scenario).
void check_against_schema(const nlohmann::json& doc, const std::string& file, const std::string& prefix);

}  // namespace lockstep::scenario
