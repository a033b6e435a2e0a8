// Goal: prove lockstep::scheduler keeps per-key order, state, budgets, fairness, expiry and eviction right, against a reference model.
#define BOOST_TEST_MODULE scheduler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/scheduler.hpp"

// Boost.Test cannot print these std types; comparisons on them still fail loudly.
using key_payload = std::pair<std::uint64_t, int>;
using payload_state = std::pair<int, std::optional<int>>;
using maybe_key_payload = std::optional<key_payload>;
BOOST_TEST_DONT_PRINT_LOG_VALUE(std::optional<int>)
BOOST_TEST_DONT_PRINT_LOG_VALUE(maybe_key_payload)
BOOST_TEST_DONT_PRINT_LOG_VALUE(key_payload)
BOOST_TEST_DONT_PRINT_LOG_VALUE(payload_state)

namespace {

using lockstep::class_id;
using lockstep::disposition;
using lockstep::scheduler_config;
using sched = lockstep::scheduler<std::uint64_t, int, int>;
using evicted = std::vector<std::pair<std::uint64_t, int>>;

scheduler_config config(std::vector<std::size_t> max_inflight, std::size_t max_pending = 4096,
                        std::int64_t evict_after_ns = 1'000'000) {
    return scheduler_config{std::move(max_inflight), max_pending, evict_after_ns};
}

// Every mutation goes through here, so check_invariants runs after each one.
struct book {
    sched s;

    explicit book(scheduler_config cfg) : s(std::move(cfg)) { s.check_invariants(); }

    void admit(std::uint64_t key, class_id cls, int payload, std::int64_t now,
               std::optional<std::int64_t> expires_at = std::nullopt) {
        s.admit(key, cls, expires_at, payload, now);
        s.check_invariants();
    }
    std::optional<sched::dispatch> next(class_id cls, std::int64_t now) {
        auto d = s.next(cls, now);
        s.check_invariants();
        return d;
    }
    void keep(const sched::dispatch& d, int state, std::int64_t now) {
        s.complete(d.key, d.cls, disposition<int>::keep(state), now);
        s.check_invariants();
    }
    void drop(const sched::dispatch& d, std::int64_t now) {
        s.complete(d.key, d.cls, disposition<int>::drop(), now);
        s.check_invariants();
    }
    std::optional<std::pair<std::uint64_t, int>> pop_expired() {
        auto e = s.pop_expired();
        s.check_invariants();
        return e;
    }
    evicted evict(std::int64_t now) {
        evicted out;
        s.evict(now, out);
        s.check_invariants();
        return out;
    }
    evicted evict_all() {
        evicted out;
        s.evict_all(out);
        s.check_invariants();
        return out;
    }
    void finish_evict(std::uint64_t key, std::int64_t now) {
        s.finish_evict(key, now);
        s.check_invariants();
    }
};

// Dispatches one item of cls, failing the test if there is none.
sched::dispatch take(book& b, class_id cls, std::int64_t now) {
    auto d = b.next(cls, now);
    BOOST_REQUIRE(d.has_value());
    return std::move(*d);
}

}  // namespace

BOOST_AUTO_TEST_CASE(config_is_validated_naming_the_field) {
    auto names = [](const scheduler_config& cfg, const std::string& field) {
        try {
            sched s(cfg);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what()).find(field) != std::string::npos;
        }
        return false;
    };
    BOOST_TEST(names(config({}), "max_inflight"));
    BOOST_TEST(names(config({2, 0}), "max_inflight"));
    BOOST_TEST(names(config({1}, 0), "max_pending"));
    BOOST_TEST(names(config({1}, 1, -1), "evict_after_ns"));
    BOOST_CHECK_NO_THROW(sched(config({1, 1}, 1, 0)));
}

