// tools/scenario/lane_oracles.hpp — the lane router's oracles (DESIGN.md §6),
// as functions of the event log alone (lane_events.hpp):
//
//   per_key_order     items of one (key, actor) reach the consumer in the
//                     order that actor routed them (with several producers
//                     on a key, per-producer order is all a caller can know);
//   exactly_once      every admitted item handled exactly once (or dropped,
//                     see no_black_hole), a refused or unrouted one never; an
//                     admitted item left unhandled when no lane of its key is
//                     open is lost;
//   one_lane_per_key  no two consumer calls of a key overlap, a key never
//                     goes back to an older lane, a lane serves one key;
//   capacity          a key never holds more unfinished items than capacity,
//                     route() never admits at depth >= capacity nor refuses
//                     below it, and never refuses at all when uncapped; and
//                     the depth it reports ("the lane's depth before this
//                     item") is never below the key's items certainly still
//                     unfinished when it was called;
//   lanes_gone        after the router is dropped, every lane created closed;
//   lane_survives     a lane whose consumer call failed (an error, or a panic
//                     the consumer contained) stays the key's lane: it closes
//                     neither with items of its key unfinished nor, without
//                     idle_ttl, before the router is dropped (so the key's
//                     next item needs no new lane). A panic that escapes
//                     (escaped_panic "ends_lane") ends its lane instead;
//   no_black_hole     velo's LaneExitGuard: a lane that ends leaves the map
//                     before it drops what it still held, so an item may be
//                     dropped unhandled only if its key's lane ended by an
//                     escaped panic or a cancellation (a cancel_lane step)
//                     and the item's route() began no later than that lane
//                     closed; one routed after went to a dead
//                     lane's sender ("silently black-holing every subsequent
//                     item for the key"). exactly_once counts a dropped item
//                     as ended, and refuses a drop of an item never admitted
//                     or already begun.
//   liveness          (always on) an admitted item still unhandled while a
//                     lane of its key is open at the end of the run.
//
// "Unfinished" is counted from the log: an item counts from whichever comes
// first, route() returning ok or the consumer starting it, until the consumer
// returns. The router counts the same item longer (from before route()
// returns until after the consumer returns), so the log never overstates
// what the router holds and the capacity check cannot fire falsely.
// A refusal "below capacity" is judged by the depth route() reported.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/lane_events.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

struct lane_oracle_settings {
  std::optional<std::size_t> capacity;  ///< the router's: a route step may give its own (lane_event::own_capacity)
  std::vector<std::string> enabled;  ///< names from lane_oracle_names()
  /// The run is over (the router dropped, the liveness budget spent): check
  /// what must hold at the end too, not only what holds at every event.
  bool end_of_run = true;
  /// Some route step gives its own capacity: an item the consumer starts
  /// before any route of its key is logged is not bounded by the router's.
  bool any_route_capacity = false;
  /// The router reaps idle lanes (idle_ttl set): a lane may close before the drop.
  bool reaps = false;
};

/// The first violation, in log order (then the end-of-run ones), or none.
std::optional<violation> check_lane_log(const std::vector<lane_event>& log, const lane_oracle_settings& settings);

}  // namespace lockstep::scenario
