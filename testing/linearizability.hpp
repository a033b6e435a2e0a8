// Linearizability (Herlihy & Wing, TOPLAS 1990) of a recorded concurrent
// history against a sequential model, by Wing & Gong's search (J. Parallel
// Distrib. Comput. 1993): pick an operation that no pending one must precede
// (none returned before it was invoked), apply it to a copy of the model,
// keep it if the model gives the result the history saw, and backtrack.
// Histories that touch independent keys are split and checked key by key
// (P-compositionality, Horn & Kroening, FORTE 2015; as Porcupine does).
//
// The user describes the object once: its operations, each applied to the
// implementation under test (inside a simulated run) and to the model (a
// plain sequential object), both returning the result as text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::testing::lin {

/// A call of operation `op` (an index into spec::operations) with `arg`.
struct call {
  std::size_t op = 0;
  std::int64_t arg = 0;
};

/// One completed call in a history: who made it, what it returned, and when
/// it was invoked and returned (positions in the run's order of events).
struct event {
  std::uint32_t thread = 0;
  call what;
  std::string result;
  std::uint64_t invoked = 0;
  std::uint64_t returned = 0;
};

template <class Impl, class Model>
struct operation {
  std::string name;      ///< "push"
  bool takes_arg = true;  ///< shown as push(3), or pop()
  std::function<std::string(Impl&, std::int64_t)> on_impl;
  std::function<std::string(Model&, std::int64_t)> on_model;
  /// P-compositionality: calls with different keys commute and are checked
  /// apart (a map's key); empty: one partition.
  std::function<std::int64_t(std::int64_t arg)> key{};
};

template <class Impl, class Model>
struct spec {
  Model initial{};
  std::vector<operation<Impl, Model>> operations;
  std::int64_t min_arg = 1;  ///< generated arguments lie in [min_arg, max_arg]
  std::int64_t max_arg = 3;
};

template <class Impl, class Model>
std::string describe(const spec<Impl, Model>& s, const call& c) {
  const operation<Impl, Model>& op = s.operations[c.op];
  return op.name + "(" + (op.takes_arg ? std::to_string(c.arg) : std::string()) + ")";
}

namespace detail {

template <class Impl, class Model>
bool search(const spec<Impl, Model>& s, const std::vector<const event*>& h, std::vector<bool>& done,
            std::size_t left, const Model& model, std::vector<std::size_t>& order) {
  if (left == 0) return true;
  // A pending operation may go next only if no other pending one returned
  // before it was invoked (it must then come first).
  std::uint64_t first_return = UINT64_MAX;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (!done[i]) first_return = std::min(first_return, h[i]->returned);
  }
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (done[i] || h[i]->invoked > first_return) continue;
    Model next = model;
    const event& e = *h[i];
    if (s.operations[e.what.op].on_model(next, e.what.arg) != e.result) continue;
    done[i] = true;
    order.push_back(i);
    if (search(s, h, done, left - 1, next, order)) return true;
    order.pop_back();
    done[i] = false;
  }
  return false;
}

}  // namespace detail

/// The history is linearizable: some order of its calls, consistent with
/// their real-time order, gives every result from the model. Checked key by
/// key where the operations have keys.
template <class Impl, class Model>
bool linearizable(const spec<Impl, Model>& s, const std::vector<event>& history) {
  std::map<std::int64_t, std::vector<const event*>> parts;  // ordered: deterministic
  for (const event& e : history) {
    const auto& key = s.operations[e.what.op].key;
    parts[key ? key(e.what.arg) : 0].push_back(&e);
  }
  for (const auto& [key, part] : parts) {
    std::vector<bool> done(part.size(), false);
    std::vector<std::size_t> order;
    if (!detail::search(s, part, done, part.size(), s.initial, order)) return false;
  }
  return true;
}

/// The history as a table: a column per thread, a row per call in the
/// thread's order, each cell "call -> result [invoked, returned]".
template <class Impl, class Model>
std::string table(const spec<Impl, Model>& s, const std::vector<event>& history, std::uint32_t threads) {
  std::vector<std::vector<std::string>> cells(threads);
  std::vector<const event*> sorted;
  for (const event& e : history) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const event* a, const event* b) { return a->invoked < b->invoked; });
  std::size_t width = 10, rows = 0;
  for (const event* e : sorted) {
    std::string cell = describe(s, e->what) + " -> " + e->result + " [" + std::to_string(e->invoked) + ", " +
                       std::to_string(e->returned) + "]";
    width = std::max(width, cell.size());
    cells[e->thread].push_back(std::move(cell));
    rows = std::max(rows, cells[e->thread].size());
  }
  auto pad = [width](std::string t) { return t + std::string(width - std::min(width, t.size()), ' '); };
  std::string out;
  for (std::uint32_t t = 0; t < threads; ++t) out += (t ? " | " : "  ") + pad("thread " + std::to_string(t));
  out += "\n";
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::uint32_t t = 0; t < threads; ++t) out += (t ? " | " : "  ") + pad(r < cells[t].size() ? cells[t][r] : "");
    out += "\n";
  }
  return out;
}

}  // namespace lockstep::testing::lin