BOOST_AUTO_TEST_CASE(one_key_runs_in_fifo_order_with_accumulating_state) {
    book b(config({4}));
    for (int p = 0; p < 3; ++p) {
        b.admit(7, 0, p, 0);
    }
    std::vector<std::pair<int, std::optional<int>>> seen;
    for (std::int64_t t = 1; t <= 3; ++t) {
        auto d = take(b, 0, t);
        seen.emplace_back(d.payload, d.state);
        b.keep(d, d.state.value_or(0) + 1, t);
    }
    const std::vector<std::pair<int, std::optional<int>>> want{{0, std::nullopt}, {1, 1}, {2, 2}};
    BOOST_TEST(seen == want);
    BOOST_TEST(!b.next(0, 4).has_value());
    BOOST_TEST(b.s.snapshot().resident == 1U);
}

BOOST_AUTO_TEST_CASE(drop_makes_the_next_dispatch_reload) {
    book b(config({4}));
    b.admit(1, 0, 10, 0);
    b.admit(1, 0, 11, 0);
    b.admit(1, 0, 12, 0);
    auto first = take(b, 0, 1);
    b.keep(first, 5, 1);
    auto second = take(b, 0, 2);
    BOOST_TEST(second.state == std::optional<int>(5));
    b.drop(second, 2);
    BOOST_TEST(b.s.snapshot().resident == 0U);
    auto third = take(b, 0, 3);
    BOOST_TEST(third.payload == 12);
    BOOST_TEST(!third.state.has_value());
    b.drop(third, 3);
    BOOST_TEST(b.s.idle());
    BOOST_TEST(b.s.tracked_keys() == 0U);
}

BOOST_AUTO_TEST_CASE(a_key_has_at_most_one_item_in_flight) {
    book b(config({8}));
    b.admit(3, 0, 1, 0);
    b.admit(3, 0, 2, 0);
    auto d = take(b, 0, 0);
    BOOST_TEST(d.payload == 1);
    BOOST_TEST(!b.next(0, 0).has_value());  // budget left, but the key is busy
    b.admit(4, 0, 9, 0);
    BOOST_TEST(take(b, 0, 0).key == 4U);     // another key is not blocked by it
    b.keep(d, 1, 1);
    auto again = take(b, 0, 1);
    BOOST_TEST(again.payload == 2);
    BOOST_TEST(again.state == std::optional<int>(1));
}

BOOST_AUTO_TEST_CASE(class_budgets_are_enforced_per_class) {
    book b(config({2, 1}));
    for (std::uint64_t k = 0; k < 4; ++k) {
        b.admit(k, 0, static_cast<int>(k), 0);
        b.admit(10 + k, 1, static_cast<int>(k), 0);
    }
    auto a0 = take(b, 0, 0);
    auto a1 = take(b, 0, 0);
    BOOST_TEST(!b.next(0, 0).has_value());
    auto b0 = take(b, 1, 0);
    BOOST_TEST(!b.next(1, 0).has_value());
    BOOST_TEST((b.s.snapshot().inflight == std::vector<std::size_t>{2, 1}));
    b.drop(b0, 1);  // freeing class 1 does not free class 0
    BOOST_TEST(!b.next(0, 1).has_value());
    BOOST_TEST(take(b, 1, 1).key == 11U);
    b.drop(a0, 1);
    BOOST_TEST(take(b, 0, 1).key == 2U);
    BOOST_TEST(!b.next(0, 1).has_value());
    // a1 is in flight for class 0, so completing it as class 1 is refused.
    BOOST_CHECK_THROW(b.s.complete(a1.key, 1, disposition<int>::drop(), 2), std::logic_error);
    b.drop(a1, 2);
}

BOOST_AUTO_TEST_CASE(round_robin_is_fair_across_keys_within_a_class) {
    book b(config({1}));
    for (int p = 0; p < 3; ++p) {
        b.admit(1, 0, p, 0);
        b.admit(2, 0, p, 0);
    }
    b.admit(3, 0, 0, 0);
    std::vector<std::uint64_t> order;
    while (auto d = b.next(0, 1)) {
        order.push_back(d->key);
        b.keep(*d, 0, 1);
    }
    // Submission order would be 1 1 1 2 2 2 3; each key gets one turn per round.
    BOOST_TEST((order == std::vector<std::uint64_t>{1, 2, 3, 1, 2, 1, 2}));
}

