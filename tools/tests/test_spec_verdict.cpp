// Goal: a component's whole specification judges one run as a whole
// (tools/scenario/spec_verdict.hpp): every_rule_broken finds each rule a log
// breaks — the first in log order, then the others, each checked alone —
// and nothing on a log that breaks none; the spec names in a file's
// `oracles` stand for every rule of their component (scenario_reader.cpp).
#define BOOST_TEST_MODULE tools_spec_verdict
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/scenario/flight_oracles.hpp"
#include "tools/scenario/scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/scenario/spec_verdict.hpp"

using namespace lockstep::scenario;

namespace {

flight_event ev(flight_event_kind kind, std::uint64_t flight, std::uint64_t waiter = 0) {
  flight_event e;
  e.kind = kind;
  e.key = 1;
  e.flight = flight;
  e.waiter = waiter;
  return e;
}

/// Flight 1 of key 1: waiter 1 leads it and reads an answer its worker never
/// published (same_value, event 2); waiter 1 then ends a second time
/// (answered, event 3); and a second worker starts (one_leader, event 4).
std::vector<flight_event> log_breaking_three() {
  flight_event lead = ev(flight_event_kind::joined, 1, 1);
  lead.leader = true;
  flight_event read = ev(flight_event_kind::answered, 1, 1);
  read.answer = flight_answer::ok;
  read.value = 9;
  return {lead, ev(flight_event_kind::led, 1), read, ev(flight_event_kind::left, 1, 1), ev(flight_event_kind::led, 1)};
}

std::vector<violation> judged(const std::vector<flight_event>& log) {
  flight_oracle_settings s;
  s.enabled = flight_oracle_names();
  return every_rule_broken(s, [&log](const flight_oracle_settings& o) { return check_flight_log(log, o); });
}

/// The oracles a single-flight file with `oracles` (JSON text, or none) runs.
std::vector<std::string> oracles_of(const std::string& oracles) {
  nlohmann::json doc = nlohmann::json::parse(
      R"({"lockstep": 1, "about": "the spec names", "system": {"cores": 1, "single_flight": {}},
          "workload": {"actors": [{"name": "a", "core": 0, "steps": [{"join": {"key": 1}}]}]}})");
  if (!oracles.empty()) doc["oracles"] = nlohmann::json::parse(oracles);
  return read_scenario(doc, "t.json").oracles;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_rule_the_log_breaks_first_in_log_order) {
  const std::vector<violation> found = judged(log_breaking_three());
  std::vector<std::string> names;
  for (const violation& v : found) names.push_back(v.oracle);
  // same_value breaks first in the log; then the others in the spec's order.
  const std::vector<std::string> want = {"same_value", "one_leader", "answered"};
  BOOST_TEST(names == want, "got " + [&] {
    std::string s;
    for (const auto& n : names) s += n + " ";
    return s;
  }());
}

BOOST_AUTO_TEST_CASE(a_log_breaking_nothing_has_no_violation) {
  std::vector<flight_event> log = log_breaking_three();
  log.resize(2);  // the leader joined and its worker started
  flight_event pub = ev(flight_event_kind::published, 1);
  pub.value = 9;
  log.push_back(pub);
  flight_event read = ev(flight_event_kind::answered, 1, 1);
  read.value = 9;
  log.push_back(read);
  log.push_back(ev(flight_event_kind::retired, 1));
  BOOST_TEST(judged(log).empty());
}

BOOST_AUTO_TEST_CASE(a_spec_name_stands_for_every_rule_of_its_component) {
  BOOST_TEST(oracles_of("") == flight_oracle_names());  // the default: the whole spec
  BOOST_TEST(oracles_of(R"(["spec_flights"])") == flight_oracle_names());
  // A rule named beside its spec is not doubled.
  BOOST_TEST(oracles_of(R"(["answered", "spec_flights"])").size() == flight_oracle_names().size());
  BOOST_TEST(oracles_of(R"(["answered"])") == std::vector<std::string>{"answered"});
}

BOOST_AUTO_TEST_CASE(a_spec_of_a_component_not_in_the_system_is_bad_input) {
  BOOST_CHECK_THROW(oracles_of(R"(["spec_shards"])"), std::exception);
}
