#include "sim/memory_model.hpp"

#include <cstring>
#include <utility>

#include "sim/executor.hpp"

namespace lockstep::sim {

void memory_model::clear() {
  for (fiber_view& v : views_) {  // kept for their capacity, as the clocks are
    v.fenced.clear();
    v.sc_fence = 0;
  }
  sc_fences_.clear();
  sc_stores_ = 0;
}

memory_model::fiber_view& memory_model::view(fiber_id t) {
  if (t >= views_.size()) views_.resize(static_cast<std::size_t>(t) + 1);
  return views_[t];
}

void memory_model::seed(store_history& h, const void* value, std::uint64_t key) {
  if (!h.empty()) return;
  store_history::store s{{everyone, 0}, 0, false, {}, {}};
  if (const happens_before::vector_clock* c = hb_->published(key)) s.published = *c;
  h.stores_.reserve(4);  // most locations see a few stores a run: one allocation, not three
  h.values_.reserve(4 * h.bytes_);
  insert(h, 0, std::move(s), value);
}

bool memory_model::seen(happens_before::epoch e, fiber_id t, bool seq_cst) const {
  if (e.fiber == everyone || hb_->ordered_before(e, t)) return true;
  if (t < views_.size()) {  // (stale entries past the run's fibers are empty)
    const happens_before::vector_clock& v = views_[t].fenced;
    if (e.fiber < v.size() && v[e.fiber] >= e.time) return true;
  }
  // A seq_cst operation comes after every earlier seq_cst fence in S: what
  // was sequenced before those fences is visible to it ([atomics.fences]).
  return seq_cst && e.fiber < sc_fences_.size() && sc_fences_[e.fiber] >= e.time;
}

std::size_t memory_model::floor(const store_history& h, fiber_id t, bool seq_cst) const {
  const std::uint64_t fenced_sc = t < views_.size() ? views_[t].sc_fence : 0;
  for (std::size_t i = h.stores_.size(); i-- > 1;) {
    const store_history::store& s = h.stores_[i];
    if (s.sc != 0 && (seq_cst || s.sc <= fenced_sc)) return i;  // the last seq_cst store before it in S
    if (seen(s.by, t, seq_cst)) return i;
    for (const happens_before::epoch& r : s.readers) {
      if (seen(r, t, seq_cst)) return i;
    }
  }
  return 0;
}

void memory_model::read(store_history& h, std::size_t i, fiber_id t, std::memory_order o) {
  store_history::store& s = h.stores_[i];
  if (acquires(o)) {
    hb_->acquire_clock(t, s.published);
  } else {
    hb_->pend(t, s.published);
  }
  const happens_before::epoch now = hb_->now(t);
  for (const happens_before::epoch& r : s.readers) {
    if (r.fiber == t) return;  // its first read is kept: a later one is seen only if the first is
  }
  s.readers.push_back(now);
}

std::size_t memory_model::load(store_history& h, fiber_id t, std::memory_order o) {
  const std::size_t newest = h.size() - 1;
  const std::size_t oldest = floor(h, t, o == std::memory_order_seq_cst);
  // 0, the ordinary outcome, is the newest store; k the k-th older.
  const std::size_t i = newest - ex_->choose(newest - oldest + 1, "reads_from");
  read(h, i, t, o);
  return i;
}

void memory_model::load_newest(store_history& h, fiber_id t, std::memory_order o) { read(h, h.size() - 1, t, o); }

happens_before::vector_clock memory_model::published_by(fiber_id t, std::memory_order o) {
  if (releases(o)) return hb_->release_clock(t);
  return hb_->fenced(t);  // what its last release fence covered
}

void memory_model::store(store_history& h, fiber_id t, std::memory_order o, const void* value) {
  const bool seq_cst = o == std::memory_order_seq_cst;
  std::size_t at = h.size();
  if (!seq_cst) {
    // Any place after the newest store it must follow, except between an
    // RMW and the store it read. Counted from the end: 0 appends.
    const std::size_t lowest = floor(h, t, false) + 1;
    std::size_t places = 1;
    for (std::size_t p = lowest; p < h.size(); ++p) places += h.stores_[p].rmw ? 0 : 1;
    std::size_t back = ex_->choose(places, "store_order");
    for (std::size_t p = h.size(); back > 0;) {
      --p;
      if (!h.stores_[p].rmw) {
        at = p;
        --back;
      }
    }
  }
  const happens_before::epoch by = hb_->now(t);
  store_history::store s{by, seq_cst ? ++sc_stores_ : 0, false, published_by(t, o), {}};
  insert(h, at, std::move(s), value);
}

void memory_model::modify(store_history& h, fiber_id t, std::memory_order o, const void* value) {
  load_newest(h, t, o);
  const happens_before::epoch by = hb_->now(t);
  // It continues the release sequence of the store it read.
  happens_before::vector_clock published = h.stores_.back().published;
  happens_before::join(published, published_by(t, o));
  store_history::store s{by, o == std::memory_order_seq_cst ? ++sc_stores_ : 0, true, std::move(published), {}};
  insert(h, h.size(), std::move(s), value);
}

void memory_model::fence(fiber_id t, std::memory_order o) {
  if (acquires(o)) hb_->acquire_fence(t);
  if (o == std::memory_order_seq_cst) {
    happens_before::join(sc_fences_, hb_->clock(t));
    fiber_view& v = view(t);
    happens_before::join(v.fenced, sc_fences_);
    v.sc_fence = sc_stores_;
  }
  if (releases(o)) hb_->release_fence(t);
}

void memory_model::insert(store_history& h, std::size_t at, store_history::store s, const void* value) {
  const auto* bytes = static_cast<const std::byte*>(value);
  h.stores_.insert(h.stores_.begin() + static_cast<std::ptrdiff_t>(at), std::move(s));
  h.values_.insert(h.values_.begin() + static_cast<std::ptrdiff_t>(at * h.bytes_), bytes, bytes + h.bytes_);
  if (h.stores_.size() > history_limit) {
    h.stores_.erase(h.stores_.begin());
    h.values_.erase(h.values_.begin(), h.values_.begin() + static_cast<std::ptrdiff_t>(h.bytes_));
  }
}

}  // namespace lockstep::sim
