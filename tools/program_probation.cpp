// tools/program_probation.cpp — the `probation` program: requests on several
// cores ask a single-flight table (engine/single_flight.hpp) for a few keys'
// upstream work. The first request of a flight leads: it starts a worker that
// answers, throws, is cancelled by the runtime, or (stops_early) is stopped
// by a watchdog when every waiter left. Requests stay for the answer, leave
// early, or are cancelled while waiting; they come in `waves` (wave w at w
// µs of virtual time), so each key sees several flights. All of it is fixed
// by index: request i of a wave leaves early when leave_every divides i + 1, is cancelled when
// cancel_every does; flight f's worker throws when throw_every divides f, is
// cancelled when cancel_worker_every does. Seeds change only the schedule
// and the yields each fiber takes.
//
// Oracles: one leader per flight, and no second flight of a key while one
// holds it; every request that stayed gets an answer (a lost answer leaves it
// parked forever: the run fails as a deadlock); what it reads is its own
// flight's answer, or "abandoned" only from a flight whose worker could
// abandon; no publication after a cancellation and no cancellation after
// publication began (nor under a counted waiter); every flight resolved and
// retired exactly once; the table's invariants hold throughout; at the end
// the table is empty and every key servable (a fresh join leads).
// canary=true runs a table whose resolution publishes like tokio's
// watch::send — skipped while nobody is subscribed — so a request that joined
// but had not yet reached wait() hangs.
// The canary table, flight stories and ordering oracles live in
// tools/models/probation_model.hpp, shared with
// engine/tests/test_single_flight_races.cpp.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
#include "tools/models/probation_model.hpp"
#include "tools/program_options.hpp"
#include "tools/programs.hpp"

namespace lockstep::cli {
namespace {

using sim::runtime;
using sim::task;
using key_type = std::uint32_t;
using value_type = std::int64_t;
constexpr value_type abandoned_value = -1;
value_type answer_for(std::uint64_t flight) { return 1000 + static_cast<value_type>(flight); }
std::string str(std::uint64_t n) { return std::to_string(n); }

/// The canary's table (tools/models/probation_model.hpp): a resolution's
/// publication is skipped while no request is subscribed to the outcome;
/// everything else is as the real one.
using lossy_flight = models::probation::broken_flight<runtime, key_type, value_type,
                                                      models::probation::bug::send_skips_without_subscribers>;

// --- the program ---------------------------------------------------------------------

enum class request_kind : std::uint8_t { stays, leaves_early, cancelled_while_waiting };
enum class worker_kind : std::uint8_t { answers, throws, cancelled_by_runtime };

/// Virtual time between waves: each wave's flights have long settled by the next.
constexpr std::int64_t wave_gap_ns = 1000;

struct settings {
  std::uint64_t keys, waves, requests, leave_every, cancel_every, throw_every, cancel_worker_every, worker_yields;
  bool stops_early, canary;
};

struct worker_panic : std::runtime_error {
  worker_panic() : std::runtime_error("deliberate worker panic (throw_every)") {}
};

struct request_record {
  key_type key = 0;
  std::uint64_t wave = 0;
  request_kind kind = request_kind::stays;
  bool joined = false, leader = false, returned = false;
  std::uint64_t flight = 0;
  std::optional<value_type> got;
};

/// Everything one run records. The observer runs under the table lock or in
/// destructors, where nothing may throw: it records the first broken rule and
/// the main fiber reports it (sim::check) once the run has settled.
struct world {
  settings cfg;
  models::probation::flight_log<key_type> flights;
  std::vector<request_record> requests;
  std::vector<task> workers, helpers, watchdogs;
  std::string broken_oracle, broken_message;

  void violate(const char* oracle, std::string what) {
    if (broken_oracle.empty()) {
      broken_oracle = oracle;
      broken_message = std::move(what);
    }
  }
  void report() const { sim::check(broken_oracle.empty(), broken_oracle, broken_message); }

  worker_kind worker_for(std::uint64_t flight) const {
    if (cfg.throw_every != 0 && flight % cfg.throw_every == 0) return worker_kind::throws;
    if (cfg.cancel_worker_every != 0 && flight % cfg.cancel_worker_every == 0) return worker_kind::cancelled_by_runtime;
    return worker_kind::answers;
  }

