#include "tools/scenario/schema_check.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "tools/scenario/scenario_schema.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::scenario {
namespace {

using cli::input_error;
using cli::pointer_token;
using cli::printable;
using cli::shown;

const nlohmann::json& schema_document() {
  // The compiled-in text is ours; a parse failure here is a build defect.
  static const nlohmann::json doc = nlohmann::json::parse(generated::scenario_schema);
  return doc;
}

// Not copyable: built once, in place, on first use.
const valijson::Schema& schema() {
  static const std::unique_ptr<valijson::Schema> parsed = [] {
    auto s = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(schema_document());
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *parsed;
}

// Our schema uses only local "#/definitions/NAME" references.
const nlohmann::json& resolve(const nlohmann::json& node) {
  const nlohmann::json* at = &node;
  while (at->is_object() && at->contains("$ref")) {
    const std::string ref = (*at)["$ref"].get<std::string>();
    at = &schema_document().at(nlohmann::json::json_pointer(ref.substr(1)));
  }
  return *at;
}

/// What a schema node expects, in words: its description, else its enum.
std::string expectation(const nlohmann::json& node) {
  const nlohmann::json& n = resolve(node);
  if (n.contains("description")) return n["description"].get<std::string>();
  if (n.contains("enum")) {
    std::string names;
    for (const auto& v : n["enum"]) names += (names.empty() ? "" : ", ") + v.dump();
    return "one of " + names;
  }
  return "a value the schema allows";
}

/// The instance and schema nodes along valijson's context ("<root>", "[key]",
/// "[3]"), and the RFC 6901 pointer to them. Our schema has no oneOf/anyOf,
/// so each instance node has exactly one schema node.
struct located {
  const nlohmann::json* value;
  const nlohmann::json* schema;  // null when the path leaves the schema (an unknown field)
  std::string pointer;
};

located locate(const nlohmann::json& doc, const std::vector<std::string>& context) {
  located at{&doc, &schema_document(), ""};
  for (std::size_t i = 1; i < context.size(); ++i) {
    const std::string& c = context[i];
    const std::string token = c.size() >= 2 && c.front() == '[' && c.back() == ']' ? c.substr(1, c.size() - 2) : c;
    const nlohmann::json* sch = at.schema ? &resolve(*at.schema) : nullptr;
    if (at.value->is_array()) {
      const std::size_t index = std::stoul(token);
      if (index >= at.value->size()) break;
      at.value = &(*at.value)[index];
      at.schema = sch && sch->contains("items") ? &(*sch)["items"] : nullptr;
    } else if (at.value->is_object() && at.value->contains(token)) {
      at.value = &(*at.value)[token];
      at.schema = sch && sch->contains("properties") && (*sch)["properties"].contains(token)
                      ? &(*sch)["properties"][token]
                      : nullptr;
    } else {
      break;
    }
    at.pointer += "/" + pointer_token(token);
  }
  return at;
}

[[noreturn]] void fail(const std::string& file, const std::string& pointer, const std::string& expected) {
  const std::string where = pointer.empty() ? "/" : pointer;
  // 600: the longest list the schema names (every oracle and spec, and what was found) fits whole.
  throw input_error(file + ": " + printable(where, 200) + ": expected " + printable(expected, 600));
}

/// Before valijson: every array within its maxItems, in one pass over the
/// document. valijson checks every
/// constraint of a node and keeps every error, so an array far past its limit
/// cost work and memory that grew faster than the input (4,000 repeated
/// `oracles`: uniqueItems compared every pair, 9 s and 1.7 GB) before the
/// refusal; here it is refused as it is met.
void check_sizes(const nlohmann::json& value, const nlohmann::json& schema_node, const std::string& file,
                 const std::string& pointer) {
  const nlohmann::json& node = resolve(schema_node);
  if (!node.is_object()) return;
  if (value.is_array()) {
    if (node.contains("maxItems") && value.size() > node["maxItems"].get<std::size_t>()) {
      fail(file, pointer,
           expectation(node) + " (at most " + node["maxItems"].dump() + " items), found " + std::to_string(value.size()) + " items");
    }
    if (node.contains("items") && node["items"].is_object()) {
      for (std::size_t i = 0; i < value.size(); ++i) check_sizes(value[i], node["items"], file, pointer + "/" + std::to_string(i));
    }
  } else if (value.is_object()) {
    // maxProperties is left to valijson: the schema uses it for "exactly one of"
    // objects, whose own message says more, and no object of the format is long.
    const nlohmann::json* props = node.contains("properties") ? &node["properties"] : nullptr;
    const nlohmann::json* more =
        node.contains("additionalProperties") && node["additionalProperties"].is_object() ? &node["additionalProperties"] : nullptr;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string at = pointer + "/" + pointer_token(it.key());
      if (props && props->contains(it.key())) {
        check_sizes(it.value(), (*props)[it.key()], file, at);
      } else if (more) {
        check_sizes(it.value(), *more, file, at);
      }
    }
  }
}

}  // namespace

const char* schema_text() { return generated::scenario_schema; }

void check_against_schema(const nlohmann::json& doc, const std::string& file, const std::string& prefix) {
  check_sizes(doc, schema_document(), file, prefix);
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  if (validator.validate(schema(), adapter, &results)) return;
  // valijson reports each failing subschema and then every enclosing one:
  // the deepest context is the most specific error.
  valijson::ValidationResults::Error error;
  std::size_t depth = 0;
  while (results.numErrors() > 0) {
    valijson::ValidationResults::Error e;
    results.popError(e);
    if (e.context.size() > depth) {
      depth = e.context.size();
      error = e;
    }
  }
  const located at = locate(doc, error.context);
  const std::string base = prefix + at.pointer;
  if (!at.schema) fail(file, base, "a field the schema knows (unknown field)");
  const nlohmann::json& sch = resolve(*at.schema);
  const nlohmann::json& value = *at.value;
  if (value.is_object() && sch.contains("properties")) {
    const nlohmann::json& props = sch["properties"];
    const bool closed = sch.contains("additionalProperties") && sch["additionalProperties"] == false;
    std::string names;
    for (auto it = props.begin(); it != props.end(); ++it) names += (names.empty() ? "" : ", ") + it.key();
    if (closed) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!props.contains(it.key())) fail(file, base + "/" + pointer_token(it.key()), "one of " + names + " (unknown field)");
      }
    }
    if (sch.contains("required")) {
      for (const auto& r : sch["required"]) {
        const std::string name = r.get<std::string>();
        if (!value.contains(name)) {
          fail(file, base + "/" + pointer_token(name),
               "a field holding " + expectation(props[name]) + ", but it is missing");
        }
      }
    }
  }
  fail(file, base, expectation(*at.schema) + ", found " + shown(value));
}

}  // namespace lockstep::scenario
