// Goal: the CLI's simulated programs for the engine components (grommet,
// velo, probation) hold every oracle on clean runs over many schedules, catch
// their canaries within the seeds `lockstep explore` would try, replay a
// caught failure to the same trace hash, reject bad options naming the JSON
// pointer, and are deterministic per seed. Runs go through the same
// program::normalise / program::run pair the CLI calls.
#define BOOST_TEST_MODULE tools_programs
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/runtime.hpp"
#include "tools/failure_record.hpp"
#include "tools/programs.hpp"

using namespace lockstep;
using lockstep::cli::input_error;
using lockstep::cli::json_reader;

namespace {

const std::vector<std::string> engine_programs = {"grommet", "velo", "probation"};

nlohmann::json normalised(const std::string& name, const nlohmann::json& given) {
  const json_reader reader("--options", given);
  return cli::programs().at(name).normalise(reader);
}

sim::run_result run_program(const std::string& name, const nlohmann::json& options, const sim::run_config& c) {
  const cli::program& p = cli::programs().at(name);
  return sim::run(c, [&](sim::runtime& rt) { p.run(rt, options); });
}

/// The CLI's run configuration: PCT's change points are drawn from the
/// length of a random run of the same program and seed.
sim::run_config config_for(const std::string& name, const nlohmann::json& options, std::uint64_t seed,
                           const std::string& strategy, std::uint32_t cores) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = strategy;
  c.cores = cores;
  c.max_steps = 10'000'000;
  c.trace = sim::trace_mode::hash;
  if (strategy == "pct") {
    sim::run_config probe = c;
    probe.strategy = "random";
    probe.trace = sim::trace_mode::off;
    probe.record_decisions = false;
    const auto r = run_program(name, options, probe);
    c.options.pct_steps = r.steps == 0 ? 1 : r.steps;
  }
  return c;
}

std::string why(const sim::run_result& r) {
  return r.failed ? std::string(sim::to_string(r.failed->kind)) + ": " + r.failed->message : std::string();
}

/// A failure message without the executor's "[seed .., strategy .., ...]" suffix.
std::string headline(const std::string& message) { return message.substr(0, message.rfind(" [seed ")); }

