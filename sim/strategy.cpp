#include "sim/strategy.hpp"

#include "sim/dfs.hpp"

#include <string>

namespace lockstep::sim {

std::unique_ptr<strategy> make_strategy(std::string_view name, std::uint64_t seed,
                                        const strategy_options& options) {
  if (name == "random") return make_random_strategy(seed);
  if (name == "pct") return make_pct_strategy(seed, options.pct_depth, options.pct_steps);
  if (name == "pos") return make_pos_strategy(seed);
  if (name == "surw") return make_surw_strategy(seed, options.profile);
  if (name == "profile") {
    if (!options.profile) throw std::invalid_argument("strategy 'profile' needs where to write (strategy_options::profile)");
    return make_profile_strategy(seed, options.profile);
  }
  if (name == "fifo") return make_fifo_strategy();
  if (name == "replay" && options.continue_from) {
    return make_continuing_replay_strategy(options.decisions, seed, options.continue_from);
  }
  if (name == "replay") return make_replay_strategy(options.decisions);
  if (name == "dfs") {
    if (!options.dfs) throw std::invalid_argument("strategy 'dfs' needs its search (strategy_options::dfs)");
    return make_dfs_strategy(options.dfs);
  }
  if (name == "guided") return make_guided_strategy(options.decisions, options.guided);
  throw std::invalid_argument("unknown strategy '" + std::string(name) +
                              "': expected random, pct, pos, surw, fifo or replay");
}

}  // namespace lockstep::sim
