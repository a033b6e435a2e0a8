// property-tests/generated_property.hpp — "every oracle holds" over
// generated scenarios: rapidcheck draws a list of raw choices, a seed and a
// strategy; the list draws a whole scenario of a component through the very
// code `lockstep explore --generate` uses (tools/scenario/generate.hpp,
// listed_choices), which runs once on the simulator against every oracle.
//
// Shrinking end to end. rapidcheck shrinks a failing case by shrinking its
// list (choice 0 is always the simplest option, a list's end reads as zeros),
// its seed and its strategy. Every failing case it meets is recorded as
// `lockstep explore` records one, then shrunk by `lockstep shrink`'s own
// search (tools/cli/shrinker.hpp: the scenario, then the schedule; a run
// budget, never a clock, so the result is the same every time), and written
// under a name drawn from the case itself: a case never overwrites another's
// record. Once written, the record of the case it supersedes is removed, so
// when rapidcheck stops, one record remains — the minimal case's — and the
// failure rapidcheck prints names it with the one `lockstep replay` command.
// The reproduce string rapidcheck prints reruns that case and writes the same
// record, byte for byte.
//
// Environment: LOCKSTEP_PROP_RECORD_DIR (default results/failures),
// LOCKSTEP_CLI (the `lockstep` the printed command names; default lockstep),
// LOCKSTEP_PROP_CANARY=component=bug (plants a canary of tools/scenario/ into
// every generated system that has the component: the property is then false
// by construction wherever a case reaches the bug; property-tests' own
// shrinking test uses it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::prop {

struct generated_case {
  std::string component;  ///< lanes, shards, flights, composed
  std::vector<std::uint64_t> choices;
  std::uint64_t seed = 1;
  std::string strategy = "random";
};

/// A case of `component`, drawn inside a rapidcheck property.
generated_case draw_case(const std::string& component);

/// The case's scenario document (with LOCKSTEP_PROP_CANARY's canary planted).
nlohmann::json document_of(const generated_case& c);

/// The property on the simulator: the case's run holds every oracle of its
/// scenario. A failure is recorded (as above) and fails the property with the
/// failure, the record and the command that replays it. `property` names the
/// records (prop-<property>-<case hash>.json).
void holds_on_sim(const generated_case& c, const std::string& property);

/// The property on the threads backend: the case's scenario runs on real
/// pinned threads (cases the backend cannot run — composed, the abort policy
/// — are discarded). A violated oracle there ends the process with its exit
/// code (threads runs have no record); the scenario of the case that was
/// running is left in <record dir>/prop-<property>-running.json (written
/// before each run, removed after a run that held).
void holds_on_threads(const generated_case& c, const std::string& property);

}  // namespace lockstep::prop