  void observe(key_type key, std::uint64_t id, flight_event e) {
    models::probation::observe(flights, key, id, e,
                               [this](const char* oracle, std::string what) { violate(oracle, std::move(what)); });
  }
};

void yield_some(runtime& rt, std::uint64_t most) {
  for (std::uint64_t n = rt.random() % (most + 1); n > 0; --n) rt.yield_now();
}

template <class Flight>
void start_worker(runtime& rt, world& w, Flight& f, key_type key, std::shared_ptr<typename Flight::slot> work) {
  // Made before the spawn and moved in: a worker dropped before it ever ran still answers.
  typename Flight::resolution res(f, key, work, abandoned_value, "key " + str(key));
  const worker_kind kind = w.worker_for(work->id());
  const auto core = static_cast<std::uint32_t>(rt.random() % rt.cores());
  task t = rt.spawn_on(core, "worker", [&rt, &w, kind, work, res = std::move(res)]() mutable {
    try {
      yield_some(rt, w.cfg.worker_yields);
      if (kind == worker_kind::throws) throw worker_panic();
      if (!work->begin_publishing()) return;  // every waiter left: res answers "abandoned" to nobody
      rt.yield_now();  // a waiter leaving now finds the publication begun and lets it finish
      res.answer(answer_for(work->id()));
    } catch (const fiber_cancelled&) {
      throw;
    } catch (const worker_panic&) {
      // The worker's task boundary: the resolution answered "abandoned" on the way out.
    }
  });
  w.workers.push_back(t);
  if (kind == worker_kind::cancelled_by_runtime) {
    w.helpers.push_back(rt.spawn_on(core, "worker.killer", [&rt, t]() mutable {
      yield_some(rt, 3);
      t.cancel();
    }));
  }
  if (w.cfg.stops_early) {
    w.watchdogs.push_back(rt.spawn_on((core + 1) % rt.cores(), "worker.watchdog", [work, t]() mutable {
      work->cancelled();
      t.cancel();
    }));
  }
}

template <class Flight>
void request_body(runtime& rt, world& w, Flight& f, std::size_t i) {
  request_record& rec = w.requests[i];
  rt.sleep_until(static_cast<std::int64_t>(rec.wave) * wave_gap_ns);
  yield_some(rt, 2);
  auto j = f.join(rec.key);
  rec.joined = true;
  rec.leader = j.leader;
  rec.flight = j.work->id();
  // Made just after the join, so destroyed just before the waiter guard, on
  // every way out (cancellation included).
  models::probation::still_counted<world> on_leaving{w, rec.flight, i};
  if (j.leader) start_worker<Flight>(rt, w, f, rec.key, j.work);
  yield_some(rt, 2);
  if (rec.kind == request_kind::leaves_early) return;  // the guard leaves with it
  std::optional<value_type> got = j.work->wait();
  rec.returned = true;
  rec.got = got;
}

void check_outcome(world& w) {
  for (const auto& [id, s] : w.flights) {
    const std::string f = "flight " + str(id) + ": ";
    if (s.started != 1) w.violate("one leader per flight", f + "started " + std::to_string(s.started) + " times");
    if (s.retired != 1) w.violate("every flight resolved", f + "retired " + std::to_string(s.retired) + " times");
    int leaders = 0;
    for (const request_record& r : w.requests) leaders += r.joined && r.leader && r.flight == id;
    if (leaders != 1) w.violate("one leader per flight", f + std::to_string(leaders) + " leaders");
  }
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const request_record& r = w.requests[i];
    const std::string who = "request " + str(i) + " (flight " + str(r.flight) + "): ";
    if (r.kind == request_kind::stays && !r.returned) w.violate("every waiter that stayed is answered", who + "never answered");
    if (!r.returned) continue;
    if (!r.got) {
      w.violate("every waiter that stayed is answered", who + "wait() returned no value");
      continue;
    }
    const auto& s = w.flights[r.flight];
    if (*r.got == answer_for(r.flight)) {
      if (!s.answered) w.violate("waiters read their own flight's outcome", who + "read an answer never given");
    } else if (*r.got == abandoned_value) {
      if (!s.abandoned) w.violate("waiters read their own flight's outcome", who + "read 'abandoned' from a flight that was not");
      if (w.worker_for(r.flight) == worker_kind::answers)
        w.violate("waiters read their own flight's outcome", who + "was told 'abandoned' though its worker answers");
    } else {
      w.violate("waiters read their own flight's outcome", who + "read a foreign value " + std::to_string(*r.got));
    }
  }
}

template <class Flight>
void drive(runtime& rt, const settings& s) {
  world w;
  w.cfg = s;
  for (std::uint64_t wave = 0; wave < s.waves; ++wave) {
    for (std::uint64_t k = 0; k < s.keys; ++k) {
      for (std::uint64_t i = 0; i < s.requests; ++i) {
        request_record r;
        r.key = static_cast<key_type>(k);
        r.wave = wave;
        if (s.leave_every != 0 && (i + 1) % s.leave_every == 0) {
          r.kind = request_kind::leaves_early;
        } else if (s.cancel_every != 0 && (i + 1) % s.cancel_every == 0) {
          r.kind = request_kind::cancelled_while_waiting;
        }
        w.requests.push_back(r);
      }
    }
  }
  Flight f(rt, [&w](const key_type& key, std::uint64_t id, flight_event e) { w.observe(key, id, e); });
  std::vector<task> requests;
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    requests.push_back(rt.spawn_on(static_cast<std::uint32_t>(i % rt.cores()), "request." + str(i),
                                   [&rt, &w, &f, i] { request_body<Flight>(rt, w, f, i); }));
  }
  bool done = false;
  task monitor = rt.spawn_on(rt.cores() - 1, "monitor", [&] {
    // Through every wave, then it stops: a hung request must still end the run as a deadlock.
    const auto until = static_cast<std::int64_t>(s.waves) * wave_gap_ns;
    for (std::uint64_t n = 0; !done && rt.now() <= until; ++n) {
      for (std::uint64_t k = 0; k < s.keys; ++k) {
        if (f.waiting_on(static_cast<key_type>(k)) > s.requests * s.waves)
          w.violate("waiter counts never underflow", "key " + str(k) + " counts too many waiters");
      }
      try {
        f.check_invariants();
      } catch (const std::logic_error& e) {
        w.violate("the table's invariants hold", e.what());
      }
      if (n % 8 == 7) {
        rt.sleep_for(wave_gap_ns / 4);
      } else {
        rt.yield_now();
      }
    }
  });
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    if (w.requests[i].kind != request_kind::cancelled_while_waiting) continue;
    rt.sleep_until(static_cast<std::int64_t>(w.requests[i].wave) * wave_gap_ns);
    yield_some(rt, 4);
    requests[i].cancel();
  }
  for (task& t : requests) t.join();
  for (std::size_t i = 0; i < w.workers.size(); ++i) w.workers[i].join();
  for (std::size_t i = 0; i < w.helpers.size(); ++i) w.helpers[i].join();
  for (task& t : w.watchdogs) {
    t.cancel();
    t.join();
  }
  done = true;
  monitor.join();
  check_outcome(w);
  w.report();
  sim::check(f.in_flight() == 0, "the table is empty at the end", str(f.in_flight()) + " flights left in it");
  for (std::uint64_t k = 0; k < s.keys; ++k) {
    auto fresh = f.join(static_cast<key_type>(k));
    sim::check(fresh.leader, "every key servable at the end", "a fresh join of key " + str(k) + " did not lead");
    sim::check(f.waiting_on(static_cast<key_type>(k)) == 1, "every key servable at the end",
               "a fresh join of key " + str(k) + " is not counted once");
  }
  w.report();
}

