#include "shrink.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::testing {

namespace {

/// What "fails the same way" compares: the kind, and an assertion's line.
std::string signature(const sim::failure& f) {
  std::string s(sim::to_string(f.kind));
  if (f.site.file != nullptr) s += std::string(" at ") + f.site.file + ":" + std::to_string(f.site.line);
  return s;
}

class search {
 public:
  search(const test_record& failing, const test_body& body, std::uint64_t max_runs)
      : failing_(failing), body_(body), max_runs_(max_runs), signature_(signature(*failing.result.failed)) {}

  shrink_result run() {
    shrink_result out;
    out.record = failing_;
    std::vector<std::uint32_t> best = failing_.result.decisions;
    sim::guided_stats now;
    const sim::run_result first = guided(best, now);
    ++runs_;
    if (!same(first)) {  // the guide does not give the failure back: nothing to shrink from
      out.runs = runs_;
      return out;
    }
    best = first.decisions;
    out.preemptions_before = now.preemptions.size();
    for (bool changed = true; changed && runs_ < max_runs_;) {
      changed = false;
      // The shortest prefix that still fails.
      for (std::size_t k = 0; k < now.preemptions.size() && runs_ < max_runs_; ++k) {
        std::vector<std::uint32_t> guide(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(now.preemptions[k].at));
        if (attempt(std::move(guide), best, now)) {
          changed = true;
          break;
        }
      }
      // Then one preemption at a time.
      for (std::size_t j = 0; j < now.preemptions.size() && runs_ < max_runs_;) {
        std::vector<std::uint32_t> guide = best;
        guide[now.preemptions[j].at] = now.preemptions[j].previous;
        if (attempt(std::move(guide), best, now)) {
          changed = true;
        } else {
          ++j;
        }
      }
    }
    out.preemptions_after = now.preemptions.size();
    out.runs = runs_;
    if (out.preemptions_after >= out.preemptions_before) return out;
    // The record: the shrunk run's decisions, replayed with the trace hashed.
    sim::run_config c = failing_.config;
    c.strategy = "replay";
    c.options.decisions = best;
    c.trace = sim::trace_mode::hash;
    out.record.result = sim::run(c, body_);
    out.shrunk = same(out.record.result);
    if (!out.shrunk) out.record = failing_;  // a replay that does not fail alike is not kept
    return out;
  }

 private:
  sim::run_result guided(std::vector<std::uint32_t> guide, sim::guided_stats& stats_out) {
    sim::run_config c = failing_.config;
    c.strategy = "guided";
    c.options.decisions = std::move(guide);
    auto stats = std::make_shared<sim::guided_stats>();
    c.options.guided = stats;
    c.trace = sim::trace_mode::off;
    sim::run_result r = sim::run(c, body_);
    stats_out = *stats;
    return r;
  }
  [[nodiscard]] bool same(const sim::run_result& r) const { return r.failed && signature(*r.failed) == signature_; }
  bool attempt(std::vector<std::uint32_t> guide, std::vector<std::uint32_t>& best, sim::guided_stats& now) {
    ++runs_;
    sim::guided_stats stats;
    sim::run_result r = guided(std::move(guide), stats);
    if (!same(r) || stats.preemptions.size() >= now.preemptions.size()) return false;
    best = std::move(r.decisions);
    now = std::move(stats);
    return true;
  }

  const test_record& failing_;
  const test_body& body_;
  std::uint64_t max_runs_;
  std::string signature_;
  std::uint64_t runs_ = 0;
};

}  // namespace

shrink_result shrink(const test_record& failing, const test_body& body, std::uint64_t max_runs) {
  if (!failing.result.failed) return shrink_result{false, 0, 0, 0, failing};
  return search(failing, body, max_runs).run();
}

}  // namespace lockstep::testing
