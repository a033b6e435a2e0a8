// tools/scenario/spec_verdict.hpp — one run's verdict over a component's whole
// specification (the spec_* oracles, scenario.hpp): every rule's judgement
// of the run is gathered before the run is failed, so the failure names the
// rule broken first and every other rule the same run breaks.
//
// A planted bug seldom breaks one rule alone: a shard that silently sheds an
// expired item leaves a key that looks ready but never runs (fairness fires
// mid-run) and an item with no outcome (conservation fires at the end). The
// user reads the first and sees the others:
//   oracle 'fairness' failed: … (the run also breaks: conservation)
// The extra passes over the log (one per rule, each alone) are paid only by
// a run that already failed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/event_log.hpp"
#include "tools/scenario/violation.hpp"

namespace lockstep::scenario {

/// Every enabled rule's first violation over one log: the combined check's
/// first violation (the one in log order), then, in the order `enabled`
/// lists them, each other rule that fails when checked alone. `check` is
/// called with settings whose `enabled` it may narrow.
template <class Settings, class Check>
std::vector<violation> every_rule_broken(const Settings& settings, Check check) {
  std::vector<violation> found;
  std::optional<violation> first = check(settings);
  if (!first) return found;
  found.push_back(*first);
  for (const std::string& rule : settings.enabled) {
    if (rule == first->oracle) continue;
    Settings alone = settings;
    alone.enabled = {rule};
    std::optional<violation> v = check(alone);
    if (v && v->oracle == rule) found.push_back(*v);  // not an always-on check (lanes' liveness) again
  }
  return found;
}

/// The violations of one run, from every component's rules and counters.
class spec_verdict {
 public:
  void add(std::optional<violation> v) {
    if (v) found_.push_back(std::move(*v));
  }
  void add(std::vector<violation> vs) {
    for (auto& v : vs) found_.push_back(std::move(v));
  }

  [[nodiscard]] bool holds() const { return found_.empty(); }

  /// Fails the run with the first violation (a liveness one as liveness),
  /// its message naming the other rules broken; nothing when none was found.
  template <class Rt>
  void deliver(Rt& rt) const {
    if (found_.empty()) return;
    const violation& first = found_.front();
    std::string also;
    for (std::size_t i = 1; i < found_.size(); ++i) {
      bool named = found_[i].oracle == first.oracle;
      for (std::size_t j = 1; j < i; ++j) named = named || found_[j].oracle == found_[i].oracle;
      if (!named) also += (also.empty() ? "" : ", ") + found_[i].oracle;
    }
    const std::string message = also.empty() ? first.message : first.message + " (the run also breaks: " + also + ")";
    if (first.oracle == "liveness") check_liveness(rt, false, first.oracle, message);
    check(rt, false, first.oracle, message);
  }

 private:
  std::vector<violation> found_;
};

}  // namespace lockstep::scenario
