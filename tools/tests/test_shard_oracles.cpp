// Goal: each shard-scheduler oracle over the event log (tools/scenario/
// shard_oracles.hpp) catches its violation, with its own name and a message
// naming the key and the event, on a hand-written log — no shard involved,
// so an oracle cannot lean on the engine's own checks — and the same log
// without the defect passes.
#define BOOST_TEST_MODULE tools_shard_oracles
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/scenario.hpp"
#include "tools/scenario/shard_oracles.hpp"

using namespace lockstep::scenario;

namespace {

using K = shard_event_kind;

/// An event about item `uid` of `key`, the actor's seq-th item.
shard_event ev(K kind, std::uint64_t uid, std::uint64_t key, std::uint64_t seq, std::uint32_t cls = 0) {
  shard_event e;
  e.kind = kind;
  e.item = uid;
  e.key = key;
  e.seq = seq;
  e.cls = cls;
  if (kind == K::expired) e.ttl_ns = 0;  // only an item with a time to live may expire (deadlines)
  return e;
}

shard_event seen(shard_event e, std::optional<std::uint64_t> state) {
  e.has_value = state.has_value();
  e.value = state.value_or(0);
  return e;
}

shard_event kept(std::uint64_t uid, std::uint64_t key, std::uint64_t seq, std::uint64_t state, std::uint32_t cls = 0) {
  shard_event e = ev(K::completed, uid, key, seq, cls);
  e.detail = static_cast<std::uint8_t>(shard_disposition::keep);
  e.has_value = true;
  e.value = state;
  return e;
}

shard_event flush(K kind, std::uint64_t key, std::uint64_t value = 0) {
  shard_event e;
  e.kind = kind;
  e.key = key;
  e.value = value;
  return e;
}

shard_event bare(K kind) {
  shard_event e;
  e.kind = kind;
  return e;
}

/// Key 1 (items 1, 2) and key 2 (item 3), one actor, one shard, budget 1:
/// accumulated states, flushed at shutdown with their latest values.
std::vector<shard_event> clean_log() {
  return {ev(K::submitted, 1, 1, 0),
          ev(K::submitted, 2, 1, 1),
          ev(K::submitted, 3, 2, 2),
          seen(ev(K::dispatched, 1, 1, 0), std::nullopt),
          kept(1, 1, 0, 1),
          seen(ev(K::dispatched, 3, 2, 2), std::nullopt),
          kept(3, 2, 2, 1),
          seen(ev(K::dispatched, 2, 1, 1), 1),
          kept(2, 1, 1, 2),
          bare(K::shutdown),
          flush(K::flushed, 1, 2),
          flush(K::flush_done, 1),
          flush(K::flushed, 2, 1),
          flush(K::flush_done, 2),
          bare(K::shard_exited)};
}

shard_oracle_settings settings(std::vector<std::string> enabled = shard_oracle_names()) {
  shard_oracle_settings s;
  s.max_inflight = {1, 1};
  s.evict_after_ns = 0;  // the hand-written logs keep t = 0: any sweep is old enough (the eviction test sets its own)
  s.enabled = std::move(enabled);
  return s;
}

std::optional<violation> check(const std::vector<shard_event>& log, const shard_oracle_settings& s = settings()) {
  return check_shard_log(log, s);
}

void expect_caught(const std::optional<violation>& v, const std::string& oracle, const std::string& text) {
  BOOST_REQUIRE_MESSAGE(v.has_value(), "expected " + oracle + " to be caught");
  BOOST_TEST(v->oracle == oracle);
  BOOST_TEST(v->message.find(text) != std::string::npos, v->message);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_clean_log_passes) {
  BOOST_TEST(!check(clean_log()).has_value());
  shard_oracle_settings mid = settings();
  mid.end_of_run = false;
  BOOST_TEST(!check(clean_log(), mid).has_value());
}

BOOST_AUTO_TEST_CASE(conservation_catches_a_lost_a_doubled_and_a_wrongly_handed_back_item) {
  auto lost = clean_log();
  lost.erase(lost.begin() + 5, lost.begin() + 7);  // item 3 never dispatched
  expect_caught(check(lost, settings({"conservation"})), "conservation", "item 3 was submitted but never processed");
  // Mid-run (shards still running) a missing outcome is not yet a loss.
  shard_oracle_settings mid = settings({"conservation"});
  mid.end_of_run = false;
  BOOST_TEST(!check(lost, mid).has_value());

  auto twice = clean_log();
  twice.insert(twice.begin() + 5, ev(K::expired, 1, 1, 0));
  expect_caught(check(twice), "conservation", "item 1 left the shard 2 times (last: expired)");

  auto other = clean_log();
  shard_event back = ev(K::handed_back, 4, 1, 3);
  back.value = 9;
  back.via_try = true;  // a full mailbox: only try_submit hands back (backpressure)
  other.insert(other.begin() + 3, back);
  expect_caught(check(other), "conservation", "item 4 was refused and item 9 handed back instead");

  auto both = clean_log();
  shard_event returned = ev(K::handed_back, 3, 2, 2);
  returned.value = 3;
  returned.via_try = true;
  both[2] = returned;
  expect_caught(check(both), "conservation", "item 3 was handed back but was dispatched");
}

BOOST_AUTO_TEST_CASE(state_catches_a_wrong_state_a_wrong_flush_and_a_lost_write_back) {
  auto wrong = clean_log();
  wrong[7] = seen(ev(K::dispatched, 2, 1, 1), std::nullopt);
  expect_caught(check(wrong), "state", "key 1 at t=0ns (event #7): item 2 saw state none, the key's model predicts 1");

  auto stale = clean_log();
  stale[10] = flush(K::flushed, 1, 1);
  expect_caught(check(stale), "state", "flushed state 1, the key's latest kept state is 2");

  auto unflushed = clean_log();
  unflushed.erase(unflushed.begin() + 10, unflushed.begin() + 12);
  expect_caught(check(unflushed), "state", "key 1: state 2 still resident when every shard had exited");

  // After a drop (or an error, a panic, a flush) the model predicts none.
  auto dropped = clean_log();
  dropped[4].detail = static_cast<std::uint8_t>(shard_disposition::error_in_doubt);
  dropped[4].has_value = false;
  expect_caught(check(dropped), "state", "item 2 saw state 1, the key's model predicts none");
}

BOOST_AUTO_TEST_CASE(per_key_order_catches_a_reordered_key) {
  std::vector<shard_event> log = {ev(K::submitted, 1, 1, 0), ev(K::submitted, 2, 1, 1),
                                  seen(ev(K::dispatched, 2, 1, 1), std::nullopt), kept(2, 1, 1, 1),
                                  seen(ev(K::dispatched, 1, 1, 0), 1), kept(1, 1, 0, 2),
                                  flush(K::flushed, 1, 2), flush(K::flush_done, 1)};
  expect_caught(check(log), "per_key_order", "actor 0's item seq 0 dispatched after its seq 1");

  std::vector<shard_event> expiries = {ev(K::submitted, 1, 1, 0), ev(K::submitted, 2, 1, 1),
                                       ev(K::expired, 2, 1, 1), ev(K::expired, 1, 1, 0)};
  expect_caught(check(expiries), "per_key_order", "seq 0 expired after its seq 1");
}

BOOST_AUTO_TEST_CASE(one_in_flight_catches_an_overlap_and_a_dispatch_while_flushing) {
  auto overlap = clean_log();
  std::swap(overlap[7], overlap[4]);  // item 2 dispatched before item 1 returned
  overlap[4] = seen(ev(K::dispatched, 2, 1, 1), std::nullopt);
  expect_caught(check(overlap, settings({"one_in_flight"})), "one_in_flight",
                "item 2 dispatched while another item of the key is in process()");

  std::vector<shard_event> flushing = {ev(K::submitted, 1, 1, 0), seen(ev(K::dispatched, 1, 1, 0), std::nullopt),
                                       kept(1, 1, 0, 1), flush(K::flushed, 1, 1), ev(K::submitted, 2, 1, 1),
                                       seen(ev(K::dispatched, 2, 1, 1), std::nullopt), kept(2, 1, 1, 1),
                                       flush(K::flush_done, 1), flush(K::flushed, 1, 1), flush(K::flush_done, 1)};
  expect_caught(check(flushing), "one_in_flight", "item 2 dispatched while the key is flushing");
}

BOOST_AUTO_TEST_CASE(class_budget_catches_two_in_a_one_slot_class) {
  auto log = clean_log();
  std::swap(log[4], log[5]);  // key 2's item starts while key 1's runs
  expect_caught(check(log), "class_budget", "shard 0 class 0 has 2 items in process(), max_inflight 1");
  shard_oracle_settings two = settings();
  two.max_inflight = {2};
  BOOST_TEST(!check(log, two).has_value());
}

BOOST_AUTO_TEST_CASE(pending_cap_catches_a_shard_holding_past_its_bound) {
  shard_oracle_settings tight = settings();
  tight.mailbox_capacity = 1;
  tight.max_pending = 1;
  tight.max_inflight = {1};  // bound 3
  std::vector<shard_event> log;
  for (std::uint64_t i = 1; i <= 3; ++i) log.push_back(ev(K::submitted, i, i, i - 1));
  BOOST_TEST(!check(log, [&] { auto s = tight; s.end_of_run = false; return s; }()).has_value());
  log.push_back(ev(K::submitted, 4, 4, 3));
  expect_caught(check(log, tight), "pending_cap", "key 4 at t=0ns (event #3): shard 0 holds 4 items");
}

BOOST_AUTO_TEST_CASE(fairness_catches_a_key_redispatched_past_a_waiting_one) {
  // Key 0 has four items, key 1 one (class 0, one slot); key 2's class-1
  // item, submitted after key 1's by the same actor, is out first, which
  // proves key 1's item was admitted.
  std::vector<shard_event> log;
  for (std::uint64_t i = 1; i <= 4; ++i) log.push_back(ev(K::submitted, i, 0, i - 1));
  log.push_back(ev(K::submitted, 5, 1, 4));
  log.push_back(ev(K::submitted, 6, 2, 5, 1));
  log.push_back(seen(ev(K::dispatched, 6, 2, 5, 1), std::nullopt));
  log.push_back(kept(6, 2, 5, 1, 1));
  auto starved = log;
  std::optional<std::uint64_t> state;
  for (std::uint64_t i = 1; i <= 2; ++i) {
    starved.push_back(seen(ev(K::dispatched, i, 0, i - 1), state));
    starved.push_back(kept(i, 0, i - 1, i));
    state = i;
  }
  shard_oracle_settings mid = settings();
  mid.end_of_run = false;
  // Key 0's first turn ended at event #9 with key 1 ready: it went behind key 1.
  expect_caught(check(starved, mid), "fairness",
                "key 0 at t=0ns (event #10): dispatched again in class 0 on shard 0 (its turn ended at event #9, "
                "max_inflight 1 all busy) while key 1");
  // An idle sweep's choice of a key with no item on this shard (a planted bug
  // can put a key's items on another shard) adds no key to the ring: once
  // this crashed the oracle (the fairness pass read that key's first item).
  auto elsewhere = starved;
  elsewhere.insert(elsewhere.end() - 2, flush(K::flush_chosen, 9));
  expect_caught(check(elsewhere, mid), "fairness", "dispatched again in class 0 on shard 0");

  auto fair = log;  // round robin: key 1 gets its turn after key 0's first
  fair.push_back(seen(ev(K::dispatched, 1, 0, 0), std::nullopt));
  fair.push_back(kept(1, 0, 0, 1));
  fair.push_back(seen(ev(K::dispatched, 5, 1, 4), std::nullopt));
  fair.push_back(kept(5, 1, 4, 1));
  for (std::uint64_t i = 2; i <= 4; ++i) {
    fair.push_back(seen(ev(K::dispatched, i, 0, i - 1), i - 1));
    fair.push_back(kept(i, 0, i - 1, i));
  }
  BOOST_TEST(!check(fair, mid).has_value());

  // An expiry of the waiting key's head sends it to the back of the ring: no
  // longer proven ahead (its second item, still queued, keeps it ready).
  std::vector<shard_event> shed = {ev(K::submitted, 1, 0, 0), ev(K::submitted, 2, 0, 1), ev(K::submitted, 5, 1, 2),
                                   ev(K::submitted, 7, 1, 3), ev(K::submitted, 6, 2, 4, 1),
                                   seen(ev(K::dispatched, 6, 2, 4, 1), std::nullopt), kept(6, 2, 4, 1, 1),
                                   seen(ev(K::dispatched, 1, 0, 0), std::nullopt), kept(1, 0, 0, 1)};
  auto shed_then_passed = shed;
  shed.push_back(ev(K::expired, 5, 1, 2));
  shed.push_back(seen(ev(K::dispatched, 2, 0, 1), 1));
  BOOST_TEST(!check(shed, mid).has_value());
  shed_then_passed.push_back(seen(ev(K::dispatched, 2, 0, 1), 1));  // no expiry: key 1 was passed over
  expect_caught(check(shed_then_passed, mid), "fairness", "while key 1");
}

BOOST_AUTO_TEST_CASE(fairness_judges_any_budget_where_every_slot_is_busy) {
  // Class 0 has two slots. Keys 0 and 3 run; key 1 is proven admitted (key 2's
  // class-1 item, sent after it, is out). Key 0's turn ends and key 0 runs
  // again beside key 3 — both slots busy, so key 1 holds none: passed over.
  shard_oracle_settings two = settings();
  two.max_inflight = {2, 1};
  two.end_of_run = false;
  std::vector<shard_event> log = {ev(K::submitted, 1, 0, 0), ev(K::submitted, 2, 0, 1), ev(K::submitted, 3, 3, 2),
                                  ev(K::submitted, 4, 1, 3),  ev(K::submitted, 5, 2, 4, 1),
                                  seen(ev(K::dispatched, 5, 2, 4, 1), std::nullopt),
                                  seen(ev(K::dispatched, 1, 0, 0), std::nullopt),
                                  seen(ev(K::dispatched, 3, 3, 2), std::nullopt), kept(1, 0, 0, 1)};
  auto passed = log;
  passed.push_back(seen(ev(K::dispatched, 2, 0, 1), 1));
  expect_caught(check(passed, two), "fairness", "max_inflight 2 all busy) while key 1");

  // Key 3 returned first: one slot is free of logged calls, so key 1 may
  // hold it already (dispatched, its process() not yet begun): not judged.
  auto unproven = log;
  unproven.push_back(kept(3, 3, 2, 1));
  unproven.push_back(seen(ev(K::dispatched, 2, 0, 1), 1));
  BOOST_TEST(!check(unproven, two).has_value());
}

BOOST_AUTO_TEST_CASE(request_ids_catch_coalescing_with_an_expired_id_another_key_or_coalescing_off) {
  shard_oracle_settings on = settings();
  on.coalesce_duplicates = true;
  on.end_of_run = false;
  auto with_id = [](shard_event e, std::uint64_t id) {
    e.request_id = id;
    return e;
  };
  const std::vector<shard_event> live = {with_id(ev(K::submitted, 1, 3, 0), 77),
                                         with_id(ev(K::coalesced, 2, 3, 1), 77)};
  BOOST_TEST(!check(live, on).has_value());

  const std::vector<shard_event> expired = {with_id(ev(K::submitted, 1, 3, 0), 77), with_id(ev(K::expired, 1, 3, 0), 77),
                                            with_id(ev(K::coalesced, 2, 3, 1), 77)};
  expect_caught(check(expired, on), "request_ids", "item 2 coalesced, but no other item of (key 3, id 77) was live");

  const std::vector<shard_event> other_key = {with_id(ev(K::submitted, 1, 4, 0), 77),
                                              with_id(ev(K::coalesced, 2, 3, 1), 77)};
  expect_caught(check(other_key, on), "request_ids", "no other item of (key 3, id 77)");

  shard_oracle_settings off = on;
  off.coalesce_duplicates = false;
  expect_caught(check(live, off), "request_ids", "coalesced with coalesce_duplicates off");
}

BOOST_AUTO_TEST_CASE(request_ids_catch_a_retry_of_an_outstanding_original_that_ran) {
  shard_oracle_settings on = settings({"request_ids"});
  on.coalesce_duplicates = true;
  auto with_id = [](shard_event e, std::uint64_t id, std::uint64_t actor = 0, std::int64_t t = 0,
                    std::int64_t sent = 0) {
    e.request_id = id;
    e.actor = actor;
    e.t = t;
    e.sent_ns = sent;
    return e;
  };
  // Same actor: item 1 (key 3, id 77) then its retry, item 2, then item 3 of
  // key 4, out while item 1 still runs, which proves item 2 was admitted.
  const std::vector<shard_event> ran_twice = {
      with_id(ev(K::submitted, 1, 3, 0), 77), with_id(ev(K::submitted, 2, 3, 1), 77), ev(K::submitted, 3, 4, 2),
      with_id(ev(K::dispatched, 1, 3, 0), 77), ev(K::dispatched, 3, 4, 2), with_id(kept(1, 3, 0, 1), 77),
      kept(3, 4, 2, 1), with_id(seen(ev(K::dispatched, 2, 3, 1), 1), 77), with_id(kept(2, 3, 1, 2), 77)};
  expect_caught(check(ran_twice, on), "request_ids",
                "key 3: item 2 (id 77) ran, though item 1 of the same (key, id) was admitted before it");

  // Item 1 returned before item 3 was out: item 2 may have arrived after the
  // original completed, when the seed admits a retry normally.
  std::vector<shard_event> after = ran_twice;
  std::swap(after[4], after[5]);
  BOOST_TEST(!check(after, on).has_value());

  // Another actor: its retry's submit() was called (t=50) after the original
  // began (t=10), and its next item was out before the original returned.
  const std::vector<shard_event> other_actor = {
      with_id(ev(K::submitted, 1, 3, 0), 77, 0, 0, 0), with_id(ev(K::dispatched, 1, 3, 0), 77, 0, 10, 0),
      with_id(ev(K::submitted, 2, 3, 0), 77, 1, 50, 50), with_id(ev(K::submitted, 3, 4, 1), 0, 1, 50, 50),
      with_id(ev(K::dispatched, 3, 4, 1), 0, 1, 60, 50), with_id(kept(1, 3, 0, 1), 77, 0, 100, 0)};
  auto other = other_actor;
  other[3].request_id.reset();
  other[4].request_id.reset();
  other.push_back(with_id(seen(ev(K::dispatched, 2, 3, 0), 1), 77, 1, 110, 50));
  other.push_back(with_id(kept(2, 3, 0, 2), 77, 1, 120, 50));
  expect_caught(check(other, on), "request_ids", "item 2 (id 77) ran");
  // Sent at the very instant the original began: not proven later.
  auto same_instant = other;
  for (auto& e : same_instant) {
    if (e.item == 2) e.sent_ns = 10;
  }
  BOOST_TEST(!check(same_instant, on).has_value());
}

BOOST_AUTO_TEST_CASE(an_oracle_left_out_is_not_checked) {
  auto wrong = clean_log();
  wrong[7] = seen(ev(K::dispatched, 2, 1, 1), std::nullopt);
  BOOST_TEST(!check(wrong, settings({"conservation", "per_key_order"})).has_value());
}

BOOST_AUTO_TEST_CASE(deadlines_catches_a_late_dispatch_an_early_expiry_and_an_expiry_without_a_ttl) {
  // Item 1 (key 1) has 100ns to live from its submit() at t=0.
  auto timed = [](std::int64_t dispatch_at) {
    auto log = clean_log();
    for (auto& e : log) {
      if (e.item == 1) e.ttl_ns = 100;
    }
    log[3].t = dispatch_at;
    return log;
  };
  BOOST_TEST(!check(timed(99)).has_value());
  expect_caught(check(timed(100), settings({"deadlines"})), "deadlines",
                "item 1 dispatched 100ns after submit(), past its time to live of 100ns");

  // Item 1 shed instead of dispatched (its process() call and state gone from the log).
  auto shed = [](std::int64_t at, std::optional<std::int64_t> ttl) {
    std::vector<shard_event> log = {ev(K::submitted, 1, 1, 0), ev(K::expired, 1, 1, 0), bare(K::shutdown),
                                    bare(K::shard_exited)};
    for (auto& e : log) e.ttl_ns = e.item == 1 ? ttl : std::nullopt;
    log[1].t = at;
    return log;
  };
  BOOST_TEST(!check(shed(100, 100)).has_value());
  expect_caught(check(shed(99, 100)), "deadlines", "item 1 expired 99ns after submit(), before its time to live of 100ns");
  expect_caught(check(shed(500, std::nullopt)), "deadlines", "item 1 expired, but it has no time to live");
  // Switched off, the same logs pass.
  const std::vector<std::string> others = {"conservation", "state", "per_key_order"};
  BOOST_TEST(!check(timed(100), settings(others)).has_value());
  BOOST_TEST(!check(shed(99, 100), settings(others)).has_value());
}

BOOST_AUTO_TEST_CASE(backpressure_catches_a_submit_handed_back_full_and_a_refusal_closed_while_open) {
  auto with = [](bool via_try, hand_back_reason why, bool after_shutdown) {
    auto log = clean_log();
    shard_event back = ev(K::handed_back, 4, 1, 3);
    back.value = 4;
    back.via_try = via_try;
    back.detail = static_cast<std::uint8_t>(why);
    log.insert(log.begin() + (after_shutdown ? 10 : 3), back);
    return log;
  };
  expect_caught(check(with(false, hand_back_reason::full, false), settings({"backpressure"})), "backpressure",
                "submit() handed item 4 back as full");
  BOOST_TEST(!check(with(true, hand_back_reason::full, false)).has_value());  // try_submit may
  expect_caught(check(with(true, hand_back_reason::closed, false), settings({"backpressure"})), "backpressure",
                "item 4 handed back as closed before the router's drop began");
  BOOST_TEST(!check(with(false, hand_back_reason::closed, true)).has_value());
  BOOST_TEST(!check(with(false, hand_back_reason::full, false), settings({"conservation"})).has_value());
}

BOOST_AUTO_TEST_CASE(eviction_catches_an_idle_sweep_before_evict_after) {
  // Key 2's state, kept at t=100, flushed by a sweep at t=100 + age (before the shutdown).
  auto with_sweep = [](std::int64_t age) {
    auto log = clean_log();
    for (auto& e : log) e.t = 100;
    shard_event f = flush(K::flushed, 2, 1);
    f.t = 100 + age;
    shard_event done = flush(K::flush_done, 2);
    done.t = f.t;
    log.insert(log.begin() + 7, {f, done});
    // The final flush no longer has key 2's state to hand over: drop it from the end.
    log.erase(log.end() - 3, log.end() - 1);
    return log;
  };
  shard_oracle_settings s = settings({"eviction", "state"});
  s.evict_after_ns = 50;
  expect_caught(check(with_sweep(49), s), "eviction", "flushed by an idle sweep 49ns after its last kept result");
  BOOST_TEST(!check(with_sweep(50), s).has_value());
  // At shutdown the final flush takes every resident state, however young.
  shard_oracle_settings young = settings({"eviction"});
  young.evict_after_ns = 1'000'000;
  BOOST_TEST(!check(clean_log(), young).has_value());
}

BOOST_AUTO_TEST_CASE(placement_catches_an_item_on_another_shard_than_shard_of_named) {
  auto log = clean_log();
  log[5].shard = 1;  // item 3 dispatched on shard 1; its submission said shard 0
  log[6].shard = 1;
  expect_caught(check(log, settings({"placement"})), "placement",
                "item 3 reached shard 1, but shard_of named shard 0 when submit() sent it");
  BOOST_TEST(!check(log, settings({"conservation", "state"})).has_value());
  // The submission is logged when the call returns, after the dispatch: the whole log is read for it.
  auto late = clean_log();
  std::swap(late[2], late[5]);
  late[2].shard = 1;
  expect_caught(check(late, settings({"placement"})), "placement", "item 3 reached shard 1");
}

BOOST_AUTO_TEST_CASE(eviction_catches_a_sweep_that_chooses_a_key_with_work_queued) {
  // Key 1 kept state; its item 2 is proven admitted (key 2's class-1 item 3,
  // sent after it by the same actor, is out); a sweep then chooses key 1.
  shard_event chosen = flush(K::flush_chosen, 1);
  chosen.t = 100;
  const std::vector<shard_event> prefix = {ev(K::submitted, 1, 1, 0),
                                           seen(ev(K::dispatched, 1, 1, 0), std::nullopt),
                                           kept(1, 1, 0, 1),
                                           ev(K::submitted, 2, 1, 1),
                                           ev(K::submitted, 3, 2, 2, 1),
                                           seen(ev(K::dispatched, 3, 2, 2, 1), std::nullopt)};
  shard_oracle_settings mid = settings({"eviction"});
  mid.end_of_run = false;
  auto busy = prefix;
  busy.push_back(chosen);
  expect_caught(check(busy, mid), "eviction",
                "key 1 at t=100ns (event #6): chosen by an idle sweep while item 2 of the key was queued");
  // Item 2 dispatched before the choice: the key was not idle-with-work then.
  auto idle = prefix;
  idle.push_back(seen(ev(K::dispatched, 2, 1, 1), 1));
  idle.push_back(kept(2, 1, 1, 2));
  idle.push_back(chosen);
  BOOST_TEST(!check(idle, mid).has_value());
  // Not proven admitted (nothing the actor sent later is out yet): not judged.
  auto unproven = prefix;
  unproven.pop_back();
  unproven.push_back(chosen);
  BOOST_TEST(!check(unproven, mid).has_value());
  // After the router's drop began, a choice is the final flush's: not judged.
  auto final_flush = prefix;
  final_flush.push_back(bare(K::shutdown));
  final_flush.push_back(chosen);
  BOOST_TEST(!check(final_flush, mid).has_value());
}
