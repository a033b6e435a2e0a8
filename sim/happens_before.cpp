#include "sim/happens_before.hpp"

#include <algorithm>

namespace lockstep::sim {

void happens_before::clear() {
  // The vectors keep their capacity for the next run: a run that checks
  // memory sets up every fiber's clocks again, and allocating them was a
  // fifth of a small program's run.
  for (std::size_t i = 0; i < used_; ++i) {
    fibers_[i].now.clear();
    fibers_[i].fenced.clear();
    fibers_[i].pending.clear();
  }
  used_ = 0;
  published_.clear();
}

happens_before::fiber_clocks& happens_before::of(fiber_id t) {
  if (t >= fibers_.size()) fibers_.resize(static_cast<std::size_t>(t) + 1);
  if (t >= used_) used_ = static_cast<std::size_t>(t) + 1;
  fiber_clocks& c = fibers_[t];
  if (c.now.size() <= t) c.now.resize(static_cast<std::size_t>(t) + 1, 0);
  if (c.now[t] == 0) c.now[t] = 1;  // a fiber's first epoch is 1: 0 means "nothing seen of it"
  return c;
}

void happens_before::join(vector_clock& into, const vector_clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

happens_before::epoch happens_before::now(fiber_id t) { return epoch{t, of(t).now[t]}; }

bool happens_before::ordered_before(epoch e, fiber_id t) const {
  if (e.fiber == t) return true;  // program order
  if (t >= used_) return false;   // t has seen nothing yet
  const vector_clock& c = fibers_[t].now;
  return e.fiber < c.size() && c[e.fiber] >= e.time;
}

void happens_before::spawned(fiber_id parent, fiber_id child) {
  fiber_clocks& kid = of(child);
  kid.fenced.clear();
  kid.pending.clear();
  if (parent == child) return;
  const vector_clock from = of(parent).now;
  join(of(child).now, from);
  tick(parent);
}

void happens_before::transfer(fiber_id from, fiber_id to) {
  if (from == to) return;
  const vector_clock c = of(from).now;
  join(of(to).now, c);
  tick(from);
}

void happens_before::acquire(fiber_id t, std::uint64_t key) {
  const auto it = published_.find(key);
  if (it == published_.end()) return;
  join(of(t).now, it->second);
}

void happens_before::release(fiber_id t, std::uint64_t key) {
  published_[key] = of(t).now;
  tick(t);
}

void happens_before::release_merge(fiber_id t, std::uint64_t key) {
  join(published_[key], of(t).now);
  tick(t);
}

void happens_before::relaxed_load(fiber_id t, std::uint64_t key) {
  const auto it = published_.find(key);
  if (it == published_.end()) return;
  join(of(t).pending, it->second);
}

void happens_before::relaxed_store(fiber_id t, std::uint64_t key) { published_[key] = of(t).fenced; }

void happens_before::relaxed_modify(fiber_id t, std::uint64_t key) { join(published_[key], of(t).fenced); }

void happens_before::acquire_fence(fiber_id t) {
  fiber_clocks& c = of(t);
  join(c.now, c.pending);
}

void happens_before::release_fence(fiber_id t) {
  fiber_clocks& c = of(t);
  c.fenced = c.now;
  tick(t);
}

}  // namespace lockstep::sim