BOOST_AUTO_TEST_CASE(a_later_item_of_another_class_goes_to_that_class_ring) {
    book b(config({1, 1}));
    b.admit(5, 0, 1, 0);
    b.admit(5, 1, 2, 0);
    BOOST_TEST(!b.next(1, 0).has_value());  // the head is class 0
    auto d = take(b, 0, 0);
    BOOST_TEST(!b.next(1, 0).has_value());  // in flight: the class 1 item waits
    b.keep(d, 7, 1);
    BOOST_TEST(!b.next(0, 1).has_value());
    auto e = take(b, 1, 1);
    BOOST_TEST(e.payload == 2);
    BOOST_TEST(e.cls == 1U);
    BOOST_TEST(e.state == std::optional<int>(7));
}

BOOST_AUTO_TEST_CASE(expired_heads_are_shed_without_consuming_budget) {
    book b(config({1}));
    b.admit(5, 0, 50, 100, 100);  // ttl zero: expires the moment it is admitted
    b.admit(6, 0, 60, 100, 105);
    b.admit(6, 0, 61, 100);
    b.admit(7, 0, 70, 100);
    BOOST_TEST(b.s.pending() == 4U);
    auto d = take(b, 0, 105);  // sheds 5's item and 6's head, then serves 7
    BOOST_TEST(d.key == 7U);
    BOOST_TEST(b.s.pending() == 1U);
    BOOST_TEST(b.pop_expired() == std::make_optional(std::pair<std::uint64_t, int>{5, 50}));
    BOOST_TEST(b.pop_expired() == std::make_optional(std::pair<std::uint64_t, int>{6, 60}));
    BOOST_TEST(!b.pop_expired().has_value());
    b.drop(d, 106);
    auto e = take(b, 0, 106);  // key 6 was re-filed at the back, behind 7
    BOOST_TEST(e.payload == 61);
    BOOST_TEST(b.s.tracked_keys() == 1U);  // key 5 held nothing and was forgotten
}

BOOST_AUTO_TEST_CASE(expiry_is_inclusive_and_not_early) {
    book b(config({1}));
    b.admit(1, 0, 1, 0, 10);
    auto d = take(b, 0, 9);  // one ns before the deadline: still live
    BOOST_TEST(d.payload == 1);
    b.admit(2, 0, 2, 0, 10);
    BOOST_TEST(!b.next(0, 10).has_value());  // budget full: nothing is shed either
    BOOST_TEST(!b.pop_expired().has_value());
    b.drop(d, 10);
    BOOST_TEST(!b.next(0, 10).has_value());  // at the deadline: expired
    BOOST_TEST(b.pop_expired() == std::make_optional(std::pair<std::uint64_t, int>{2, 2}));
    BOOST_TEST(b.s.idle());
}

BOOST_AUTO_TEST_CASE(is_saturated_at_max_pending) {
    book b(config({4}, 3));
    b.admit(2, 0, 3, 0, 0);
    b.admit(1, 0, 1, 0);
    BOOST_TEST(!b.s.is_saturated());
    b.admit(1, 0, 2, 0);
    BOOST_TEST(b.s.is_saturated());
    auto d = take(b, 0, 1);  // sheds key 2's item, dispatches key 1's head
    BOOST_TEST(d.key == 1U);
    BOOST_TEST(b.s.pending() == 1U);
    BOOST_TEST(!b.s.is_saturated());
}

