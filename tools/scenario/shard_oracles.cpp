#include "tools/scenario/shard_oracles.hpp"

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace lockstep::scenario {
namespace {

using K = shard_event_kind;

constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

std::string str(std::uint64_t n) { return std::to_string(n); }

std::string where(const shard_event& e, std::size_t n) {
  return "key " + str(e.key) + " at t=" + std::to_string(e.t) + "ns (event #" + str(n) + ")";
}

std::string state_text(const std::optional<std::uint64_t>& s) { return s ? str(*s) : std::string("none"); }

bool is_out(K k) { return k == K::dispatched || k == K::expired || k == K::coalesced; }

/// What the whole log says about one item, gathered before the oracles walk
/// it in order: the oracles that reason about "certainly admitted" or "live"
/// need to know where an item's events fall, wherever they are logged.
struct item_facts {
  shard_event identity;
  std::size_t out_at = never;     ///< first dispatched / expired / coalesced
  K out_kind = K::submitted;
  std::size_t expired_at = never;
  std::size_t completed_at = never;  ///< its process() returned
  std::int64_t dispatched_t = 0;     ///< when its process() began (out_kind == dispatched)
  bool handed_back = false;
  /// The first index at which a later item of the same actor on the same
  /// shard is out: the mailbox is FIFO and that item's send began after this
  /// one's returned, so this one was admitted by then.
  std::size_t admitted_by = never;
};

std::map<std::uint64_t, item_facts> gather(const std::vector<shard_event>& log) {
  std::map<std::uint64_t, item_facts> items;
  for (std::size_t n = 0; n < log.size(); ++n) {
    const shard_event& e = log[n];
    if (!is_item_event(e.kind)) continue;
    item_facts& f = items.try_emplace(e.item, item_facts{e}).first->second;
    if (is_out(e.kind) && f.out_at == never) {
      f.out_at = n;
      f.out_kind = e.kind;
      f.dispatched_t = e.t;
    }
    if (e.kind == K::completed && f.completed_at == never) f.completed_at = n;
    if (e.kind == K::expired && f.expired_at == never) f.expired_at = n;
    if (e.kind == K::handed_back) f.handed_back = true;
  }
  // Suffix minimum of out_at over each (actor, shard)'s items in seq order.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::map<std::uint64_t, item_facts*>> by_sender;
  for (auto& [uid, f] : items) by_sender[{f.identity.actor, f.identity.shard}][f.identity.seq] = &f;
  for (auto& [sender, seqs] : by_sender) {
    std::size_t later = never;
    for (auto it = seqs.rbegin(); it != seqs.rend(); ++it) {
      it->second->admitted_by = later;
      if (it->second->out_at < later) later = it->second->out_at;
    }
  }
  return items;
}

}  // namespace

std::optional<violation> check_shard_log(const std::vector<shard_event>& log, const shard_oracle_settings& s) {
  const std::set<std::string> on(s.enabled.begin(), s.enabled.end());
  std::optional<violation> found;
  auto report = [&](const char* oracle, std::string message) {
    if (!found && on.count(oracle) != 0) found = violation{oracle, std::move(message)};
  };
  const std::map<std::uint64_t, item_facts> items = gather(log);

  std::size_t bound = s.mailbox_capacity + s.max_pending;
  for (std::size_t b : s.max_inflight) bound += b;

  // Keys of each shard, with their items, for fairness.
  std::map<std::uint64_t, std::map<std::uint64_t, std::vector<const item_facts*>>> shard_keys;
  std::map<std::uint64_t, std::size_t> first_dispatch;  // key -> index
  for (const auto& [uid, f] : items) {
    shard_keys[f.identity.shard][f.identity.key].push_back(&f);
    if (f.out_kind == K::dispatched) {
      const auto [it, fresh] = first_dispatch.try_emplace(f.identity.key, f.out_at);
      if (!fresh && f.out_at < it->second) it->second = f.out_at;
    }
  }
  // A key is certainly ready in class c at event n when the log proves it sits
  // in c's ring: it was never dispatched (so it is not in flight, holds no
  // state and is not flushing), one of its items is certainly admitted and
  // not yet out, and every item of it not yet out is of class c (so its FIFO
  // head is).
  auto certainly_ready = [&](const std::vector<const item_facts*>& key_items, std::uint32_t c, std::size_t n) {
    if (key_items.empty()) return false;
    const std::uint64_t key = key_items.front()->identity.key;
    const auto fd = first_dispatch.find(key);
    if (fd != first_dispatch.end() && fd->second <= n) return false;
    bool admitted = false;
    for (const item_facts* f : key_items) {
      if (f->handed_back || f->out_at <= n) continue;
      if (f->identity.cls != c) return false;
      admitted = admitted || f->admitted_by < n;
    }
    return admitted;
  };

  std::map<std::uint64_t, int> outs, dispatches, completes;
  std::set<std::uint64_t> submitted;
  std::map<std::uint64_t, std::optional<std::uint64_t>> model;  // key -> predicted resident state
  std::map<std::uint64_t, int> running;                         // key -> process() calls running
  std::set<std::uint64_t> flushing;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> last_dispatched, last_expired;  // (key, actor)
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::size_t> running_cls;                           // (shard, class)
  std::map<std::uint64_t, std::size_t> held;                                                       // shard -> items
  std::map<std::uint64_t, std::size_t> turn_end;   // key -> its last `completed`
  std::map<std::uint64_t, std::size_t> last_shed;  // key -> its last `expired`
  // item -> (the shard shard_of named when its actor sent it, by try_submit):
  // an actor logs `submitted` when the call returns, maybe after the item's
  // own events, so the whole log is read for it first.
  std::map<std::uint64_t, std::pair<std::uint64_t, bool>> sent_to;
  for (const shard_event& e : log) {
    if (e.kind == K::submitted) sent_to[e.item] = {e.shard, e.via_try};
  }
  auto placed = [&](const shard_event& e, std::size_t n) {
    const auto to = sent_to.find(e.item);
    if (to != sent_to.end() && to->second.first != e.shard) {
      report("placement", where(e, n) + ": item " + str(e.item) + " reached shard " + str(e.shard) + ", but shard_of" +
                              " named shard " + str(to->second.first) + " when " +
                              (to->second.second ? "try_submit()" : "submit()") + " sent it");
    }
  };
  std::map<std::uint64_t, std::int64_t> last_kept_at;  // key -> time of its last completed `keep`
  bool shutting_down = false;                          // the router's drop has begun

  auto hold = [&](const shard_event& e, std::size_t n) {
    const std::size_t now = ++held[e.shard];
    if (now > bound) {
      report("pending_cap", where(e, n) + ": shard " + str(e.shard) + " holds " + str(now) +
                                " items, more than mailbox_capacity + max_pending + budgets = " + str(bound));
    }
  };
  auto release = [&](const shard_event& e) {
    if (held[e.shard] > 0) --held[e.shard];
  };
  auto leave = [&](const shard_event& e, std::size_t n, const char* how) {
    if (++outs[e.item] != 1) {
      report("conservation", where(e, n) + ": item " + str(e.item) + " left the shard " + str(outs[e.item]) +
                                 " times (last: " + how + ")");
    }
    const auto f = items.find(e.item);
    if (f != items.end() && f->second.handed_back) {
      report("conservation", where(e, n) + ": item " + str(e.item) + " was handed back but " + how);
    }
  };
  auto in_order = [&](std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>& last, const shard_event& e,
                      std::size_t n, const char* how) {
    const auto [it, first] = last.try_emplace({e.key, e.actor}, e.seq);
    if (!first && it->second >= e.seq) {
      report("per_key_order", where(e, n) + ": actor " + str(e.actor) + "'s item seq " + str(e.seq) + " " + how +
                                  " after its seq " + str(it->second));
    }
    if (!first && it->second < e.seq) it->second = e.seq;
  };

  for (std::size_t n = 0; n < log.size(); ++n) {
    const shard_event& e = log[n];
    switch (e.kind) {
      case K::submitted:
        submitted.insert(e.item);
        if (outs[e.item] == 0) hold(e, n);
        break;
      case K::handed_back:
        if (e.value != e.item) {
          report("conservation", where(e, n) + ": item " + str(e.item) + " was refused and item " + str(e.value) +
                                     " handed back instead");
        }
        if (outs[e.item] != 0) {
          report("conservation", where(e, n) + ": item " + str(e.item) + " was handed back after it reached the shard");
        }
        if (e.detail == static_cast<std::uint8_t>(hand_back_reason::full) && !e.via_try) {
          report("backpressure", where(e, n) + ": submit() handed item " + str(e.item) +
                                     " back as full: it must wait for room in the mailbox");
        }
        if (e.detail == static_cast<std::uint8_t>(hand_back_reason::closed) && !shutting_down) {
          report("backpressure", where(e, n) + ": item " + str(e.item) +
                                     " handed back as closed before the router's drop began");
        }
        break;
      case K::dispatched: {
        placed(e, n);
        leave(e, n, "was dispatched");
        ++dispatches[e.item];
        if (submitted.count(e.item) == 0) hold(e, n);  // counted from here, in process()
        const std::optional<std::uint64_t> seen =
            e.has_value ? std::optional<std::uint64_t>(e.value) : std::nullopt;
        const std::optional<std::uint64_t> predicted = model[e.key];
        if (seen != predicted) {
          report("state", where(e, n) + ": item " + str(e.item) + " saw state " + state_text(seen) +
                              ", the key's model predicts " + state_text(predicted));
        }
        model[e.key].reset();  // moved out into the call
        if (running[e.key] > 0) {
          report("one_in_flight", where(e, n) + ": item " + str(e.item) + " dispatched while another item of the key is in process()");
        }
        if (flushing.count(e.key) != 0) {
          report("one_in_flight", where(e, n) + ": item " + str(e.item) + " dispatched while the key is flushing");
        }
        ++running[e.key];
        const std::size_t busy = ++running_cls[{e.shard, e.cls}];
        if (e.cls < s.max_inflight.size() && busy > s.max_inflight[e.cls]) {
          report("class_budget", where(e, n) + ": shard " + str(e.shard) + " class " + str(e.cls) + " has " +
                                     str(busy) + " items in process(), max_inflight " + str(s.max_inflight[e.cls]));
        }
        in_order(last_dispatched, e, n, "dispatched");
        if (e.ttl_ns && e.t - e.sent_ns >= *e.ttl_ns) {
          report("deadlines", where(e, n) + ": item " + str(e.item) + " dispatched " + std::to_string(e.t - e.sent_ns) +
                                  "ns after submit(), past its time to live of " + std::to_string(*e.ttl_ns) + "ns");
        }
        // Fairness, for any budget: the key's previous turn ended (its process()
        // returned) at event #m, so the reactor refiled it at the back of its
        // ring after m. A key certainly in this class's ring at m and still at n
        // (never dispatched, no expiry since m, which would refile it behind)
        // was ahead of it. With the class's budget full of logged calls at n,
        // that key holds no slot either, so it is still waiting: passed over.
        if (const auto te = turn_end.find(e.key);
            te != turn_end.end() && e.cls < s.max_inflight.size() && busy >= s.max_inflight[e.cls]) {
          const std::size_t m = te->second;
          for (const auto& [key, key_items] : shard_keys[e.shard]) {
            if (key == e.key) continue;
            if (const auto ls = last_shed.find(key); ls != last_shed.end() && ls->second > m) continue;
            if (!certainly_ready(key_items, e.cls, m) || !certainly_ready(key_items, e.cls, n)) continue;
            report("fairness", where(e, n) + ": dispatched again in class " + str(e.cls) + " on shard " +
                                   str(e.shard) + " (its turn ended at event #" + str(m) + ", max_inflight " +
                                   str(s.max_inflight[e.cls]) + " all busy) while key " + str(key) +
                                   ", ready in that class since before then, still waited");
          }
        }
        break;
      }
      case K::completed: {
        if (dispatches[e.item] == 0) {
          report("conservation", where(e, n) + ": item " + str(e.item) + " completed without being dispatched");
        }
        ++completes[e.item];
        turn_end[e.key] = n;
        if (running[e.key] > 0) --running[e.key];
        auto& busy = running_cls[{e.shard, e.cls}];
        if (busy > 0) --busy;
        release(e);
        if (e.detail == static_cast<std::uint8_t>(shard_disposition::keep)) {
          model[e.key] = e.value;
          last_kept_at[e.key] = e.t;
        } else {
          model[e.key].reset();
        }
        break;
      }
      case K::expired:
        // Shedding an expired head sends the key to the back of its ring (before
        // this event is logged), so fairness no longer counts it as ahead.
        last_shed[e.key] = n;
        placed(e, n);
        leave(e, n, "expired");
        if (submitted.count(e.item) != 0) release(e);
        in_order(last_expired, e, n, "expired");
        if (!e.ttl_ns) {
          report("deadlines", where(e, n) + ": item " + str(e.item) + " expired, but it has no time to live");
        } else if (e.t - e.sent_ns < *e.ttl_ns) {
          report("deadlines", where(e, n) + ": item " + str(e.item) + " expired " + std::to_string(e.t - e.sent_ns) +
                                  "ns after submit(), before its time to live of " + std::to_string(*e.ttl_ns) + "ns");
        }
        break;
      case K::coalesced: {
        placed(e, n);
        leave(e, n, "was coalesced");
        if (submitted.count(e.item) != 0) release(e);
        if (!s.coalesce_duplicates) {
          report("request_ids", where(e, n) + ": item " + str(e.item) + " coalesced with coalesce_duplicates off");
        } else if (!e.request_id) {
          report("request_ids", where(e, n) + ": item " + str(e.item) + " coalesced without a request id");
        } else {
          bool live = false;
          for (const auto& [uid, f] : items) {
            if (uid == e.item || f.identity.key != e.key || f.identity.request_id != e.request_id) continue;
            if (f.handed_back || f.out_kind == K::coalesced || f.expired_at < n) continue;
            live = true;
          }
          if (!live) {
            report("request_ids", where(e, n) + ": item " + str(e.item) + " coalesced, but no other item of (key " +
                                      str(e.key) + ", id " + str(*e.request_id) + ") was live (an expiry releases the id)");
          }
        }
        break;
      }
      case K::flush_chosen: {
        // The seed's evict: an idle sweep takes only keys that are idle — no
        // item queued — and unused for evict_after. Judged at the choice
        // itself (the reactor's on_flush_chosen), before the router's drop
        // began: an item certainly admitted before now and not yet out was
        // queued (a dispatched one would have made the key busy instead).
        if (shutting_down) break;
        const auto kept = last_kept_at.find(e.key);
        if (kept != last_kept_at.end() && e.t - kept->second < s.evict_after_ns) {
          report("eviction", where(e, n) + ": chosen by an idle sweep " + std::to_string(e.t - kept->second) +
                                 "ns after its last kept result, before evict_after_ns " +
                                 std::to_string(s.evict_after_ns));
        }
        // Looked up, not inserted: a key with no item on this shard (a planted
        // bug can place a key's items elsewhere) must not enter the shard's ring.
        const auto on_shard = shard_keys.find(e.shard);
        if (on_shard == shard_keys.end()) break;
        const auto of_key = on_shard->second.find(e.key);
        if (of_key == on_shard->second.end()) break;
        for (const item_facts* f : of_key->second) {
          if (f->handed_back || f->admitted_by >= n || f->out_at <= n) continue;
          report("eviction", where(e, n) + ": chosen by an idle sweep while item " + str(f->identity.item) +
                                 " of the key was queued (admitted by event #" + str(f->admitted_by) +
                                 ", not yet dispatched): only an idle key, with nothing queued, is flushed");
          break;
        }
        break;
      }
      case K::flushed: {
        const auto kept = last_kept_at.find(e.key);
        if (!shutting_down && kept != last_kept_at.end() && e.t - kept->second < s.evict_after_ns) {
          report("eviction", where(e, n) + ": flushed by an idle sweep " + std::to_string(e.t - kept->second) +
                                 "ns after its last kept result, before evict_after_ns " +
                                 std::to_string(s.evict_after_ns));
        }
        const std::optional<std::uint64_t> predicted = model[e.key];
        if (predicted != std::optional<std::uint64_t>(e.value)) {
          report("state", where(e, n) + ": flushed state " + str(e.value) + ", the key's latest kept state is " +
                              state_text(predicted) + (predicted ? "" : " (a second flush?)"));
        }
        model[e.key].reset();
        if (running[e.key] > 0) {
          report("one_in_flight", where(e, n) + ": flushed while an item of the key is in process()");
        }
        flushing.insert(e.key);
        break;
      }
      case K::flush_done:
        flushing.erase(e.key);
        break;
      case K::shutdown:
        shutting_down = true;
        break;
      case K::shard_exited:
        break;
    }
  }
  if (found || !s.end_of_run) return found;

  for (const auto& [uid, f] : items) {
    const shard_event& id = f.identity;
    if (f.handed_back) continue;
    if (submitted.count(uid) == 0) {
      report("conservation", "key " + str(id.key) + ": item " + str(uid) +
                                 " reached the shard, but submit() never returned it as sent");
    } else if (outs[uid] == 0) {
      report("conservation", "key " + str(id.key) + ": item " + str(uid) +
                                 " was submitted but never processed, expired or coalesced (lost at shutdown)");
    } else if (dispatches[uid] != 0 && completes[uid] == 0) {
      report("conservation", "key " + str(id.key) + ": item " + str(uid) + "'s process() call never returned");
    }
  }
  // The converse of the coalescing rule (the seed's admit_one: a retry that
  // arrives "while its original is still outstanding" is suppressed): item b
  // of (key, id) ran although item a of the same (key, id), tracked (not itself
  // coalesced, dispatched, so never expired), was certainly admitted before b
  // — sent earlier by the same actor to the same shard (the mailbox is FIFO),
  // or already in process() when b's submit() was called — and its process()
  // had not returned when b was certainly admitted (a's id leaves the index
  // only when the reactor harvests that return).
  if (s.coalesce_duplicates && on.count("request_ids") != 0) {
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<const item_facts*>> tracked;  // (key, id)
    for (const auto& [uid, f] : items) {
      if (f.identity.request_id && f.out_kind == K::dispatched && !f.handed_back) {
        tracked[{f.identity.key, *f.identity.request_id}].push_back(&f);
      }
    }
    for (const auto& [ki, same] : tracked) {
      for (const item_facts* b : same) {
        if (b->admitted_by == never) continue;
        for (const item_facts* a : same) {
          if (a == b || a->completed_at <= b->admitted_by) continue;
          const bool before = (a->identity.actor == b->identity.actor && a->identity.shard == b->identity.shard &&
                               a->identity.seq < b->identity.seq) ||
                              a->dispatched_t < b->identity.sent_ns;
          if (!before) continue;
          report("request_ids", "key " + str(ki.first) + ": item " + str(b->identity.item) + " (id " + str(ki.second) +
                                    ") ran, though item " + str(a->identity.item) + " of the same (key, id) was " +
                                    "admitted before it and still outstanding when it arrived (admitted by event #" +
                                    str(b->admitted_by) + "; item " + str(a->identity.item) + "'s process() " +
                                    (a->completed_at == never ? std::string("never returned")
                                                              : "returned at event #" + str(a->completed_at)) +
                                    "): a retry of a live id must be coalesced");
        }
      }
    }
  }
  for (const auto& [key, state] : model) {
    if (state) {
      report("state", "key " + str(key) + ": state " + str(*state) +
                          " still resident when every shard had exited: never flushed (a lost write-back)");
    }
  }
  return found;
}

}  // namespace lockstep::scenario
