#include "tools/scenario/composed_oracles.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace lockstep::scenario {
namespace {

std::string str(std::uint64_t n) { return std::to_string(n); }

std::string answer_text(flight_answer a, std::uint64_t v) {
  return a == flight_answer::abandoned ? std::string("abandoned") : std::string(name_of(a)) + ":" + str(v);
}

std::string where(const composed_event& e, std::size_t n) {
  return "key " + str(e.key) + " at t=" + std::to_string(e.t) + "ns (composed event #" + str(n) + ")";
}

/// One lane item's path through the composition.
struct path {
  std::uint64_t key = 0;
  bool admitted = false;
  bool handled = false;
  /// The consumer call returned an error or panicked (and contained it):
  /// the item ends in the consumer, before any lookup or forward.
  std::optional<consumer_outcome> failed;
  int lookups = 0;
  int outs = 0;  // forwarded or kept
  std::optional<composed_event> lookup;
};

}  // namespace

std::optional<violation> check_composed_logs(const composed_logs& logs, const composed_oracle_settings& s) {
  const std::set<std::string> on(s.enabled.begin(), s.enabled.end());
  if (on.count("delivery") == 0) return std::nullopt;
  std::optional<violation> found;
  auto report = [&](std::string message) {
    if (!found) found = violation{"delivery", std::move(message)};
  };

  std::map<std::uint64_t, path> items;  // lane item -> its path
  for (const lane_event& e : *logs.lanes) {
    if (e.kind == lane_event_kind::routed) {
      items[e.item].admitted = true;
      items[e.item].key = e.key;
    }
    if (e.kind == lane_event_kind::handled) {
      items[e.item].handled = true;
      if (e.outcome != consumer_outcome::ok) items[e.item].failed = e.outcome;
    }
  }
  // What each waiter read, and the ok values each flight handed out, from the flight log.
  std::map<std::uint64_t, const flight_event*> read_by;  // waiter -> its answered event
  std::map<std::uint64_t, std::set<std::uint64_t>> ok_values;  // flight -> values read as ok
  if (logs.flights) {
    for (const flight_event& e : *logs.flights) {
      if (e.kind != flight_event_kind::answered) continue;
      read_by.try_emplace(e.waiter, &e);
      if (e.answer == flight_answer::ok) ok_values[e.flight].insert(e.value);
    }
  }
  // What the shards did with each shard item.
  std::map<std::uint64_t, int> shard_outs;  // shard item -> completed / expired / coalesced
  std::set<std::uint64_t> handed_back;
  if (logs.shards) {
    for (const shard_event& e : *logs.shards) {
      if (e.kind == shard_event_kind::completed || e.kind == shard_event_kind::expired ||
          e.kind == shard_event_kind::coalesced) {
        ++shard_outs[e.item];
      }
      if (e.kind == shard_event_kind::handed_back) handed_back.insert(e.item);
    }
  }

  std::map<std::uint64_t, std::uint64_t> forwarded_as;  // shard item -> lane item
  const std::vector<composed_event>& log = *logs.composed;
  for (std::size_t n = 0; n < log.size(); ++n) {
    const composed_event& e = log[n];
    path& p = items[e.item];
    const std::string at = where(e, n) + ": item " + str(e.item);
    if (!p.admitted) {
      report(at + " reached the consumer's " + std::string(name_of(e.kind)) + " but the lanes never admitted it");
    }
    if (p.failed) {
      report(at + " reached the consumer's " + std::string(name_of(e.kind)) + " although its consumer call ended in " +
             std::string(name_of(*p.failed)));
    }
    switch (e.kind) {
      case composed_event_kind::looked_up: {
        if (++p.lookups != 1) report(at + " looked up " + str(p.lookups) + " times");
        p.lookup = e;
        const auto r = read_by.find(e.waiter);
        if (r == read_by.end()) {
          report(at + ": its lookup (waiter " + str(e.waiter) + ") read " + answer_text(e.answer, e.value) +
                 " but the flight log has no answer for that waiter");
          break;
        }
        const flight_event& f = *r->second;
        if (f.flight != e.flight || f.answer != e.answer || (e.answer != flight_answer::abandoned && f.value != e.value)) {
          report(at + ": its lookup read " + answer_text(e.answer, e.value) + " from flight " + str(e.flight) +
                 ", the flight log says waiter " + str(e.waiter) + " read " + answer_text(f.answer, f.value) +
                 " from flight " + str(f.flight));
        }
        if (e.answer == flight_answer::ok && ok_values[e.flight].size() > 1) {
          report(at + ": flight " + str(e.flight) + " handed its waiters " + str(ok_values[e.flight].size()) +
                 " different ok values");
        }
        break;
      }
      case composed_event_kind::forwarded:
      case composed_event_kind::kept: {
        if (++p.outs != 1) report(at + " forwarded or kept back " + str(p.outs) + " times");
        if (s.lookup && !p.lookup) {
          report(at + " was " + std::string(e.kind == composed_event_kind::kept ? "kept back" : "forwarded") +
                 " before any lookup");
          break;
        }
        if (e.kind == composed_event_kind::kept) {
          if (p.lookup && p.lookup->answer == flight_answer::ok) {
            report(at + " was kept back although its lookup answered " + answer_text(flight_answer::ok, p.lookup->value));
          }
          break;
        }
        if (p.lookup && p.lookup->answer != flight_answer::ok) {
          report(at + " was forwarded although its lookup answered " +
                 answer_text(p.lookup->answer, p.lookup->value));
        } else if (p.lookup && p.lookup->value != e.value) {
          report(at + " was forwarded with value " + str(e.value) + ", its lookup read " + str(p.lookup->value));
        }
        if (!forwarded_as.try_emplace(e.shard_item, e.item).second) {
          report(at + ": shard item " + str(e.shard_item) + " forwarded twice");
        }
        if (e.sent && handed_back.count(e.shard_item) != 0) {
          report(at + ": shard item " + str(e.shard_item) + " was sent, but the shard log has it handed back");
        }
        if (!e.sent && handed_back.count(e.shard_item) == 0) {
          report(at + ": shard item " + str(e.shard_item) + " was handed back, but the shard log has no such event");
        }
        if (e.sent && shard_outs[e.shard_item] > 1) {
          report(at + ": shard item " + str(e.shard_item) + " came out of the shards " + str(shard_outs[e.shard_item]) +
                 " times");
        }
        break;
      }
    }
  }
  if (found || !s.end_of_run) return found;

  for (const auto& [item, p] : items) {
    if (!p.admitted || p.failed) continue;  // a failed consumer call is where the item ends
    const std::string at = "key " + str(p.key) + ": item " + str(item);
    if (s.lookup && p.lookups == 0) {
      report(at + " was admitted by the lanes but never looked up (lost before the single-flight table)");
    } else if (s.forward && p.outs == 0) {
      report(at + " was admitted by the lanes but never forwarded to the shards nor kept back (lost in the consumer)");
    }
  }
  for (const composed_event& e : log) {
    if (e.kind != composed_event_kind::forwarded || !e.sent) continue;
    if (shard_outs[e.shard_item] == 0) {
      report("key " + str(e.key) + ": item " + str(e.item) + " was forwarded to the shards as shard item " +
             str(e.shard_item) + ", which never completed, expired or coalesced (lost in the shards)");
    }
  }
  return found;
}

}  // namespace lockstep::scenario
