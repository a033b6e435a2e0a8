// tools/scenario/generate.hpp — whole scenario documents drawn from a seed
// (FoundationDB's and TigerBeetle's VOPR model: the seed is the test). For a
// component — lanes, shards, flights, composed (lanes in front of a
// single-flight table and/or shards, wired), or any (one of them, drawn) —
// each seed gives a valid scenario file: the system's configuration, the
// callbacks' behaviour (durations, outcome rules — the faults: errors, panics,
// in-doubt failures, workers that stop early —, state kept or dropped) and
// actors with steps of every kind the component's format has (routes,
// submits, joins, leaves, waits, sleeps, cancellations, drops and shutdowns at
// drawn moments). Valid by construction: every value lies within the
// schema's bounds and the reader's rules; tools/tests/generate_cli.sh checks
// 10,000 of them with an independent validator. Deterministic: the same seed
// gives the same bytes, on every build (sim::prng, no std:: distributions).
//
// The drawing code takes its choices from a `choices` source: a seed's
// stream for the CLI (explore --generate, lockstep generate), or a list of
// raw choices for rapidcheck (property-tests/), which shrinks a failing
// document by shrinking its list, as Hypothesis shrinks its choice sequence
// (MacIver & Donaldson, ECOOP 2020). Choice 0 is always the simplest option
// — one actor, one step, one key, the plainest step, no fault — and a list's
// end reads as zeros, so a shorter or smaller list draws a smaller document.
// The one thing an `observe` step needs, the count a concurrent run has at
// that moment, no drawing can know in general: generated workloads wait
// (wait_until) for counts every run reaches, and observe only where the
// count is certain — a lone actor's first step, before anything has run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/prng.hpp"

namespace lockstep::scenario::generate {

/// Where a document's choices come from: each draw is a value below n (n >= 1).
class choices {
 public:
  virtual ~choices() = default;
  virtual std::uint64_t below(std::uint64_t n) = 0;
};

/// A seed's stream: the CLI's source. Its own stream, apart from the run's
/// (the run's strategy draws from the seed too; a constant keeps them unrelated).
class seeded_choices final : public choices {
 public:
  explicit seeded_choices(std::uint64_t seed) : rng_(seed ^ 0x67656e6572617465ULL) {}  // "generate"
  std::uint64_t below(std::uint64_t n) override { return rng_.below(n); }

 private:
  sim::prng rng_;
};

/// A list of raw choices, taken in turn, each reduced below its n; past the
/// list's end every draw is 0. rapidcheck's source.
class listed_choices final : public choices {
 public:
  explicit listed_choices(std::vector<std::uint64_t> list) : list_(std::move(list)) {}
  std::uint64_t below(std::uint64_t n) override { return at_ < list_.size() ? list_[at_++] % n : 0; }

 private:
  std::vector<std::uint64_t> list_;
  std::size_t at_ = 0;
};

/// The components --generate knows, in the order `any` draws from.
const std::vector<std::string>& components();

/// The scenario document drawn for `component` ("lanes", "shards",
/// "flights", "composed" or "any") from `c`, with `about` as its about line;
/// throws std::invalid_argument for another component name.
nlohmann::json document(const std::string& component, choices& c, const std::string& about);

/// The document explore --generate runs for `seed` (seeded_choices).
nlohmann::json document(const std::string& component, std::uint64_t seed);

}  // namespace lockstep::scenario::generate
