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
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/single_flight.hpp"
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

// --- the canary's table --------------------------------------------------------

/// A single-flight table with one defect: a resolution's publication is
/// skipped while no request is subscribed to the outcome. Everything else
/// (state machine, join lock, identity-checked removal) is as the real one.
class lossy_flight {
  struct table;

 public:
  using observer = single_flight<runtime, key_type, value_type>::observer;

  class slot {
   public:
    slot(runtime& rt, key_type key, std::uint64_t id, std::shared_ptr<const observer> obs)
        : key_(key), id_(id), obs_(std::move(obs)), state_(rt, 0), waiters_(rt, 0), cancel_(rt), outcome_(rt, std::nullopt) {}
    bool begin_publishing() { return leave_running(publishing, flight_event::publishing); }
    bool begin_cancel() { return leave_running(cancelled_state, flight_event::cancelled); }
    void cancelled() { cancel_.cancelled(); }
    std::optional<value_type> wait() {
      auto rx = outcome_.subscribe();
      ++subscribers_;
      struct unsubscribe {
        int& n;
        ~unsubscribe() { --n; }
      } leave{subscribers_};
      while (true) {
        std::optional<value_type> done = rx.borrow_and_update();
        if (done) return done;
        if (!rx.changed()) return std::nullopt;
      }
    }
    [[nodiscard]] std::uint64_t id() const { return id_; }

   private:
    friend class lossy_flight;
    static constexpr std::uint8_t cancelled_state = 1, publishing = 2;
    bool leave_running(std::uint8_t to, flight_event e) {
      std::uint8_t expected = 0;
      if (!state_.compare_exchange(expected, to)) return false;
      emit(e);
      return true;
    }
    void emit(flight_event e) const { (*obs_)(key_, id_, e); }
    void publish(value_type v) {
      if (subscribers_ == 0) return;  // the defect: nobody listening, nothing stored
      outcome_.send_replace(v);
    }
    key_type key_;
    std::uint64_t id_;
    std::shared_ptr<const observer> obs_;
    runtime::atomic<std::uint8_t> state_;
    runtime::atomic<std::size_t> waiters_;
    runtime::cancellation_token cancel_;
    runtime::watch<std::optional<value_type>> outcome_;
    int subscribers_ = 0;
  };

  class waiter {
   public:
    waiter(std::shared_ptr<table> t, key_type key, std::shared_ptr<slot> s)
        : t_(std::move(t)), key_(key), slot_(std::move(s)) {}
    waiter(waiter&& o) noexcept : t_(o.t_), key_(o.key_), slot_(std::move(o.slot_)) {}
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    waiter& operator=(waiter&&) = delete;
    ~waiter() {
      if (!slot_) return;
      std::lock_guard lock(t_->mu);
      if (slot_->waiters_.fetch_sub(1) != 1) return;
      if (slot_->begin_cancel()) {
        slot_->cancel_.cancel();
        remove_locked(*t_, key_, slot_);
      }
    }

   private:
    std::shared_ptr<table> t_;
    key_type key_;
    std::shared_ptr<slot> slot_;
  };

  class resolution {
   public:
    resolution(const lossy_flight& f, key_type key, std::shared_ptr<slot> s, value_type abandoned, std::string)
        : t_(f.t_), key_(key), abandoned_(abandoned), slot_(std::move(s)) {}
    resolution(resolution&& o) : t_(o.t_), key_(o.key_), abandoned_(o.abandoned_), slot_(std::move(o.slot_)) {}
    resolution(const resolution&) = delete;
    resolution& operator=(const resolution&) = delete;
    resolution& operator=(resolution&&) = delete;
    void answer(value_type v) {
      slot_->publish(v);
      abandoned_.reset();
      slot_->emit(flight_event::answered);
    }
    ~resolution() {
      if (!slot_) return;
      if (abandoned_) {
        slot_->publish(*abandoned_);
        slot_->emit(flight_event::abandoned);
      }
      std::lock_guard lock(t_->mu);
      remove_locked(*t_, key_, slot_);
      slot_->emit(flight_event::retired);
    }

   private:
    std::shared_ptr<table> t_;
    key_type key_;
    std::optional<value_type> abandoned_;
    std::shared_ptr<slot> slot_;
  };

  struct joined {
    std::shared_ptr<slot> work;
    bool leader;
    waiter guard;
  };

  lossy_flight(runtime& rt, observer obs)
      : t_(std::make_shared<table>(rt, std::make_shared<const observer>(std::move(obs)))) {}