BOOST_AUTO_TEST_CASE(eviction_waits_evict_after_and_a_flushing_key_queues_but_does_not_dispatch) {
    book b(config({4}, 64, 100));
    b.admit(1, 0, 1, 0);
    b.admit(2, 0, 2, 0);
    auto d1 = take(b, 0, 5);
    auto d2 = take(b, 0, 5);
    b.keep(d1, 11, 10);
    BOOST_TEST(b.evict(109).empty());  // key 1 idle 99 ns: not yet; key 2 in flight
    b.keep(d2, 22, 150);
    BOOST_TEST((b.evict(110) == evicted{{1, 11}}));
    BOOST_TEST(b.s.snapshot().flushing == 1U);
    BOOST_TEST(b.s.snapshot().resident == 1U);
    BOOST_TEST(b.evict(110).empty());  // taken exactly once
    b.admit(1, 0, 3, 120);
    BOOST_TEST(!b.next(0, 120).has_value());  // flushing: queued, not dispatched
    BOOST_TEST(b.s.pending() == 1U);
    b.finish_evict(1, 130);
    auto again = take(b, 0, 130);
    BOOST_TEST(again.payload == 3);
    BOOST_TEST(!again.state.has_value());  // the flushed state is not reused
    b.admit(2, 0, 4, 200);  // queued work protects key 2 from eviction
    BOOST_TEST(b.evict(1000).empty());
}

BOOST_AUTO_TEST_CASE(evict_all_takes_every_resident_state_exactly_once) {
    book b(config({4}));
    for (std::uint64_t k : {3, 1, 2, 4}) {
        b.admit(k, 0, 0, 0);
    }
    std::map<std::uint64_t, sched::dispatch> running;
    while (auto d = b.next(0, 0)) {
        running.emplace(d->key, std::move(*d));
    }
    for (std::uint64_t k : {1, 2, 3}) {
        b.keep(running.at(k), static_cast<int>(10 * k), 1);
    }
    b.admit(2, 0, 9, 2);  // key 2 is ready and resident: it must leave its ring
    const auto all = b.evict_all();
    BOOST_TEST((all == evicted{{1, 10}, {2, 20}, {3, 30}}));
    BOOST_TEST(b.evict_all().empty());
    BOOST_TEST(!b.next(0, 3).has_value());  // key 2 flushes before it dispatches
    b.keep(running.at(4), 40, 4);  // in flight at the sweep, resident after it
    BOOST_TEST((b.evict_all() == evicted{{4, 40}}));
    for (std::uint64_t k : {1, 2, 3, 4}) {
        b.finish_evict(k, 5);
    }
    auto d = take(b, 0, 5);
    BOOST_TEST(d.key == 2U);
    BOOST_TEST(!d.state.has_value());
    b.drop(d, 6);
    BOOST_TEST(b.s.idle());
    BOOST_TEST(b.s.tracked_keys() == 0U);
}

BOOST_AUTO_TEST_CASE(snapshot_gauges_track_each_phase) {
    book b(config({2, 2}, 64, 10));
    auto gauges = [&] {
        const auto s = b.s.snapshot();
        return std::vector<std::size_t>{s.pending, s.inflight[0], s.inflight[1], s.resident,
                                        s.flushing};
    };
    using g = std::vector<std::size_t>;
    BOOST_TEST(gauges() == (g{0, 0, 0, 0, 0}));
    b.admit(1, 0, 1, 0);
    b.admit(2, 1, 2, 0);
    b.admit(2, 1, 3, 0);
    BOOST_TEST(gauges() == (g{3, 0, 0, 0, 0}));
    auto d1 = take(b, 0, 0);
    auto d2 = take(b, 1, 0);
    BOOST_TEST(gauges() == (g{1, 1, 1, 0, 0}));
    b.keep(d1, 1, 1);
    b.keep(d2, 2, 1);
    BOOST_TEST(gauges() == (g{1, 0, 0, 2, 0}));
    BOOST_TEST((b.evict(11) == evicted{{1, 1}}));  // key 2 still has work queued
    BOOST_TEST(gauges() == (g{1, 0, 0, 1, 1}));
    b.finish_evict(1, 12);
    BOOST_TEST(gauges() == (g{1, 0, 0, 1, 0}));
    BOOST_TEST(b.s.tracked_keys() == 1U);
    b.drop(take(b, 1, 12), 13);
    BOOST_TEST(gauges() == (g{0, 0, 0, 0, 0}));
    BOOST_TEST(b.s.idle());
}