settings settings_of(const nlohmann::json& o) {
  return settings{o["keys"],        o["waves"],               o["requests"],            o["leave_every"],   o["cancel_every"],
                  o["throw_every"], o["cancel_worker_every"], o["worker_yields"], o["stops_early"],
                  o["canary"]};
}

void run_probation(runtime& rt, const nlohmann::json& options) {
  const settings s = settings_of(options);
  if (s.canary) {
    drive<lossy_flight>(rt, s);
  } else {
    drive<single_flight<runtime, key_type, value_type>>(rt, s);
  }
}

nlohmann::json normalise_probation(const json_reader& r) {
  const nlohmann::json& given = options_object(r);
  reject_unknown_options(r, given,
                         {"keys", "waves", "requests", "leave_every", "cancel_every", "throw_every", "cancel_worker_every",
                          "worker_yields", "stops_early", "canary"});
  nlohmann::json o;
  o["keys"] = option_u64(r, given, "keys", 2, 1, 64);
  o["waves"] = option_u64(r, given, "waves", 3, 1, 64);
  o["requests"] = option_u64(r, given, "requests", 4, 1, 256);
  o["leave_every"] = option_u64(r, given, "leave_every", 3, 0, 256);
  o["cancel_every"] = option_u64(r, given, "cancel_every", 4, 0, 256);
  o["throw_every"] = option_u64(r, given, "throw_every", 3, 0, 1'000'000);
  o["cancel_worker_every"] = option_u64(r, given, "cancel_worker_every", 4, 0, 1'000'000);
  o["worker_yields"] = option_u64(r, given, "worker_yields", 2, 0, 1000);
  o["stops_early"] = option_bool(r, given, "stops_early", true);
  o["canary"] = option_bool(r, given, "canary", false);
  return o;
}

}  // namespace

program probation_program() {
  program p;
  p.description =
      "requests share single-flight work per key; workers answer, throw, are cancelled or stop early; "
      "oracles: one leader per flight, every staying waiter answered (a hang is a deadlock), no publication "
      "after a cancellation nor cancellation after publication, key servable and table empty at the end "
      "(canary=true skips a publication nobody is subscribed to)";
  p.normalise = normalise_probation;
  p.run = run_probation;
  return p;
}

}  // namespace lockstep::cli
