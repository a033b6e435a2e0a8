// Property: the keyed class-budget scheduler agrees with a plain model over
// any sequence of operations — per-key FIFO dispatch (minus what expired),
// state that follows the key until dropped or flushed, class budgets never
// exceeded, and check_invariants() holding after every operation. rapidcheck
// shrinks a failing sequence to a minimal one.
#include <rapidcheck.h>

#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "engine/scheduler.hpp"

using lockstep::disposition;
using lockstep::scheduler;
using lockstep::scheduler_config;

namespace {

struct action {
  enum kind : std::uint8_t { admit, next, complete_keep, complete_drop, evict, finish_evict, tick } what;
  std::uint32_t key;   // admit: the key; complete/finish: index among candidates
  std::uint32_t cls;   // admit / next
  bool short_ttl;      // admit: expires at now + 1
};

rc::Gen<action> gen_action() {
  return rc::gen::build<action>(
      rc::gen::set(&action::what, rc::gen::element(action::admit, action::admit, action::next, action::next,
                                                   action::complete_keep, action::complete_drop,
                                                   action::evict, action::finish_evict, action::tick)),
      rc::gen::set(&action::key, rc::gen::inRange<std::uint32_t>(0, 4)),
      rc::gen::set(&action::cls, rc::gen::inRange<std::uint32_t>(0, 2)),
      rc::gen::set(&action::short_ttl, rc::gen::arbitrary<bool>()));
}

struct model_key {
  std::deque<std::uint64_t> queued;  // item ids, admit order
  std::optional<std::uint64_t> state;
  bool in_flight = false;
  bool flushing = false;
};

}  // namespace

int main() {
  const bool ok = rc::check("the scheduler agrees with a model", [] {
    const auto actions = *rc::gen::container<std::vector<action>>(gen_action());
    scheduler_config cfg;
    cfg.max_inflight = {2, 1};
    cfg.max_pending = 1000;
    cfg.evict_after_ns = 5;
    scheduler<std::uint32_t, std::uint64_t, std::uint64_t> s(cfg);
    std::map<std::uint32_t, model_key> model;
    std::map<std::uint32_t, std::uint32_t> flight_class;
    std::map<std::uint64_t, std::int64_t> expiry;
    std::vector<std::uint32_t> inflight_per_class(2, 0);
    std::int64_t now = 0;
    std::uint64_t next_id = 0;

    for (const action& a : actions) {
      switch (a.what) {
        case action::admit: {
          const std::uint64_t id = next_id++;
          std::optional<std::int64_t> expires;
          if (a.short_ttl) expires = now + 1;
          if (expires) expiry[id] = *expires;
          s.admit(a.key, a.cls, expires, id, now);
          model[a.key].queued.push_back(id);
          break;
        }
        case action::next: {
          auto d = s.next(a.cls, now);
          while (auto e = s.pop_expired()) {
            auto& mk = model[e->first];
            RC_ASSERT(!mk.queued.empty());
            RC_ASSERT(mk.queued.front() == e->second);  // only a head item expires
            RC_ASSERT(expiry.count(e->second) == 1 && expiry[e->second] <= now);
            mk.queued.pop_front();
          }
          if (!d) break;
          auto& mk = model[d->key];
          RC_ASSERT(!mk.in_flight);
          RC_ASSERT(!mk.flushing);
          RC_ASSERT(!mk.queued.empty());
          RC_ASSERT(mk.queued.front() == d->payload);  // per-key FIFO
          RC_ASSERT(d->state == mk.state);             // state follows the key
          RC_ASSERT(d->cls == a.cls);
          mk.queued.pop_front();
          mk.in_flight = true;
          mk.state.reset();
          flight_class[d->key] = a.cls;
          RC_ASSERT(++inflight_per_class[a.cls] <= cfg.max_inflight[a.cls]);
          break;
        }
        case action::complete_keep:
        case action::complete_drop: {
          if (flight_class.empty()) break;
          auto it = flight_class.begin();
          std::advance(it, a.key % flight_class.size());
          const auto [key, cls] = *it;
          flight_class.erase(it);
          --inflight_per_class[cls];
          auto& mk = model[key];
          mk.in_flight = false;
          if (a.what == action::complete_keep) {
            const std::uint64_t st = next_id++;
            mk.state = st;
            s.complete(key, cls, disposition<std::uint64_t>::keep(st), now);
          } else {
            s.complete(key, cls, disposition<std::uint64_t>::drop(), now);
          }
          break;
        }
        case action::evict: {
          std::vector<std::pair<std::uint32_t, std::uint64_t>> out;
          s.evict(now, out);
          for (const auto& [key, st] : out) {
            auto& mk = model[key];
            RC_ASSERT(mk.state == std::optional<std::uint64_t>(st));  // the latest kept state
            RC_ASSERT(mk.queued.empty());
            RC_ASSERT(!mk.in_flight);
            mk.state.reset();
            mk.flushing = true;
          }
          break;
        }
        case action::finish_evict: {
          std::vector<std::uint32_t> flushing;
          for (const auto& [key, mk] : model)
            if (mk.flushing) flushing.push_back(key);
          if (flushing.empty()) break;
          const std::uint32_t key = flushing[a.key % flushing.size()];
          model[key].flushing = false;
          s.finish_evict(key, now);
          break;
        }
        case action::tick: now += 1 + a.key; break;
      }
      s.check_invariants();
      std::size_t pending = 0;
      for (const auto& [key, mk] : model) pending += mk.queued.size();
      RC_ASSERT(s.pending() == pending);
    }
  });
  std::printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
  return ok ? 0 : 1;
}
