// Goal: a threads run's watchdog (run_scenario.hpp: run_budget_ns) never
// stops a run the simulator lets finish. The budget is the longest actor's
// own sleeps and gaps plus one liveness_ns for the workload and for each
// liveness phase; every file of the library, on 40 seeds under random, ends
// (in virtual time) within it. And the budget is what its comment says:
// computed here by hand for two small scenarios.
#define BOOST_TEST_MODULE tools_run_budget
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"

using namespace lockstep;
namespace sc = lockstep::scenario;
using sc::actor;
using sc::step;

namespace {

step sleep_step(std::uint64_t ns) {
  step s;
  s.what = step::kind::sleep;
  s.sleep_ns = ns;
  return s;
}

step route_step(std::uint64_t count, std::uint64_t gap) {
  step s;
  s.what = step::kind::route;
  s.count = count;
  s.gap_ns = gap;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_budget_is_the_longest_actors_sleeps_and_a_liveness_budget_per_phase_and_for_the_workload) {
  sc::scenario s;
  s.lanes = sc::lanes_system{};
  s.liveness_ns = 1000;
  s.actors.push_back(actor{"a", 0, {sleep_step(5), route_step(3, 10)}});  // 5 + 2 gaps of 10
  s.actors.push_back(actor{"b", 0, {sleep_step(30), route_step(1, 500)}});  // one item: no gap
  BOOST_TEST(sc::run_budget_ns(s) == 30 + 3 * 1000);  // lanes: two phases, and the workload's
  sc::scenario t;
  t.shards = sc::shards_system{};
  t.single_flight = sc::flight_system{};
  t.liveness_ns = INT64_MAX / 2;
  t.actors.push_back(actor{"a", 0, {sleep_step(UINT64_MAX)}});
  BOOST_TEST(sc::run_budget_ns(t) == INT64_MAX);  // saturates
}

BOOST_AUTO_TEST_CASE(every_library_file_ends_within_its_budget_on_the_simulator) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(LOCKSTEP_SCENARIOS_DIR)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  BOOST_TEST_REQUIRE(files.size() >= 40U);
  for (const auto& f : files) {
    const sc::scenario s = sc::read_scenario_file(f.string());
    if (s.expect) continue;  // fifo only, and its counts pin one schedule: the sweep below is random
    const std::int64_t budget = sc::run_budget_ns(s);
    std::int64_t longest = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      sim::run_config c;
      c.seed = seed;
      c.cores = s.cores;
      const sim::run_result r = sc::run_scenario(std::as_const(c), s);
      BOOST_TEST_INFO(f.filename().string() << " seed " << seed);
      BOOST_TEST(r.ok());
      longest = std::max(longest, r.end_time_ns);
    }
    BOOST_TEST_INFO(f.filename().string() << ": ends by " << longest << " ns, budget " << budget << " ns");
    BOOST_TEST(longest <= budget);
  }
}