  joined join(key_type key) {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    bool leader = false;
    if (it == t_->inflight.end()) {
      it = t_->inflight.emplace(key, std::make_shared<slot>(t_->rt, key, ++t_->next_id, t_->obs)).first;
      leader = true;
      it->second->emit(flight_event::started);
    }
    it->second->waiters_.fetch_add(1);
    return joined{it->second, leader, waiter(t_, key, it->second)};
  }
  std::size_t waiting_on(const key_type& key) const {
    std::lock_guard lock(t_->mu);
    auto it = t_->inflight.find(key);
    return it == t_->inflight.end() ? 0 : it->second->waiters_.load();
  }
  std::size_t in_flight() const {
    std::lock_guard lock(t_->mu);
    return t_->inflight.size();
  }
  void check_invariants() const {
    std::lock_guard lock(t_->mu);
    for (auto& [key, held] : t_->inflight) {
      const std::uint8_t state = held->state_.load();
      if (state == slot::cancelled_state) throw std::logic_error("a cancelled slot is still in the table");
      if (held->waiters_.load() == 0 && state != slot::publishing)
        throw std::logic_error("an unpublished slot without waiters is in the table");
    }
  }

 private:
  struct table {
    table(runtime& r, std::shared_ptr<const observer> o) : rt(r), mu(r), obs(std::move(o)) {}
    runtime& rt;
    runtime::mutex mu;
    std::map<key_type, std::shared_ptr<slot>> inflight;
    std::uint64_t next_id = 0;
    std::shared_ptr<const observer> obs;
  };
  /// Removes the key's entry only if it still is `held`; the caller holds t.mu.
  static void remove_locked(table& t, key_type key, const std::shared_ptr<slot>& held) {
    auto it = t.inflight.find(key);
    if (it != t.inflight.end() && it->second == held) t.inflight.erase(it);
  }
  std::shared_ptr<table> t_;
};

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

struct flight_story {
  key_type key = 0;
  worker_kind worker = worker_kind::answers;
  int started = 0, cancelled = 0, publishing = 0, answered = 0, abandoned = 0, retired = 0;
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
  std::map<std::uint64_t, flight_story> flights;
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
    flight_story& s = flights[id];
    const std::string f = "flight " + str(id) + " of key " + str(key) + ": ";
    switch (e) {
      case flight_event::started:
        for (const auto& [other, o] : flights)
          if (other != id && o.key == key && o.started && o.cancelled == 0 && o.retired == 0)
            violate("one flight per key", f + "started while flight " + str(other) + " still held the key");
        s.key = key;
        s.worker = worker_for(id);
        ++s.started;
        break;
      case flight_event::cancelled:
        if (s.publishing) violate("no cancellation after publication began", f + "cancelled while publishing");
        ++s.cancelled;
        break;
      case flight_event::publishing:
        if (s.cancelled) violate("no publication after a cancellation", f + "began publishing after it was cancelled");
        ++s.publishing;
        break;
      case flight_event::answered:
        if (!s.publishing || s.cancelled) violate("no publication after a cancellation", f + "answered without winning publication");
        if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
        ++s.answered;
        break;
      case flight_event::abandoned:
        if (s.answered + s.abandoned) violate("one outcome per flight", f + "resolved twice");
        ++s.abandoned;
        break;
      case flight_event::retired:
        if (s.answered + s.abandoned != 1) violate("one outcome per flight", f + "retired without exactly one outcome");
        ++s.retired;
        break;
    }
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
  // Destroyed just before the waiter guard, on every way out (cancellation
  // included): while this request counted, its flight cannot be cancelled.
  struct still_counted {
    world& w;
    std::uint64_t flight;
    std::size_t i;
    ~still_counted() {
      if (w.flights[flight].cancelled > 0)
        w.violate("no cancellation under a counted waiter",
                  "request " + str(i) + ": flight " + str(flight) + " was cancelled while it still counted");
    }
  } on_leaving{w, rec.flight, i};
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
    const flight_story& s = w.flights[r.flight];
    if (*r.got == answer_for(r.flight)) {
      if (!s.answered) w.violate("waiters read their own flight's outcome", who + "read an answer never given");
    } else if (*r.got == abandoned_value) {
      if (!s.abandoned) w.violate("waiters read their own flight's outcome", who + "read 'abandoned' from a flight that was not");
      if (s.worker == worker_kind::answers)
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
