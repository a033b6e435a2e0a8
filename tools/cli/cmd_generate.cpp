// lockstep generate COMPONENT [--seed N | --seeds A..B]: the scenario
// documents `explore --generate COMPONENT` runs, drawn from the same code
// (tools/scenario/generate.hpp) — one seed's pretty-printed, or a range's as
// JSON Lines, one document per seed, to inspect what a seed draws or to feed
// another validator. Each document is checked by the reader first, as
// explore checks it.
#include <iostream>

#include "tools/cli/options.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/exit_codes.hpp"
#include "tools/scenario/generate.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

int cmd_generate(const std::string& component, run_options o, bool one_seed) {
  if (one_seed) {
    o.seed = parse_u64("--seed", o.seed_text, 0, UINT64_MAX);
    o.first_seed = o.last_seed = o.seed;
  } else {
    resolve(o, false);
    if (o.last_seed - o.first_seed >= 1'000'000) {
      throw input_error("--seeds: expected at most 1000000 seeds (one document each), found " +
                        std::to_string(o.last_seed - o.first_seed) + " more than the first");
    }
  }
  for (std::uint64_t seed = o.first_seed;; ++seed) {
    const nlohmann::json doc = scenario::generate::document(component, seed);
    (void)scenario::read_scenario(doc, "generated-" + component + " seed " + std::to_string(seed));
    std::cout << (one_seed ? doc.dump(2) : doc.dump()) << "\n";
    if (seed == o.last_seed) break;
  }
  std::cout.flush();
  return exit_held;
}

}  // namespace lockstep::cli