BOOST_AUTO_TEST_CASE(misuse_is_rejected_and_leaves_the_scheduler_intact) {
    book b(config({1, 1}));
    BOOST_CHECK_THROW(b.admit(1, 2, 0, 0), std::out_of_range);
    BOOST_CHECK_THROW(b.next(2, 0), std::out_of_range);
    BOOST_TEST(b.s.tracked_keys() == 0U);
    b.admit(1, 0, 0, 0);
    BOOST_CHECK_THROW(b.s.complete(1, 0, disposition<int>::drop(), 0), std::logic_error);
    BOOST_CHECK_THROW(b.s.complete(9, 0, disposition<int>::drop(), 0), std::logic_error);
    auto d = take(b, 0, 0);
    BOOST_CHECK_THROW(b.s.complete(1, 1, disposition<int>::keep(1), 0), std::logic_error);
    BOOST_CHECK_THROW(b.finish_evict(1, 0), std::logic_error);
    b.s.check_invariants();
    b.keep(d, 1, 1);
    BOOST_CHECK_THROW(b.keep(d, 1, 1), std::logic_error);  // completed twice
    BOOST_TEST(b.s.snapshot().resident == 1U);
    BOOST_CHECK_THROW(disposition<int>::drop().state(), std::logic_error);
}

// ---- randomized stress against a reference model ----

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct model_item {
    int payload;
    class_id cls;
    std::optional<std::int64_t> expires_at;
};

enum class model_phase { idle, in_flight, flushing };

