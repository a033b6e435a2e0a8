// Planted bugs (engine/plant.hpp): the switch is per thread and scoped, the
// threads backend's cores take the bug of the thread that started them, and
// the scenario format's shards `canary` values are exactly the shards_* bugs.
#define BOOST_TEST_MODULE planted bugs
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/plant.hpp"
#include "engine/threads/runtime.hpp"

using namespace lockstep;

BOOST_AUTO_TEST_CASE(compiled_into_the_test_build) {
  BOOST_TEST(plant::compiled_in());  // CMake refuses tests without LOCKSTEP_SELFCHECK
  BOOST_TEST(!LOCKSTEP_PLANT(shards_lifo_per_key));
}

BOOST_AUTO_TEST_CASE(a_scope_plants_one_bug_and_restores_the_one_before) {
  {
    const plant::scope outer(plant::bug::shards_lifo_per_key);
    BOOST_TEST(LOCKSTEP_PLANT(shards_lifo_per_key));
    BOOST_TEST(!LOCKSTEP_PLANT(shards_ignore_budget));
    {
      const plant::scope inner(plant::bug::shards_ignore_budget);
      BOOST_TEST(LOCKSTEP_PLANT(shards_ignore_budget));
      BOOST_TEST(!LOCKSTEP_PLANT(shards_lifo_per_key));
    }
    BOOST_TEST(LOCKSTEP_PLANT(shards_lifo_per_key));
  }
  BOOST_TEST((plant::current() == plant::bug::none));
}

BOOST_AUTO_TEST_CASE(another_thread_has_its_own) {
  const plant::scope here(plant::bug::shards_lifo_per_key);
  bool there = true;
  std::thread t([&] { there = LOCKSTEP_PLANT(shards_lifo_per_key); });
  t.join();
  BOOST_TEST(!there);
}

BOOST_AUTO_TEST_CASE(the_threads_backend_cores_take_the_starting_threads_bug) {
  const plant::scope here(plant::bug::shards_skip_final_flush);
  threads::runtime rt(2);
  int seen = 0;
  rt.run([&] {
    auto a = rt.spawn_on(0, "a", [&] { seen += LOCKSTEP_PLANT(shards_skip_final_flush) ? 1 : 0; });
    auto b = rt.spawn_on(1, "b", [&] { seen += LOCKSTEP_PLANT(shards_skip_final_flush) ? 10 : 0; });
    a.join();
    b.join();
  });
  BOOST_TEST(seen == 11);
}

BOOST_AUTO_TEST_CASE(names_round_trip) {
  for (std::size_t i = 0; i < std::size(plant::names); ++i) {
    const auto b = static_cast<plant::bug>(i);
    BOOST_TEST((plant::by_name(plant::name(b)) == b));
  }
  BOOST_TEST(!plant::by_name("shards_no_such_bug").has_value());
}

/// The schema's `canary` values of a component, as plant names (consumer_*
/// canaries are the scenario's consumer wrapper, not the engine: left out).
std::set<std::string> schema_plants(const nlohmann::json& schema, const std::string& def, const std::string& prefix) {
  std::set<std::string> out;
  for (const auto& v : schema["definitions"][def]["properties"]["canary"]["enum"]) {
    const std::string n = v.get<std::string>();
    if (n != "none" && n.rfind("consumer_", 0) != 0) out.insert(prefix + n);
  }
  return out;
}

std::set<std::string> planted_with(const std::string& prefix) {
  std::set<std::string> out;
  for (const std::string_view n : plant::names) {
    if (n.substr(0, prefix.size()) == prefix) out.insert(std::string(n));
  }
  return out;
}

BOOST_AUTO_TEST_CASE(the_schemas_canaries_are_the_engines_planted_bugs) {
  std::ifstream in(std::string(LOCKSTEP_SCENARIOS_DIR) + "/schema/scenario.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const std::set<std::string> shards = schema_plants(schema, "shards", "shards_");
  const std::set<std::string> lanes = schema_plants(schema, "lanes", "lanes_");
  const std::set<std::string> flights = schema_plants(schema, "single_flight", "flights_");
  BOOST_TEST(shards.size() >= 25u);
  BOOST_TEST(lanes.size() >= 6u);
  BOOST_TEST(flights.size() >= 7u);
  BOOST_TEST((shards == planted_with("shards_")));
  BOOST_TEST((lanes == planted_with("lanes_")));
  BOOST_TEST((flights == planted_with("flights_")));
  // none, then every planted bug
  BOOST_TEST(std::size(plant::names) == 1 + shards.size() + lanes.size() + flights.size());
}
