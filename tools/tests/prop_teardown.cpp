// Property: however a run of a bundled scenario stops early, it returns a
// clean report. The subjects are the workloads of the former built-in
// programs (scenarios/program_*.json) and the canaries that plant their bugs.
// Two ways of stopping are driven: every step budget from 1 to the
// scenario's natural length (exhaustively, for each subject, on its own
// cores and one more, random and pct), and replays of decision lists mutated
// by rapidcheck (a fiber id flipped, one deleted, the list truncated,
// shuffled or extended). A clean report is: a failure of the expected kind
// (the first one: a budget below the natural failure's step reports the
// budget), a message naming the seed, and every fiber spawned ending in the
// trace by a `finish` line — none left to the last-resort forced unwind. CI
// runs this under ASan+UBSan, which turns any use of a freed frame during
// teardown into a failure.
#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"

using namespace lockstep;

namespace {

struct subject {
  std::string file;
  std::shared_ptr<const scenario::scenario> scen;
};

std::vector<subject> subjects() {
  std::vector<subject> out;
  for (const char* f : {"program_grommet.json", "canaries/shards_skip_final_flush.json", "program_velo.json",
                        "canaries/lanes_send_after_unlock.json", "program_probation.json",
                        "canaries/flight_send_skips_without_subscribers.json"}) {
    const std::string path = std::string(LOCKSTEP_SCENARIOS_DIR) + "/" + f;
    out.push_back({f, std::make_shared<const scenario::scenario>(scenario::read_scenario_file(path))});
  }
  return out;
}

sim::run_result run(const subject& s, const sim::run_config& c) {
  return sim::run(c, [&](sim::runtime& rt) { scenario::run_scenario(rt, *s.scen); });
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Empty when the report is clean; otherwise what is wrong with it.
std::string unclean(const sim::run_result& r) {
  const std::size_t spawned = count(r.trace_text, "{\"ev\":\"spawn\"");
  const std::size_t finished = count(r.trace_text, "{\"ev\":\"finish\"");
  const std::size_t destroyed = count(r.trace_text, "{\"ev\":\"destroyed\"");
  if (destroyed != 0) return std::to_string(destroyed) + " fibers were left to the forced unwind";
  if (spawned != finished) {
    return std::to_string(spawned) + " fibers spawned but " + std::to_string(finished) + " finished";
  }
  if (r.failed && r.failed->message.find("[seed " + std::to_string(r.seed)) == std::string::npos) {
    return "the failure does not name its seed: " + r.failed->message;
  }
  return "";
}

sim::run_config base_config(std::uint64_t seed, const std::string& strategy, std::uint32_t cores) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = strategy;
  c.cores = cores;
  c.options.pct_steps = 200;  // fixed, so a budget changes nothing but where the run stops
  c.max_steps = 1'000'000;
  c.trace = sim::trace_mode::full;
  return c;
}

bool every_budget_gives_a_clean_report() {
  std::uint64_t runs = 0;
  bool ok = true;
  for (const subject& s : subjects()) {
    for (std::uint32_t cores : {s.scen->cores, s.scen->cores + 1}) {
      for (const char* strategy : {"random", "pct"}) {
        for (std::uint64_t seed : {1u, 2u}) {
          sim::run_config c = base_config(seed, strategy, cores);
          const sim::run_result natural = run(s, c);
          const std::string where = s.file + " cores=" + std::to_string(cores) +
                                    " strategy=" + strategy + " seed=" + std::to_string(seed);
          if (const std::string why = unclean(natural); !why.empty()) {
            std::cout << "FAIL natural run of " << where << ": " << why << "\n";
            ok = false;
          }
          for (std::uint64_t budget = 1; budget <= natural.steps; ++budget) {
            c.max_steps = budget;
            const sim::run_result r = run(s, c);
            ++runs;
            // Same seed, same schedule up to the budget: the natural run's
            // failure is reported if it came first, otherwise the budget. A
            // run that holds may hold under a budget that only its teardown
            // exceeds (teardown has a budget of its own).
            std::string why = unclean(r);
            if (why.empty()) {
              if (natural.failed) {
                const auto expected =
                    natural.failed->step <= budget ? natural.failed->kind : sim::failure_kind::step_budget;
                if (!r.failed) {
                  why = "the run held, expected " + std::string(sim::to_string(expected));
                } else if (r.failed->kind != expected) {
                  why = "reported " + std::string(sim::to_string(r.failed->kind)) + ", expected " +
                        std::string(sim::to_string(expected)) + ": " + r.failed->message;
                }
              } else if (r.failed && r.failed->kind != sim::failure_kind::step_budget) {
                why = "reported " + std::string(sim::to_string(r.failed->kind)) + ", expected step_budget: " +
                      r.failed->message;
              } else if (r.failed && budget == natural.steps) {
                why = "failed under a budget of the natural run's whole length: " + r.failed->message;
              }
            }
            if (!why.empty()) {
              std::cout << "FAIL " << where << " --max-steps " << budget << ": " << why << "\n";
              ok = false;
            }
          }
        }
      }
    }
  }
  std::cout << "every budget: " << runs << " runs stopped early, " << (ok ? "all clean" : "NOT all clean") << "\n";
  return ok;
}

}  // namespace

int main() {
  bool ok = every_budget_gives_a_clean_report();
  const std::vector<subject> all = subjects();

  ok = rc::check("a replay of a mutated decision list ends with a clean report", [&all] {
         const auto& s = all[*rc::gen::inRange<std::size_t>(0, all.size())];
         const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1'000'000);
         const auto cores = *rc::gen::inRange<std::uint32_t>(s.scen->cores, s.scen->cores + 2);
         const std::string strategy = *rc::gen::element<std::string>("random", "pct");
         const sim::run_result recorded = run(s, base_config(seed, strategy, cores));

         std::vector<std::uint32_t> d = recorded.decisions;
         const int how = *rc::gen::inRange(0, 5);
         const auto at = [&] { return d.empty() ? 0 : *rc::gen::inRange<std::size_t>(0, d.size()); };
         switch (how) {
           case 0:  // flip one fiber id
             if (!d.empty()) d[at()] = *rc::gen::inRange<std::uint32_t>(0, 64);
             break;
           case 1:  // delete one
             if (!d.empty()) d.erase(d.begin() + static_cast<std::ptrdiff_t>(at()));
             break;
           case 2:  // truncate
             d.resize(at());
             break;
           case 3: {  // shuffle a window
             const std::size_t from = at();
             const std::size_t len = std::min<std::size_t>(d.size() - from, *rc::gen::inRange<std::size_t>(2, 12));
             std::reverse(d.begin() + static_cast<std::ptrdiff_t>(from),
                          d.begin() + static_cast<std::ptrdiff_t>(from + len));
             break;
           }
           default:  // extend
             for (int i = *rc::gen::inRange(1, 8); i > 0; --i) d.push_back(*rc::gen::inRange<std::uint32_t>(0, 64));
         }
         RC_TAG(how);
         sim::run_config c = base_config(seed, "replay", cores);
         c.options.decisions = d;
         const sim::run_result r = run(s, c);
         const std::string why = unclean(r);
         if (!why.empty()) {
           RC_FAIL(s.file + " seed=" + std::to_string(seed) + " cores=" +
                   std::to_string(cores) + " strategy=" + strategy + " mutation=" + std::to_string(how) + ": " + why);
         }
         if (d == recorded.decisions) RC_ASSERT(r.trace_hash == recorded.trace_hash);
       }) && ok;
  return ok ? 0 : 1;
}