struct model_key {
    std::deque<model_item> fifo;
    std::optional<int> state;
    std::int64_t last_use = 0;
    model_phase phase = model_phase::idle;
    class_id cls = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(randomized_ops_match_a_reference_model) {
    const std::vector<std::size_t> budget{2, 1};
    const std::int64_t evict_after = 20;
    book b(config(budget, 24, evict_after));
    std::map<std::uint64_t, model_key> m;
    std::uint64_t rng = 0x5eed;
    auto draw = [&](std::uint64_t n) { return splitmix64(rng) % n; };
    std::int64_t now = 0;
    int next_payload = 0;
    std::size_t dispatched = 0;
    std::size_t shed = 0;
    std::size_t flushed = 0;

    auto pick = [&](model_phase ph) -> std::optional<std::uint64_t> {
        std::vector<std::uint64_t> ks;
        for (const auto& [k, mk] : m) {
            if (mk.phase == ph) ks.push_back(k);
        }
        if (ks.empty()) return std::nullopt;
        return ks[draw(ks.size())];
    };
    auto take_flushed = [&](const evicted& out, bool all) {
        evicted want;
        for (auto& [k, mk] : m) {
            const bool stale = mk.fifo.empty() && now - mk.last_use >= evict_after;
            if (mk.state && (all || stale)) {
                want.emplace_back(k, *mk.state);
                mk.state.reset();
                mk.phase = model_phase::flushing;
            }
        }
        BOOST_REQUIRE(out == want);
        flushed += out.size();
    };

    for (int step = 0; step < 20000; ++step) {
        now += static_cast<std::int64_t>(draw(4));
        const std::uint64_t op = draw(100);
        if (op < 38) {
            const std::uint64_t k = draw(5);
            const auto cls = static_cast<class_id>(draw(2));
            std::optional<std::int64_t> exp;
            if (draw(4) == 0) exp = now + static_cast<std::int64_t>(draw(12));
            b.admit(k, cls, next_payload, now, exp);
            m[k].fifo.push_back({next_payload++, cls, exp});
        } else if (op < 70) {
            const auto cls = static_cast<class_id>(draw(2));
            auto d = b.next(cls, now);
            // Items shed on the way must be heads of their keys, and expired.
            while (auto e = b.pop_expired()) {
                model_key& mk = m.at(e->first);
                BOOST_REQUIRE(!mk.fifo.empty());
                BOOST_REQUIRE(mk.fifo.front().payload == e->second);
                BOOST_REQUIRE(mk.fifo.front().expires_at.has_value());
                BOOST_REQUIRE(*mk.fifo.front().expires_at <= now);
                mk.fifo.pop_front();
                ++shed;
            }
            std::size_t busy = 0;
            for (const auto& [k, mk] : m) busy += mk.phase == model_phase::in_flight && mk.cls == cls;
            if (d) {
                BOOST_REQUIRE(busy < budget[cls]);
                model_key& mk = m.at(d->key);
                BOOST_REQUIRE(mk.phase == model_phase::idle);
                BOOST_REQUIRE(!mk.fifo.empty());
                BOOST_REQUIRE(mk.fifo.front().payload == d->payload);
                BOOST_REQUIRE(mk.fifo.front().cls == cls);
                BOOST_REQUIRE(!(mk.fifo.front().expires_at && *mk.fifo.front().expires_at <= now));
                BOOST_REQUIRE(d->state == mk.state);
                BOOST_REQUIRE(d->cls == cls);
                mk.fifo.pop_front();
                mk.state.reset();
                mk.phase = model_phase::in_flight;
                mk.cls = cls;
                ++dispatched;
            } else if (busy < budget[cls]) {
                // Nothing dispatched with budget free: no key may be ready for cls.
                for (const auto& [k, mk] : m) {
                    BOOST_REQUIRE(!(mk.phase == model_phase::idle && !mk.fifo.empty() &&
                                    mk.fifo.front().cls == cls));
                }
            }
        } else if (op < 88) {
            if (auto k = pick(model_phase::in_flight)) {
                model_key& mk = m.at(*k);
                if (draw(4) == 0) {
                    b.s.complete(*k, mk.cls, disposition<int>::drop(), now);
                    mk.state.reset();
                } else {
                    const int st = static_cast<int>(draw(1'000'000));
                    b.s.complete(*k, mk.cls, disposition<int>::keep(st), now);
                    mk.state = st;
                    mk.last_use = now;
                }
                b.s.check_invariants();
                mk.phase = model_phase::idle;
            }
        } else if (op < 93) {
            take_flushed(b.evict(now), false);
        } else if (op < 99) {
            if (auto k = pick(model_phase::flushing)) {
                b.finish_evict(*k, now);
                m.at(*k).phase = model_phase::idle;
            }
        } else {
            take_flushed(b.evict_all(), true);
        }
        std::erase_if(m, [](const auto& kv) {
            const model_key& mk = kv.second;
            return mk.phase == model_phase::idle && mk.fifo.empty() && !mk.state;
        });

        std::size_t pending = 0;
        std::size_t resident = 0;
        std::size_t flushing = 0;
        std::vector<std::size_t> inflight(2, 0);
        for (const auto& [k, mk] : m) {
            pending += mk.fifo.size();
            resident += mk.state.has_value();
            flushing += mk.phase == model_phase::flushing;
            if (mk.phase == model_phase::in_flight) ++inflight[mk.cls];
        }
        const auto snap = b.s.snapshot();
        BOOST_REQUIRE(snap.pending == pending);
        BOOST_REQUIRE(snap.inflight == inflight);
        BOOST_REQUIRE(snap.resident == resident);
        BOOST_REQUIRE(snap.flushing == flushing);
        BOOST_REQUIRE(b.s.is_saturated() == (pending >= 24));
        BOOST_REQUIRE(b.s.tracked_keys() == m.size());
    }
    // The run must have exercised every path, or it proves little.
    BOOST_TEST(dispatched > 1000U);
    BOOST_TEST(shed > 100U);
    BOOST_TEST(flushed > 100U);
}
