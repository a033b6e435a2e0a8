#include "tools/scenario/lane_oracles.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace lockstep::scenario {
namespace {

std::string str(std::uint64_t n) { return std::to_string(n); }

std::string where(const lane_event& e, std::size_t n) {
  return "key " + (e.key == unknown_key ? std::string("?") : str(e.key)) + " at t=" + std::to_string(e.t) +
         "ns (event #" + str(n) + ")";
}

enum class fate : std::uint8_t { admitted, refused, unrouted };

}  // namespace

std::optional<violation> check_lane_log(const std::vector<lane_event>& log, const lane_oracle_settings& s) {
  const std::set<std::string> on(s.enabled.begin(), s.enabled.end());
  std::optional<violation> found;
  auto report = [&](const char* oracle, std::string message) {
    if (!found && on.count(oracle) != 0) found = violation{oracle, std::move(message)};
  };

  std::map<std::uint64_t, fate> fates;                   // item -> what route() did
  std::map<std::uint64_t, std::uint64_t> item_key;       // item -> key
  std::map<std::uint64_t, int> handles;                  // item -> consumer calls started
  std::set<std::uint64_t> returned;                      // items whose consumer call returned
  std::set<std::uint64_t> counted;                       // items counted as unfinished
  std::map<std::uint64_t, std::uint64_t> unfinished;     // key -> admitted, not yet handled
  std::map<std::uint64_t, std::uint64_t> in_consumer;    // key -> consumer calls running
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> last_seq;  // (key, actor) -> seq
  std::map<std::uint64_t, std::uint64_t> generation;     // lane -> order of first use
  std::map<std::uint64_t, std::uint64_t> newest;         // key -> newest lane generation
  std::map<std::uint64_t, std::uint64_t> lane_key;       // lane -> the key it serves
  std::map<std::uint64_t, std::int64_t> open_lanes;      // key -> created - closed
  std::map<std::uint64_t, std::pair<std::uint64_t, consumer_outcome>> failed_on;  // lane -> first failed call
  // For lane_survives: which unfinished items were the closing lane's own.
  std::map<std::uint64_t, std::set<std::uint64_t>> open_items;  // key -> items counted, not yet handled
  std::map<std::uint64_t, std::size_t> routed_at;                // item -> index of its routed event
  std::map<std::uint64_t, std::uint64_t> begun_on;               // item -> lane whose consumer took it
  std::map<std::uint64_t, std::size_t> lane_first_n;             // lane -> index of its first handle_begin
  std::map<std::uint64_t, std::size_t> last_created;             // key -> index of its newest lane_created
  std::set<std::uint64_t> lost;                                  // items dropped unhandled
  std::map<std::uint64_t, std::uint64_t> escaped_on;             // lane -> key: its consumer's panic escaped
  std::map<std::uint64_t, std::vector<std::int64_t>> escape_closes;  // key -> when each escaped lane closed
  const bool judge_depth = on.count("capacity") != 0;
  // Items whose consumer call returned somewhere in the log: read once, the
  // first time the depth rule needs it (a correct router rarely makes it).
  std::optional<std::set<std::uint64_t>> ever_handled;
  auto handled_somewhere = [&](std::uint64_t item) {
    if (!ever_handled) {
      ever_handled.emplace();
      for (const lane_event& h : log) {
        if (h.kind == lane_event_kind::handled) ever_handled->insert(h.item);
      }
    }
    return ever_handled->count(item) != 0;
  };
  std::uint64_t created = 0, closed = 0;
  bool dropped = false;

  // A route step may give its own capacity; route() checks each call's
  // against the depth it reads, so a key may hold as many unfinished items as
  // the largest capacity any of its routes had (none: unbounded). Without
  // per-route capacities this is the router's, as before.
  std::map<std::uint64_t, std::optional<std::uint64_t>> bound;  // key -> largest capacity routed with
  auto capacity_of = [&](const lane_event& e) -> std::optional<std::uint64_t> {
    if (e.own_capacity) return e.capacity;
    if (s.capacity) return *s.capacity;
    return std::nullopt;
  };
  auto widen = [&](std::uint64_t key, const std::optional<std::uint64_t>& cap) {
    const auto [b, fresh] = bound.try_emplace(key, cap);
    if (!fresh && b->second && (!cap || *cap > *b->second)) b->second = cap;
  };
  // Items counted at handle_begin before their routed event: bounded by the
  // router's capacity unless a route step of the scenario gave its own.
  auto bound_of = [&](std::uint64_t key) -> std::optional<std::uint64_t> {
    const auto b = bound.find(key);
    if (b != bound.end()) return b->second;
    if (s.any_route_capacity) return std::nullopt;
    if (s.capacity) return *s.capacity;
    return std::nullopt;
  };
  auto count_in = [&](std::uint64_t item, std::uint64_t key, const lane_event& e, std::size_t n) {
    if (!counted.insert(item).second) return;
    open_items[key].insert(item);
    const std::uint64_t now = ++unfinished[key];
    const std::optional<std::uint64_t> cap = bound_of(key);
    if (cap && now > *cap) {
      report("capacity", where(e, n) + ": holds " + str(now) + " unfinished items, capacity " + str(*cap));
    }
  };

  for (std::size_t n = 0; n < log.size(); ++n) {
    const lane_event& e = log[n];
    switch (e.kind) {
      case lane_event_kind::routed: {
        fates[e.item] = fate::admitted;
        item_key[e.item] = e.key;
        routed_at.try_emplace(e.item, n);
        const std::optional<std::uint64_t> cap = capacity_of(e);
        widen(e.key, cap);
        if (cap && e.depth >= *cap) {
          report("capacity", where(e, n) + ": item " + str(e.item) + " admitted at depth " + str(e.depth) +
                                 ", capacity " + str(*cap));
        }
        // The depth route() reports ("the lane's depth before this item") is
        // never below the key's items certainly still unfinished when it read
        // it: admitted before this route() was called (the same actor's
        // earlier items, or any whose routed event came before the call) and
        // whose consumer call has not returned yet (no handled event so far,
        // one later). The router counts an item until its consumer returns.
        // (Only when the depth is below the key's open items at all: their count
        // bounds the proven ones, so a correct router rarely pays for the walk.)
        if (judge_depth && e.depth < open_items[e.key].size()) {
          std::uint64_t pending = 0;
          for (const std::uint64_t other : open_items[e.key]) {
            const auto r = routed_at.find(other);
            if (r == routed_at.end()) continue;  // its routed event is not logged yet: not proven admitted before
            if (!handled_somewhere(other)) continue;  // lost or dropped: judged as such, not as a depth
            const lane_event& j = log[r->second];  // logged once route() had returned
            pending += (j.actor == e.actor && j.seq < e.seq) || j.t < e.sent_ns ? 1 : 0;
          }
          if (e.depth < pending) {
            report("capacity", where(e, n) + ": route() reported depth " + str(e.depth) + " for item " + str(e.item) +
                                   ", but " + str(pending) +
                                   " items of the key admitted before it was called were still unfinished");
          }
        }
        count_in(e.item, e.key, e, n);
        break;
      }
      case lane_event_kind::refused: {
        fates[e.item] = fate::refused;
        item_key[e.item] = e.key;
        const std::optional<std::uint64_t> cap = capacity_of(e);
        if (!cap) {
          report("capacity", where(e, n) + ": item " + str(e.item) + " refused by an uncapped " +
                                 (e.own_capacity ? "route" : "router"));
        } else if (e.depth < *cap) {
          report("capacity", where(e, n) + ": item " + str(e.item) + " refused at depth " + str(e.depth) +
                                 ", below capacity " + str(*cap));
        }
        if (handles[e.item] != 0) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " was refused but reached the consumer");
        }
        break;
      }
      case lane_event_kind::unrouted:
        fates[e.item] = fate::unrouted;
        item_key[e.item] = e.key;
        break;
      case lane_event_kind::lane_created:
        ++created;
        ++open_lanes[e.key];
        last_created[e.key] = n;
        break;
      case lane_event_kind::handle_begin: {
        const auto f = fates.find(e.item);
        if (f != fates.end() && f->second != fate::admitted) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " reached the consumer but route() " +
                                     (f->second == fate::refused ? "refused it" : "never took it"));
        }
        if (++handles[e.item] != 1) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " handled " + str(handles[e.item]) + " times");
        }
        count_in(e.item, e.key, e, n);
        begun_on.try_emplace(e.item, e.lane);
        lane_first_n.try_emplace(e.lane, n);
        if (++in_consumer[e.key] != 1) {
          report("one_lane_per_key", where(e, n) + ": two consumer calls of the key at once (item " + str(e.item) +
                                         " on lane " + str(e.lane) + ")");
        }
        const auto [lk, first_use] = lane_key.try_emplace(e.lane, e.key);
        if (!first_use && lk->second != e.key) {
          report("one_lane_per_key", where(e, n) + ": lane " + str(e.lane) + " also served key " + str(lk->second));
        }
        const std::uint64_t g = generation.try_emplace(e.lane, generation.size()).first->second;
        const auto [nw, first_key] = newest.try_emplace(e.key, g);
        if (!first_key && g < nw->second) {
          report("one_lane_per_key", where(e, n) + ": served by lane " + str(e.lane) + " after a newer lane");
        }
        if (g > nw->second) nw->second = g;
        // The consumer sees the item's own (actor, seq): its routed event may come later in the log.
        const auto [last, none] = last_seq.try_emplace({e.key, e.actor}, e.seq);
        if (!none && last->second >= e.seq) {
          report("per_key_order", where(e, n) + ": actor " + str(e.actor) + "'s item seq " + str(e.seq) +
                                      " handled after its seq " + str(last->second));
        }
        last->second = e.seq;
        break;
      }
      case lane_event_kind::handled:
        returned.insert(e.item);
        if (in_consumer[e.key] > 0) --in_consumer[e.key];
        if (unfinished[e.key] > 0) --unfinished[e.key];
        open_items[e.key].erase(e.item);
        if (e.escaped || e.cancelled) {
          escaped_on.try_emplace(e.lane, e.key);  // the lane ends: lane_survives does not apply
        } else if (e.outcome != consumer_outcome::ok) {
          failed_on.try_emplace(e.lane, e.item, e.outcome);
        }
        break;
      case lane_event_kind::dropped: {
        const auto f = fates.find(e.item);
        if (f != fates.end() && f->second != fate::admitted) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " was dropped, but route() " +
                                     (f->second == fate::refused ? "refused it" : "never took it"));
        }
        if (handles[e.item] != 0) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " was dropped after a consumer began it");
        }
        if (!lost.insert(e.item).second) {
          report("exactly_once", where(e, n) + ": item " + str(e.item) + " dropped twice");
        }
        item_key.try_emplace(e.item, e.key);
        if (counted.count(e.item) != 0 && unfinished[e.key] > 0) --unfinished[e.key];
        counted.insert(e.item);  // a late routed event must not count it in again
        open_items[e.key].erase(e.item);
        // velo's exit guard: a lane that ends leaves the map before it drops
        // what it held, so only items whose route() began while it was the
        // key's lane — no later than its close — may be dropped with it; an
        // item routed after that went to a dead lane's sender (a black hole).
        const auto closes = escape_closes.find(e.key);
        bool covered = false;
        if (closes != escape_closes.end()) {
          for (const std::int64_t c : closes->second) covered = covered || e.sent_ns <= c;
        }
        if (closes == escape_closes.end()) {
          report("no_black_hole", where(e, n) + ": item " + str(e.item) +
                                      " was dropped unhandled, but no lane of its key ended by an escaped panic " +
                                      "or a cancellation");
        } else if (!covered) {
          report("no_black_hole", where(e, n) + ": item " + str(e.item) + ", routed at t=" +
                                      std::to_string(e.sent_ns) + "ns, after the key's lane ended by an escaped " +
                                      "panic or a cancellation closed at t=" + std::to_string(closes->second.back()) +
                                      "ns, was dropped: a dead lane swallowed it");
        }
        break;
      }
      case lane_event_kind::lane_closed: {
        ++closed;
        const auto lk = lane_key.find(e.lane);
        if (lk != lane_key.end()) --open_lanes[lk->second];
        if (const auto esc = escaped_on.find(e.lane); esc != escaped_on.end()) {
          escape_closes[esc->second].push_back(e.t);
        }
        // A consumer that contains its own failures keeps its lane: the lane
        // closes only as any lane does, idle (reaped) or after the drop, and
        // never with work of its key still queued. A lane that an escaped
        // panic or a cancel_lane step ended was ended by that, not by the
        // contained failure before it (found by explore --generate lanes).
        const auto f = failed_on.find(e.lane);
        if (f != failed_on.end() && lk != lane_key.end() && escaped_on.find(e.lane) == escaped_on.end()) {
          const std::string after = " after its consumer's " + std::string(name_of(f->second.second)) + " on item " +
                                    str(f->second.first);
          // The lane's own unfinished items: the one its consumer was running,
          // and those not yet begun that were routed before a successor lane of
          // the key opened (after a reap, the next route opens a new lane, whose
          // items may be logged before this lane's close).
          const std::uint64_t key = lk->second;
          const auto succ = last_created.find(key);
          const auto used = lane_first_n.find(e.lane);
          const bool successor = succ != last_created.end() && used != lane_first_n.end() && succ->second > used->second;
          std::uint64_t own = 0;
          for (const std::uint64_t item : open_items[key]) {
            const auto b = begun_on.find(item);
            if (b != begun_on.end()) {
              own += b->second == e.lane ? 1 : 0;
              continue;
            }
            const auto r = routed_at.find(item);
            if (!successor || (r != routed_at.end() && r->second < succ->second)) ++own;
          }
          if (own > 0) {
            report("lane_survives", where(e, n) + ": lane " + str(e.lane) + " closed with " + str(own) +
                                        " unfinished items of its key" + after);
          } else if (!s.reaps && !dropped) {
            report("lane_survives", where(e, n) + ": lane " + str(e.lane) +
                                        " closed with idle_ttl off and the router not dropped" + after);
          }
        }
        break;
      }
      case lane_event_kind::router_dropped:
        dropped = true;
        break;
      case lane_event_kind::cancel_lane:
        // Cancelled mid-call or idle, the lane ends (unless it already had):
        // what its channel held when it closes may be dropped with it.
        if (e.lane != 0) escaped_on.try_emplace(e.lane, e.key);
        break;
    }
  }
  if (found || !s.end_of_run) return found;

  for (const auto& [item, f] : fates) {
    if (f != fate::admitted || returned.count(item) != 0 || lost.count(item) != 0) continue;
    const std::uint64_t key = item_key[item];
    if (handles[item] != 0) {
      // Begun is not handled: a consumer call that never returns holds its
      // item (and its lane) for ever.
      if (!found) {
        found = violation{"liveness", "key " + str(key) + ": item " + str(item) +
                                          "'s consumer call began but had not returned at the end of the liveness budget"};
      }
    } else if (open_lanes[key] <= 0) {
      report("exactly_once", "key " + str(key) + ": item " + str(item) +
                                 " was admitted but never handled, and no lane of the key is left (lost)");
    } else if (!found) {
      found = violation{"liveness", "key " + str(key) + ": item " + str(item) +
                                        " admitted and still unhandled at the end of the liveness budget"};
    }
  }
  if (dropped && created != closed) {
    std::string keys;  // the keys whose lanes the log saw created and not closed
    for (const auto& [key, open] : open_lanes) {
      if (open > 0) keys += (keys.empty() ? "" : ", ") + str(key);
    }
    report("lanes_gone", str(created - closed) + " of " + str(created) +
                             " lanes still open after the router was dropped (keys " +
                             (keys.empty() ? std::string("unknown") : keys) + ")");
  }
  return found;
}

}  // namespace lockstep::scenario
