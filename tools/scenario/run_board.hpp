// tools/scenario/run_board.hpp — what a threads run is doing, for its
// watchdog (run_scenario.cpp): which step each actor is on and which phase
// the run's main fiber is in. A threads run whose verdict does not come
// within its budget is stopped by the watchdog, which names from this board
// the actors still running, the step each is blocked in, and the phase.
//
// The simulator needs none of it (a hang there is a deadlock or a budget the
// executor reports, with a trace), so on sim::runtime every call compiles to
// nothing and no trace changes.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tools/scenario/event_log.hpp"
#include "tools/scenario/scenario.hpp"

namespace lockstep::scenario {

class run_board {
 public:
  /// Starts a run: one line per actor, none started.
  void reset(const scenario& s);
  /// Actor `a` starts step `index` (from 0) of its steps.
  void at(std::size_t a, std::size_t index, const step& stp);
  /// Actor `a` has run all its steps.
  void done(std::size_t a);
  /// The main fiber's phase ("workload", "liveness: ...").
  void phase(std::string_view what);
  /// The phase, then each actor not done and the step it is in.
  [[nodiscard]] std::string describe() const;

 private:
  mutable std::mutex mu_;
  std::string phase_ = "starting";
  std::vector<std::string> names_;
  std::vector<std::string> doing_;  // empty: done
};

/// The board of the process's threads run (one at a time).
run_board& threads_board();

template <class Rt>
void board_step(Rt&, std::size_t a, std::size_t index, const step& stp) {
  if constexpr (!is_sim<Rt>) threads_board().at(a, index, stp);
}
template <class Rt>
void board_done(Rt&, std::size_t a) {
  if constexpr (!is_sim<Rt>) threads_board().done(a);
}
/// Marks actor `a` done when its body ends, however it ends.
template <class Rt>
struct board_actor_done {
  Rt& rt;
  std::size_t a;
  ~board_actor_done() { board_done(rt, a); }
};
template <class Rt>
board_actor_done(Rt&, std::size_t) -> board_actor_done<Rt>;

template <class Rt>
void board_phase(Rt&, std::string_view what) {
  if constexpr (!is_sim<Rt>) threads_board().phase(what);
}

}  // namespace lockstep::scenario
