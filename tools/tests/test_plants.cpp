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

BOOST_AUTO_TEST_CASE(the_schemas_shards_canaries_are_the_shards_bugs) {
  std::ifstream in(std::string(LOCKSTEP_SCENARIOS_DIR) + "/schema/scenario.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  std::set<std::string> in_schema;
  for (const auto& v : schema["definitions"]["shards"]["properties"]["canary"]["enum"]) {
    if (v != "none") in_schema.insert("shards_" + v.get<std::string>());
  }
  std::set<std::string> planted;
  for (const std::string_view n : plant::names) {
    if (n.substr(0, 7) == "shards_") planted.insert(std::string(n));
  }
  BOOST_TEST(in_schema.size() >= 25u);
  BOOST_TEST((in_schema == planted));
}
