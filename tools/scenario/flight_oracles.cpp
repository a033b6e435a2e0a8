#include "tools/scenario/flight_oracles.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace lockstep::scenario {
namespace {

struct flight_story {
  std::uint64_t key = 0;
  int leaders = 0, workers = 0;
  bool cancelled = false, published = false, has_answer = false;
  std::size_t closed_at = SIZE_MAX;  // index of its cancelled or retired event
  std::size_t led_at = SIZE_MAX;     // index of its leader's joined event
  flight_answer answer = flight_answer::ok;
  flight_answer published_answer = flight_answer::ok;  // what its worker answers, logged as publication began
  std::uint64_t published_value = 0;
  std::uint64_t value = 0;
};

struct waiter_story {
  std::uint64_t key = 0, flight = 0;
  std::int64_t t = 0;
  std::size_t at = 0;
  int ends = 0;
};

std::string where(const flight_event& e, std::size_t i) {
  return "key " + std::to_string(e.key) + ", flight " + std::to_string(e.flight) + ", t=" + std::to_string(e.t) +
         "ns, event " + std::to_string(i);
}

std::string shown(flight_answer a, std::uint64_t v) {
  return a == flight_answer::abandoned ? std::string("abandoned") : std::string(name_of(a)) + ":" + std::to_string(v);
}

bool on(const flight_oracle_settings& s, const char* name) {
  for (const auto& n : s.enabled)
    if (n == name) return true;
  return false;
}

}  // namespace

std::optional<violation> check_flight_log(const std::vector<flight_event>& log, const flight_oracle_settings& settings) {
  // std::map: iteration order (and so which violation is reported first) is the ids' order.
  std::map<std::uint64_t, flight_story> flights;
  std::map<std::uint64_t, waiter_story> waiters;
  for (std::size_t i = 0; i < log.size(); ++i) {
    const flight_event& e = log[i];
    flight_story& f = flights[e.flight];
    f.key = e.key;
    const std::string at = where(e, i);
    switch (e.kind) {
      case flight_event_kind::joined: {
        if (e.leader && ++f.leaders > 1 && on(settings, "one_leader"))
          return violation{"one_leader", "a second waiter (" + std::to_string(e.waiter) + ") leads the flight: " + at};
        if (e.leader && on(settings, "one_leader")) {
          // Another flight of the key was in the table before this join was
          // called (its leader had logged) and had not closed before this join
          // returned (its close is logged under the lock join takes).
          for (const auto& [id, g] : flights) {
            if (id != e.flight && g.key == e.key && g.led_at < e.called_at && (g.closed_at == SIZE_MAX || g.closed_at > i))
              return violation{"one_leader", "waiter " + std::to_string(e.waiter) + " started a second flight while flight " +
                                                 std::to_string(id) + " still held the key: " + at};
          }
          f.led_at = i;
        }
        if (f.closed_at != SIZE_MAX && e.called_at > f.closed_at && on(settings, "servable")) {
          return violation{"servable", "waiter " + std::to_string(e.waiter) + " joined a flight that was " +
                                           (f.cancelled ? "cancelled" : "retired") + " at event " +
                                           std::to_string(f.closed_at) + " before it called join: " + at};
        }
        waiter_story& w = waiters[e.waiter];
        w.key = e.key;
        w.flight = e.flight;
        w.t = e.t;
        w.at = i;
        break;
      }
      case flight_event_kind::led:
        if (++f.workers > 1 && on(settings, "one_leader")) return violation{"one_leader", "a second worker started: " + at};
        break;
      case flight_event_kind::published:
        if (f.cancelled && on(settings, "cancel_publish"))
          return violation{"cancel_publish", "publication began after the flight was cancelled: " + at};
        f.published = true;
        f.published_answer = e.answer;
        f.published_value = e.value;
        break;
      case flight_event_kind::cancelled:
        if (f.published && on(settings, "cancel_publish"))
          return violation{"cancel_publish", "cancelled after publication began: " + at};
        f.cancelled = true;
        if (f.closed_at == SIZE_MAX) f.closed_at = i;
        break;
      case flight_event_kind::answered: {
        // The flight's one outcome is what its worker answered: an answer (not
        // "abandoned") read from a flight is the one its worker published, and
        // publication is logged before the answer is sent.
        if (e.answer != flight_answer::abandoned && on(settings, "same_value")) {
          if (!f.published) {
            return violation{"same_value", "waiter " + std::to_string(e.waiter) + " read " + shown(e.answer, e.value) +
                                               " from flight " + std::to_string(e.flight) +
                                               ", whose worker had published nothing: " + at};
          }
          if (f.published_answer != e.answer || f.published_value != e.value) {
            return violation{"same_value", "waiter " + std::to_string(e.waiter) + " read " + shown(e.answer, e.value) +
                                               ", but flight " + std::to_string(e.flight) + "'s worker published " +
                                               shown(f.published_answer, f.published_value) + ": " + at};
          }
        }
        // Cancellation is the last waiter leaving: nobody is left to read anything.
        if (f.cancelled && on(settings, "cancel_publish")) {
          return violation{"cancel_publish", "waiter " + std::to_string(e.waiter) + " read " + shown(e.answer, e.value) +
                                                 " from a flight cancelled while it still waited: " + at};
        }
        if (f.has_answer && (f.answer != e.answer || f.value != e.value) && on(settings, "same_value")) {
          return violation{"same_value", "waiter " + std::to_string(e.waiter) + " read " + shown(e.answer, e.value) +
                                             ", another waiter of the flight read " + shown(f.answer, f.value) + ": " + at};
        }
        f.has_answer = true;
        f.answer = e.answer;
        f.value = e.value;
        [[fallthrough]];
      }
      case flight_event_kind::left: {
        waiter_story& w = waiters[e.waiter];
        if (++w.ends > 1 && on(settings, "answered"))
          return violation{"answered", "waiter " + std::to_string(e.waiter) + " ended twice: " + at};
        break;
      }
      case flight_event_kind::retired:
        if (f.closed_at == SIZE_MAX) f.closed_at = i;
        break;
      case flight_event_kind::panicked:
      case flight_event_kind::abandoned:
        break;
    }
  }
  if (!settings.end_of_run) return std::nullopt;
  if (on(settings, "one_leader")) {
    for (const auto& [id, f] : flights) {
      if (id != 0 && f.leaders != 1) {
        return violation{"one_leader", "flight " + std::to_string(id) + " of key " + std::to_string(f.key) + " had " +
                                           std::to_string(f.leaders) + " leaders by the end of the run"};
      }
    }
  }
  if (on(settings, "answered")) {
    for (const auto& [id, w] : waiters) {
      if (w.ends == 0) {
        return violation{"answered", "waiter " + std::to_string(id) + " of key " + std::to_string(w.key) + ", flight " +
                                         std::to_string(w.flight) + ", joined at t=" + std::to_string(w.t) +
                                         "ns (event " + std::to_string(w.at) +
                                         "), was neither answered nor left by the end of the liveness budget"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace lockstep::scenario
