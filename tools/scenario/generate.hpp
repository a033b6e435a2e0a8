// tools/scenario/generate.hpp — whole scenario documents drawn from a seed
// (FoundationDB's and TigerBeetle's VOPR model: the seed is the test). For a
// component — lanes, shards, flights, or any (one of them, drawn) — each seed
// gives a valid scenario file: the system's configuration, the callbacks'
// behaviour (durations, outcome rules, state kept or dropped) and actors with
// steps of every kind the component's format has (routes, submits, joins,
// sleeps, cancellations, drops and shutdowns at drawn moments). Valid by
// construction: every value lies within the schema's bounds and the reader's
// rules; tools/tests/generate_cli.sh checks 10,000 of them with an
// independent validator. Deterministic: the same seed gives the same bytes,
// on every build (sim::prng, no std:: distributions).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::scenario::generate {

/// The components --generate knows, in the order `any` draws from.
const std::vector<std::string>& components();

/// The scenario document drawn for `component` ("lanes", "shards",
/// "flights" or "any") and `seed`; throws std::invalid_argument for another
/// component name.
nlohmann::json document(const std::string& component, std::uint64_t seed);

}  // namespace lockstep::scenario::generate