/// The message of the input_error that normalising `given` throws, or "" if none.
std::string rejection(const std::string& name, const nlohmann::json& given) {
  try {
    (void)normalised(name, given);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(clean_runs_hold_every_oracle_over_200_seeds_random_and_pct_on_1_to_3_cores) {
  for (const std::string& name : engine_programs) {
    const nlohmann::json options = normalised(name, nlohmann::json::object());
    std::uint64_t steps = 0, runs = 0;
    for (const char* strategy : {"random", "pct"}) {
      for (std::uint32_t cores = 1; cores <= 3; ++cores) {
        for (std::uint64_t seed = 1; seed <= 200; ++seed) {
          const auto r = run_program(name, options, config_for(name, options, seed, strategy, cores));
          steps += r.steps;
          ++runs;
          BOOST_TEST_CONTEXT(name << " strategy " << strategy << " cores " << cores << " seed " << seed) {
            BOOST_TEST(r.ok(), why(r));
          }
        }
      }
    }
    BOOST_TEST_MESSAGE(name << ": " << runs << " clean runs, " << steps / runs << " steps per run");
  }
}

BOOST_AUTO_TEST_CASE(clean_runs_hold_under_fifo_and_with_other_options) {
  // Options as the CLI gets them: JSON text (a parsed 3 is unsigned, a literal 3 is not).
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"grommet", R"({"shards":3,"keys":5,"producers":3,"coalesce":false,"budgets":[2,1,1]})"},
      {"grommet", R"({"shards":1,"mailbox":1,"max_pending":1,"evict_after_ns":0,"gap_ns":0})"},
      {"grommet", R"({"shards":4,"keys":12,"producers":4,"items":30,"budgets":[1],"ttl_every":2})"},
      {"velo", R"({"capacity":2,"keys":1})"},
      {"velo", R"({"drop_router_early":true,"handler_ns":200})"},
      {"velo", R"({"idle_ttl_ns":0,"gap_ns":50})"},
      {"velo", R"({"keys":4,"producers":4,"items":20,"capacity":3})"},
      {"probation", R"({"keys":1,"requests":6,"stops_early":false})"},
      {"probation", R"({"throw_every":0,"cancel_worker_every":0,"worker_yields":0})"},
      {"probation", R"({"keys":3,"requests":8,"leave_every":2,"cancel_every":3,"throw_every":2})"},
  };
  for (const auto& [name, text] : variants) {
    const nlohmann::json given = nlohmann::json::parse(text);
    const nlohmann::json options = normalised(name, given);
    for (const char* strategy : {"fifo", "random", "pct"}) {
      for (std::uint32_t cores = 1; cores <= 3; ++cores) {
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
          const auto r = run_program(name, options, config_for(name, options, seed, strategy, cores));
          BOOST_TEST_CONTEXT(name << " " << given.dump() << " strategy " << strategy << " cores " << cores
                                  << " seed " << seed) {
            BOOST_TEST(r.ok(), why(r));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(each_canary_is_found_within_1000_seeds_and_replays_to_the_same_trace) {
  for (const std::string& name : engine_programs) {
    const nlohmann::json options = normalised(name, {{"canary", true}});
    for (const char* strategy : {"random", "pct"}) {
      std::optional<sim::run_result> caught;
      sim::run_config c;
      for (std::uint64_t seed = 1; seed <= 1000 && !caught; ++seed) {
        c = config_for(name, options, seed, strategy, 2);
        auto r = run_program(name, options, c);
        if (!r.ok()) caught = std::move(r);
      }
      BOOST_TEST_CONTEXT(name << " canary, strategy " << strategy) {
        BOOST_TEST_REQUIRE(caught.has_value(), "1000 seeds did not catch the canary");
        BOOST_TEST_MESSAGE(name << " canary (" << strategy << ") caught at seed " << c.seed << ": " << why(*caught));
        sim::run_config replay = c;
        replay.strategy = "replay";
        replay.options.decisions = caught->decisions;
        BOOST_TEST_CONTEXT("seed " << c.seed) {
          const auto again = run_program(name, options, replay);
          BOOST_TEST_REQUIRE(!again.ok(), "the replay did not fail");
          BOOST_TEST(again.trace_hash == caught->trace_hash);
          BOOST_TEST((again.failed->kind == caught->failed->kind));
          // The same failure, word for word, up to the run's own "[seed .., strategy ..]" suffix.
          BOOST_TEST(headline(again.failed->message) == headline(caught->failed->message));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_trace_hash) {
  for (const std::string& name : engine_programs) {
    for (const bool canary : {false, true}) {
      const nlohmann::json options = normalised(name, {{"canary", canary}});
      for (const char* strategy : {"random", "pct", "fifo"}) {
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
          BOOST_TEST_CONTEXT(name << " canary " << canary << " strategy " << strategy << " seed " << seed) {
            const auto c = config_for(name, options, seed, strategy, 2);
            const auto a = run_program(name, options, c);
            const auto b = run_program(name, options, c);
            BOOST_TEST(a.trace_hash == b.trace_hash);
            BOOST_TEST(a.decisions == b.decisions);
            BOOST_TEST(a.ok() == b.ok());
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_options_are_rejected_naming_the_json_pointer) {
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"grommet", R"({"shards":0})", "/shards"},
      {"grommet", R"({"shards":9})", "/shards"},
      {"grommet", R"({"shards":-1})", "/shards"},
      {"grommet", R"({"budgets":[1,0]})", "/budgets/1"},
      {"grommet", R"({"budgets":[]})", "/budgets"},
      {"grommet", R"({"budgets":3})", "/budgets"},
      {"grommet", R"({"keys":1,"producers":2})", "/keys"},
      {"grommet", R"({"coalesce":"yes"})", "/coalesce"},
      {"grommet", R"({"tick_ns":0})", "/tick_ns"},
      {"grommet", R"({"shard":2})", "/shard"},
      {"velo", R"({"keys":0})", "/keys"},
      {"velo", R"({"drop_router_early":1})", "/drop_router_early"},
      {"velo", R"({"handler_ns":1.5})", "/handler_ns"},
      {"velo", R"({"lanes":3})", "/lanes"},
      {"probation", R"({"requests":0})", "/requests"},
      {"probation", R"({"requests":257})", "/requests"},
      {"probation", R"({"canary":null})", "/canary"},
      {"probation", R"({"worker":"throws"})", "/worker"},
  };
  for (const auto& [name, text, pointer] : bad) {
    const nlohmann::json given = nlohmann::json::parse(text);
    BOOST_TEST_CONTEXT(name << " " << text) {
      const std::string message = rejection(name, given);
      BOOST_TEST(!message.empty(), "accepted");
      BOOST_TEST(message.find("--options: " + pointer + ":") != std::string::npos, message);
    }
  }
  // Defaults fill every option, and a normalised object normalises to itself
  // (a failure record replays with the options it ran).
  for (const std::string& name : engine_programs) {
    BOOST_TEST_CONTEXT(name) {
      const nlohmann::json once = normalised(name, nlohmann::json::object());
      BOOST_TEST(normalised(name, once) == once);
      BOOST_TEST(once.at("canary") == false);
    }
  }
}
