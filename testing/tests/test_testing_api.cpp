// Goal: the library API (testing/) explores, records and replays as it
// promises: a planted lost update is found and its record replays to the
// same trace hash; records round-trip and bad ones are refused naming the
// pointer; the environment overrides the budget or is refused.
#define BOOST_TEST_MODULE testing_api
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sim/runtime.hpp"
#include "testing/explore.hpp"
#include "testing/tests/scratch_dir.hpp"
#include "testing/test_case.hpp"
#include "testing/test_record.hpp"
#include "testing/shrink.hpp"

namespace sim = lockstep::sim;
namespace lt = lockstep::testing;

namespace {

template <bool Buggy>
void lost_update(sim::runtime& rt) {
  sim::atomic<int> x(rt, 0);
  sim::mutex m(rt);
  auto body = [&] {
    if constexpr (!Buggy) m.lock();
    const int v = x.load();
    x.store(v + 1);
    if constexpr (!Buggy) m.unlock();
  };
  sim::task t0 = rt.spawn_on(0, "t0", body);
  sim::task t1 = rt.spawn_on(1, "t1", body);
  t0.join();
  t1.join();
  LOCKSTEP_ASSERT(x.load() == 2);
}

std::string temp_dir(const std::string& name) {
  return lockstep::testing_scratch::scratch_dir("lockstep-testing-api-" + name);
}

lt::test_options options_in(const std::string& dir) {
  lt::test_options o;
  o.cores = 2;
  o.runs = 200;
  o.record_dir = dir;
  return o;
}

bool refused_naming(const std::string& text, const std::string& expected) {
  try {
    (void)lt::read_test_record_text(text, "r.json");
  } catch (const lt::bad_input& e) {
    BOOST_TEST_MESSAGE(e.what());
    return std::string(e.what()).find(expected) != std::string::npos;
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_planted_bug_is_found_recorded_and_replayed) {
  const std::string dir = temp_dir("found");
  const lt::explore_result r = lt::explore("suite/lost_update", options_in(dir), lost_update<true>);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  const lt::found_failure& f = r.failures.front();
  BOOST_TEST(f.record.result.failed->kind == sim::failure_kind::oracle);
  BOOST_TEST(f.record.result.failed->message.find("test_testing_api.cpp:") != std::string::npos);
  BOOST_TEST(f.record.result.failed->message.find("x.load() == 2") != std::string::npos);
  // Suites are '/' in the name and '.' in the file name.
  BOOST_TEST(std::filesystem::path(f.record_path).filename().string().rfind("suite.lost_update-", 0) == 0);
  const lt::test_record back = lt::read_test_record(f.record_path);
  BOOST_TEST(back.test == "suite/lost_update");
  BOOST_TEST(back.config.seed == f.record.config.seed);
  BOOST_TEST(back.result.trace_hash == f.record.result.trace_hash);
  BOOST_TEST(back.result.decisions == f.record.result.decisions);
  BOOST_TEST(lt::to_json_text(back) == lt::to_json_text(f.record));

  const lt::replay_result again = lt::replay(back, lost_update<true>);
  BOOST_TEST(again.reproduced);
  BOOST_TEST(!again.diverged);
  BOOST_TEST(again.run.trace_hash == f.record.result.trace_hash);
  // The fixed body takes the mutex: the recorded decisions no longer fit it.
  const lt::replay_result fixed = lt::replay(back, lost_update<false>);
  BOOST_TEST(!fixed.reproduced);
  BOOST_TEST(fixed.diverged);
  std::filesystem::remove_all(dir);
}

// A notify sent at the very instant a timed wait times out: it can win only
// when timer ties are choices. The test asserts that it never wins, so it
// holds with timers as they were and fails with .timer_ties, and the record
// of that failure holds the setting and replays with it.
static void notify_at_the_deadline(sim::runtime& rt) {
  auto n = std::make_shared<sim::notify>(rt);
  auto waiter = rt.spawn_on(0, "waiter", [n] { LOCKSTEP_ASSERT(!n->notified_until(100)); });
  auto notifier = rt.spawn_on(1, "notifier", [n, &rt] {
    rt.sleep_until(100);
    n->notify_one();
  });
  waiter.join();
  notifier.join();
}

BOOST_AUTO_TEST_CASE(timer_ties_are_found_recorded_and_replayed) {
  const std::string dir = temp_dir("ties");
  lt::test_options o = options_in(dir);
  o.cores = 2;
  BOOST_TEST(lt::explore("ties_off", o, notify_at_the_deadline).failures.empty());
  o.timer_ties = true;
  o.timer_jitter_ns = 3;  // deadlines of 100 and 100..103: the notifier may come late too
  const lt::explore_result r = lt::explore("ties_on", o, notify_at_the_deadline);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  const lt::test_record back = lt::read_test_record(r.failures.front().record_path);
  BOOST_TEST(back.config.timer_ties);
  BOOST_TEST(back.config.timer_jitter_ns == 3);
  BOOST_TEST(lt::describe(back).find(" timer_ties timer_jitter_ns=3") != std::string::npos);
  BOOST_TEST(lt::replay(back, notify_at_the_deadline).reproduced);
  lt::test_record without = back;
  without.config.timer_ties = false;
  without.config.timer_jitter_ns = 0;
  BOOST_TEST(!lt::replay(without, notify_at_the_deadline).reproduced);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_test_with_a_hundred_cores_writes_records_it_can_read_back) {
  // A thread of the model is a core: a record of a 100-core test was once
  // refused by lockstep's own reader (it allowed 1 to 64).
  const std::string dir = temp_dir("cores");
  lt::test_options o = options_in(dir);
  o.cores = 100;
  const auto body = [](sim::runtime& rt) {
    sim::atomic<int> x(rt, 0);
    auto bump = [&] {
      const int v = x.load();
      x.store(v + 1);
    };
    sim::task t0 = rt.spawn_on(0, "t0", bump);
    sim::task t1 = rt.spawn_on(99, "t99", bump);
    t0.join();
    t1.join();
    LOCKSTEP_ASSERT(x.load() == 2);
  };
  const lt::explore_result r = lt::explore("many_cores", o, body);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  const lt::test_record back = lt::read_test_record(r.failures.front().record_path);
  BOOST_TEST(back.config.cores == 100U);
  BOOST_TEST(lt::replay(back, body).reproduced);
  // More than a record may say is refused before any run.
  o.cores = lt::max_test_cores + 1;
  bool refused = false;
  try {
    (void)lt::explore("too_many_cores", o, body);
  } catch (const lt::bad_input& e) {
    refused = std::string(e.what()).find(".cores = 1025: expected 1 to 1024 simulated cores") != std::string::npos;
  }
  BOOST_TEST(refused);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(exploration_is_a_function_of_its_options) {
  const std::string dir = temp_dir("determinism");
  lt::test_options o = options_in(dir);
  o.stop_after = 0;  // every seed
  o.runs = 50;
  const lt::explore_result a = lt::explore("t", o, lost_update<true>);
  const lt::explore_result b = lt::explore("t", o, lost_update<true>);
  BOOST_TEST(a.runs == 50U * o.strategies.size());  // 50 seeds under each strategy
  BOOST_REQUIRE(!a.failures.empty());
  BOOST_REQUIRE_EQUAL(a.failures.size(), b.failures.size());
  for (std::size_t i = 0; i < a.failures.size(); ++i) {
    BOOST_TEST(lt::to_json_text(a.failures[i].record) == lt::to_json_text(b.failures[i].record));
  }
  // The fixed body holds on every seed.
  const lt::explore_result held = lt::explore("t", o, lost_update<false>);
  BOOST_TEST(held.failures.empty());
  BOOST_TEST(held.runs == 50U * o.strategies.size());
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_outcome_is_the_same_for_any_number_of_jobs) {
  // LOCKSTEP_JOBS runs seeds on several threads: the runs counted, the
  // failures, their order and their records are the serial loop's, whether
  // it stops at the third failure (inside a batch) or runs every seed.
  const std::string dir = temp_dir("jobs");
  for (const std::uint64_t stop_after : {std::uint64_t{3}, std::uint64_t{0}}) {
    lt::test_options o = options_in(dir);
    o.runs = 150;
    o.stop_after = stop_after;
    const lt::explore_result serial = lt::explore("t", o, lost_update<true>);
    BOOST_REQUIRE(serial.failures.size() >= 3U);
    for (const std::uint32_t jobs : {2U, 3U, 8U}) {
      BOOST_TEST_CONTEXT("stop_after " << stop_after << ", jobs " << jobs) {
        o.jobs = jobs;
        const lt::explore_result parallel = lt::explore("t", o, lost_update<true>);
        BOOST_TEST(parallel.runs == serial.runs);
        BOOST_REQUIRE_EQUAL(parallel.failures.size(), serial.failures.size());
        for (std::size_t i = 0; i < serial.failures.size(); ++i) {
          BOOST_TEST(lt::to_json_text(parallel.failures[i].record) == lt::to_json_text(serial.failures[i].record));
          BOOST_TEST(parallel.failures[i].record_path == serial.failures[i].record_path);
        }
      }
    }
  }
  lt::test_options fixed = options_in(dir);
  fixed.jobs = 4;
  const lt::explore_result held = lt::explore("t", fixed, lost_update<false>);
  BOOST_TEST(held.failures.empty());
  BOOST_TEST(held.runs == 200U * fixed.strategies.size());
  ::setenv("LOCKSTEP_JOBS", "0", 1);
  BOOST_CHECK_THROW(lt::apply_environment(fixed), lt::bad_input);
  ::setenv("LOCKSTEP_JOBS", "4", 1);
  lt::apply_environment(fixed);
  BOOST_TEST(fixed.jobs == 4U);
  ::unsetenv("LOCKSTEP_JOBS");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_failure_shrinks_to_fewer_preemptions_and_still_replays) {
  const std::string dir = temp_dir("shrink");
  lt::test_options o = options_in(dir);
  o.stop_after = 0;
  o.strategies = {"random"};
  const lt::explore_result r = lt::explore("t", o, lost_update<true>);
  BOOST_REQUIRE(!r.failures.empty());
  std::size_t shrunk = 0, to_one = 0;
  for (const lt::found_failure& f : r.failures) {
    const lt::shrink_result s = lt::shrink(f.record, lost_update<true>);
    BOOST_TEST(s.preemptions_after <= s.preemptions_before);
    BOOST_TEST(s.preemptions_after >= 1U);  // the bug needs one: between a load and its store
    if (s.preemptions_after == 1) ++to_one;
    BOOST_TEST(s.record.result.failed->kind == f.record.result.failed->kind);
    BOOST_TEST(s.record.result.failed->site.line == f.record.result.failed->site.line);  // the same assertion
    if (!s.shrunk) continue;
    ++shrunk;
    BOOST_TEST(s.preemptions_after < s.preemptions_before);
    const lt::replay_result again = lt::replay(s.record, lost_update<true>);
    BOOST_TEST(again.reproduced, again.summary);
    // Through a file and back, as the test case writes it.
    BOOST_TEST(lt::replay(lt::read_test_record_text(lt::to_json_text(s.record), "s.json"), lost_update<true>).reproduced);
  }
  BOOST_TEST_MESSAGE(shrunk << " of " << r.failures.size() << " failures shrank, " << to_one
                          << " to the one preemption the bug needs");
  // random's schedules preempt far more often than the bug needs; the greedy
  // search (as lockstep shrink's) finds a local minimum, not always the least.
  BOOST_TEST(shrunk > r.failures.size() / 2);
  BOOST_TEST(to_one > 0U);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(pct_records_the_k_it_used) {
  lt::test_options o = options_in(temp_dir("pct"));
  o.strategies = {"pct"};
  const lt::explore_result r = lt::explore("t", o, lost_update<true>);
  BOOST_REQUIRE(!r.failures.empty());
  const auto& rec = r.failures.front().record;
  BOOST_TEST(rec.config.strategy == "pct");
  BOOST_TEST(rec.config.options.pct_steps > 0U);
  BOOST_TEST(lt::replay(rec, lost_update<true>).reproduced);
  std::filesystem::remove_all(o.record_dir);
}

// pos and surw through the library: found, recorded, replayed; surw's runs
// are weighed by a profile of the random run of their seed, so they are not
// that run.
BOOST_AUTO_TEST_CASE(pos_and_surw_find_record_and_replay) {
  for (const char* strategy : {"pos", "surw"}) {
    BOOST_TEST_CONTEXT(strategy) {
      lt::test_options o = options_in(temp_dir(strategy));
      o.strategies = {strategy};
      const lt::explore_result r = lt::explore("t", o, lost_update<true>);
      BOOST_REQUIRE(!r.failures.empty());
      const auto& rec = r.failures.front().record;
      BOOST_TEST(rec.config.strategy == strategy);
      const lt::test_record back = lt::read_test_record(r.failures.front().record_path);
      BOOST_TEST(lt::replay(back, lost_update<true>).reproduced);
      std::filesystem::remove_all(o.record_dir);
    }
  }
  lt::test_options o = options_in("");
  int differ = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto random = lt::run_one(lt::config_for(o, "random", seed), lost_update<false>);
    const auto surw = lt::run_one(lt::config_for(o, "surw", seed), lost_update<false>);
    BOOST_TEST(surw.ok());
    BOOST_TEST(lt::run_one(lt::config_for(o, "surw", seed), lost_update<false>).trace_hash == surw.trace_hash);
    differ += surw.trace_hash != random.trace_hash;
  }
  BOOST_TEST(differ >= 4);
}

// A generated case's input (a property's program) is kept in its record,
// read back, and names the record: two inputs of one test, two records.
BOOST_AUTO_TEST_CASE(a_generated_input_is_kept_and_names_its_record) {
  const std::string dir = temp_dir("input");
  std::vector<std::string> paths;
  for (const char* input : {"threads: [[push 1], [pop]]", "threads: [[push 2], [pop]]"}) {
    lt::test_options o = options_in(dir);
    o.input = input;
    const lt::explore_result r = lt::explore("prop/queue", o, lost_update<true>);
    BOOST_REQUIRE(!r.failures.empty());
    const lt::found_failure& f = r.failures.front();
    BOOST_TEST(f.record.input == input);
    const lt::test_record back = lt::read_test_record(f.record_path);
    BOOST_TEST(back.input == input);
    BOOST_TEST(lt::replay(back, lost_update<true>).reproduced);
    paths.push_back(f.record_path);
  }
  BOOST_TEST(paths[0] != paths[1]);
  BOOST_TEST(std::filesystem::exists(paths[0]));
  BOOST_TEST(std::filesystem::exists(paths[1]));
  // Without an input the record has no "input" field, and reads back empty.
  const lt::explore_result plain = lt::explore("prop/queue", options_in(dir), lost_update<true>);
  BOOST_REQUIRE(!plain.failures.empty());
  BOOST_TEST(lt::to_json_text(plain.failures.front().record).find("\"input\"") == std::string::npos);
  BOOST_TEST(lt::read_test_record(plain.failures.front().record_path).input.empty());
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(bad_records_are_refused_naming_the_pointer) {
  lt::test_record rec;
  rec.test = "t";
  rec.config.cores = 2;
  rec.result.decisions = {1, 2};
  rec.result.failed = sim::failure{sim::failure_kind::oracle, "m"};
  const std::string good = lt::to_json_text(rec);
  BOOST_TEST(lt::read_test_record_text(good, "r.json").result.decisions == rec.result.decisions);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    BOOST_REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  BOOST_TEST(refused_naming("not json", "r.json: /: expected a JSON document"));
  BOOST_TEST(refused_naming("[1]", "r.json: /: expected an object"));
  BOOST_TEST(refused_naming(with("\"cores\": 2", "\"cores\": 0"), "r.json: /cores: expected an integer from 1 to 1024"));
  BOOST_TEST(refused_naming(with("\"cores\": 2", "\"cores\": 2, \"extra\": 1"), "r.json: /extra: expected no such field"));
  BOOST_TEST(refused_naming(with("\"strategy\": \"random\"", "\"strategy\": \"dfs\""), "r.json: /strategy: expected one of"));
  BOOST_TEST(refused_naming(with("\"kind\": \"oracle\"", "\"kind\": \"boom\""), "r.json: /failure/kind: expected"));
  BOOST_TEST(refused_naming(with("\"test\": \"t\",", ""), "r.json: /test: expected a field holding a string"));
  BOOST_TEST(refused_naming(with("\"test\": \"t\",", "\"scenario\": {},"), "r.json: /scenario: expected a library test's record"));
  // The memory model a record ran under replays with it; a record from
  // before the model (no field) ran with every load reading the newest store.
  BOOST_TEST(!lt::read_test_record_text(good, "r.json").config.seq_cst_only);
  BOOST_TEST(lt::read_test_record_text(with("\"seq_cst_only\": false", "\"seq_cst_only\": true"), "r.json").config.seq_cst_only);
  BOOST_TEST(lt::read_test_record_text(with("\"seq_cst_only\": false,", ""), "r.json").config.seq_cst_only);
  BOOST_TEST(refused_naming(with("\"seq_cst_only\": false", "\"seq_cst_only\": 0"), "r.json: /seq_cst_only: expected true or false, found 0"));
  // Timer choices: absent (every record before them) is off.
  BOOST_TEST(!lt::read_test_record_text(good, "r.json").config.timer_ties);
  BOOST_TEST(lt::read_test_record_text(good, "r.json").config.timer_jitter_ns == 0);
  const auto timed = lt::read_test_record_text(
      with("\"seq_cst_only\": false", "\"seq_cst_only\": false, \"timer_ties\": true, \"timer_jitter_ns\": 7"), "r.json");
  BOOST_TEST(timed.config.timer_ties);
  BOOST_TEST(timed.config.timer_jitter_ns == 7);
  BOOST_TEST(lt::to_json_text(timed).find("\"timer_jitter_ns\": 7") != std::string::npos);
  BOOST_TEST(lt::to_json_text(lt::read_test_record_text(good, "r.json")).find("timer_") == std::string::npos);
  BOOST_TEST(refused_naming(with("\"seq_cst_only\": false", "\"seq_cst_only\": false, \"timer_ties\": 1"),
                            "r.json: /timer_ties: expected true or false, found 1"));
  BOOST_TEST(refused_naming(with("\"seq_cst_only\": false", "\"seq_cst_only\": false, \"timer_jitter_ns\": -1"),
                            "r.json: /timer_jitter_ns: expected"));
  BOOST_TEST(lt::read_test_record_text(with("\"seq_cst_only\": false", "\"seq_cst_only\": false, \"input\": \"[1, 2]\""),
                                       "r.json").input == "[1, 2]");
  BOOST_TEST(refused_naming(with("\"seq_cst_only\": false", "\"seq_cst_only\": false, \"input\": [1, 2]"),
                            "r.json: /input: expected a string (what the case was generated from), found [1,2]"));
}

BOOST_AUTO_TEST_CASE(the_environment_sets_the_budget_or_is_refused) {
  lt::test_options o;
  ::setenv("LOCKSTEP_SEEDS", "5..9", 1);
  ::setenv("LOCKSTEP_STRATEGIES", "pct", 1);
  lt::apply_environment(o);
  BOOST_TEST(o.first_seed == 5U);
  BOOST_TEST(o.runs == 5U);
  BOOST_TEST(o.strategies == std::vector<std::string>{"pct"});
  ::setenv("LOCKSTEP_SEEDS", "9..5", 1);
  BOOST_CHECK_EXCEPTION(lt::apply_environment(o), lt::bad_input, [](const lt::bad_input& e) {
    return std::string(e.what()).find("LOCKSTEP_SEEDS=\"9..5\": expected") != std::string::npos;
  });
  ::setenv("LOCKSTEP_SEEDS", "0..18446744073709551615", 1);
  BOOST_CHECK_THROW(lt::apply_environment(o), lt::bad_input);
  ::unsetenv("LOCKSTEP_SEEDS");
  ::setenv("LOCKSTEP_STRATEGIES", "random,", 1);
  BOOST_CHECK_THROW(lt::apply_environment(o), lt::bad_input);
  ::unsetenv("LOCKSTEP_STRATEGIES");
  ::setenv("LOCKSTEP_RUNS", "0", 1);
  BOOST_CHECK_THROW(lt::apply_environment(o), lt::bad_input);
  ::unsetenv("LOCKSTEP_RUNS");
  BOOST_TEST(!o.seq_cst_only);
  ::setenv("LOCKSTEP_SEQ_CST_ONLY", "1", 1);
  lt::apply_environment(o);
  BOOST_TEST(o.seq_cst_only);
  BOOST_TEST(lt::config_for(o, "random", 1).seq_cst_only);
  ::setenv("LOCKSTEP_SEQ_CST_ONLY", "yes", 1);
  BOOST_CHECK_EXCEPTION(lt::apply_environment(o), lt::bad_input, [](const lt::bad_input& e) {
    return std::string(e.what()).find("LOCKSTEP_SEQ_CST_ONLY=\"yes\": expected 0 or 1") != std::string::npos;
  });
  ::unsetenv("LOCKSTEP_SEQ_CST_ONLY");
  ::setenv("LOCKSTEP_TIMER_TIES", "1", 1);
  ::setenv("LOCKSTEP_TIMER_JITTER", "250", 1);
  lt::apply_environment(o);
  BOOST_TEST(lt::config_for(o, "random", 1).timer_ties);
  BOOST_TEST(lt::config_for(o, "random", 1).timer_jitter_ns == 250);
  ::setenv("LOCKSTEP_TIMER_TIES", "on", 1);
  BOOST_CHECK_EXCEPTION(lt::apply_environment(o), lt::bad_input, [](const lt::bad_input& e) {
    return std::string(e.what()).find("LOCKSTEP_TIMER_TIES=\"on\": expected 0 or 1") != std::string::npos;
  });
  ::unsetenv("LOCKSTEP_TIMER_TIES");
  ::setenv("LOCKSTEP_TIMER_JITTER", "1000000000001", 1);
  BOOST_CHECK_EXCEPTION(lt::apply_environment(o), lt::bad_input, [](const lt::bad_input& e) {
    return std::string(e.what()).find("LOCKSTEP_TIMER_JITTER=\"1000000000001\": expected virtual ns") != std::string::npos;
  });
  ::unsetenv("LOCKSTEP_TIMER_JITTER");
}

// A body that keeps state between runs fails once and then holds: the
// exploration says the body is not deterministic instead of writing a record
// that would never replay.
BOOST_AUTO_TEST_CASE(a_body_that_is_not_deterministic_is_named) {
  static int calls = 0;
  calls = 0;
  lt::test_options o = options_in(temp_dir("nondeterministic"));
  o.strategies = {"random"};
  const lt::explore_result r = lt::explore("t", o, [](sim::runtime&) { LOCKSTEP_ASSERT(++calls != 1); });
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  const auto& failed = *r.failures.front().record.result.failed;
  BOOST_TEST(failed.kind == sim::failure_kind::replay_divergence);
  BOOST_TEST(failed.message.find("not deterministic") != std::string::npos);
  std::filesystem::remove_all(o.record_dir);
}

// dfs finds a body that is not deterministic (only its first run starts
// fibers: state kept between runs, so the second run ends before the
// decisions the first one made) and says so: explore throws
// nondeterministic_body, and a test case ends the binary with exit 4, the
// CLI's nondeterminism code, in one line, writing no record. (A run that
// meets other runnable fibers at a decision fails instead, with the same
// words, as a failure whose record names the divergence.)
BOOST_AUTO_TEST_CASE(dfs_names_a_body_that_is_not_deterministic_and_a_test_case_exits_4) {
  static int runs = 0;
  const lt::test_body drifting = [](sim::runtime& rt) {
    if (runs++ != 0) return;
    std::vector<sim::task> ts;
    for (std::uint32_t i = 0; i < 2; ++i) ts.push_back(rt.spawn_on(i, "f", [&rt] { rt.yield_now(); }));
    for (sim::task& t : ts) t.join();
  };
  const std::string dir = temp_dir("dfs_drift");
  lt::test_options o = options_in(dir);
  o.strategies = {"dfs"};
  runs = 0;
  BOOST_CHECK_EXCEPTION(lt::explore("drift", o, drifting), lt::nondeterministic_body, [](const auto& e) {
    BOOST_TEST_MESSAGE(e.what());
    return std::string(e.what()).rfind("dfs: a run ended after 0 decisions, where an earlier run", 0) == 0 &&
           std::string(e.what()).find("not deterministic") != std::string::npos;
  });
  BOOST_TEST(!std::filesystem::exists(dir + "/drift-dfs-1.json"));

  int err[2];
  BOOST_REQUIRE(::pipe(err) == 0);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(err[1], 2);
    ::close(err[0]);
    runs = 0;
    (void)lt::run_test_case("drift", o, drifting, "./t --run_test=drift");
    std::_Exit(0);  // not reached: exit 4
  }
  ::close(err[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 4), text);
  BOOST_TEST(text.rfind("lockstep: drift: dfs: a run ended", 0) == 0, text);
  BOOST_TEST(text.find("not deterministic") != std::string::npos, text);
  BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, text);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(dfs_verifies_the_fixed_test_and_records_the_buggy_ones_schedule) {
  const std::string dir = temp_dir("dfs");
  lt::test_options o = options_in(dir);
  o.strategies = {"dfs"};
  const lt::explore_result fixed = lt::explore("dfs_fixed", o, lost_update<false>);
  BOOST_REQUIRE(fixed.dfs.has_value());
  BOOST_TEST(fixed.dfs->verified);
  BOOST_TEST(fixed.failures.empty());
  BOOST_TEST(fixed.runs == fixed.dfs->schedules);
  BOOST_TEST(fixed.dfs->bounds == "preemption bound 2, delay bound none");

  const lt::explore_result buggy = lt::explore("dfs_buggy", o, lost_update<true>);
  BOOST_REQUIRE(buggy.dfs.has_value());
  BOOST_TEST(buggy.dfs->failed);
  BOOST_REQUIRE(buggy.failures.size() == 1u);
  const lt::found_failure& f = buggy.failures.front();
  BOOST_TEST(f.record_path.find("dfs_buggy-dfs-1.json") != std::string::npos);
  // The record holds the schedule's decisions and replays them, byte for byte.
  const lt::test_record back = lt::read_test_record(f.record_path);
  BOOST_TEST(back.config.strategy == "replay");
  const lt::replay_result r = lt::replay(back, lost_update<true>);
  BOOST_TEST(r.reproduced, r.summary);

  // A budget ends the search without calling it verified.
  o.max_schedules = 3;
  const lt::explore_result cut = lt::explore("dfs_cut", o, lost_update<false>);
  BOOST_REQUIRE(cut.dfs.has_value());
  BOOST_TEST(!cut.dfs->verified);
  BOOST_TEST(cut.dfs->schedules == 3u);
  BOOST_TEST(cut.dfs->stopped.find("max_schedules 3") != std::string::npos);

  // On several threads the tree is split among them: the same verdicts,
  // counts and failing schedule as on one.
  for (const std::uint32_t jobs : {2U, 3U}) {
    BOOST_TEST_CONTEXT("jobs " << jobs) {
      lt::test_options j = o;
      j.jobs = jobs;
      const lt::explore_result cut_j = lt::explore("dfs_cut_jobs", j, lost_update<false>);
      BOOST_REQUIRE(cut_j.dfs.has_value());
      BOOST_TEST(cut_j.dfs->schedules == 3u);
      BOOST_TEST(cut_j.dfs->stopped == cut.dfs->stopped);
      j.max_schedules = 0;
      const lt::explore_result fixed_j = lt::explore("dfs_fixed_jobs", j, lost_update<false>);
      BOOST_REQUIRE(fixed_j.dfs.has_value());
      BOOST_TEST(fixed_j.dfs->verified);
      BOOST_TEST(fixed_j.dfs->schedules == fixed.dfs->schedules);
      BOOST_TEST(fixed_j.dfs->fair_tail_runs == fixed.dfs->fair_tail_runs);
      const lt::explore_result buggy_j = lt::explore("dfs_buggy_jobs", j, lost_update<true>);
      BOOST_REQUIRE(buggy_j.dfs.has_value());
      BOOST_TEST(buggy_j.dfs->schedules == buggy.dfs->schedules);
      BOOST_REQUIRE(buggy_j.failures.size() == 1u);
      BOOST_TEST((buggy_j.failures.front().record.config.options.decisions ==
                  f.record.config.options.decisions));
    }
  }

  // With partial-order reduction and no bounds: the whole tree, far smaller.
  o.max_schedules = 0;
  o.preemption_bound.reset();
  const lt::explore_result full = lt::explore("dfs_full", o, lost_update<false>);
  o.dpor = true;
  const lt::explore_result reduced = lt::explore("dfs_reduced", o, lost_update<false>);
  BOOST_REQUIRE(full.dfs.has_value() && reduced.dfs.has_value());
  BOOST_TEST(full.dfs->verified);
  BOOST_TEST(reduced.dfs->verified);
  BOOST_TEST(reduced.dfs->schedules < full.dfs->schedules);
  BOOST_TEST(reduced.dfs->bounds == "no bounds, partial-order reduction");
  const lt::explore_result found = lt::explore("dfs_reduced_buggy", o, lost_update<true>);
  BOOST_TEST(found.failures.size() == 1u);
  // Timer choices are tried with every value under the reduction as well
  // (sim/tests/test_dfs.cpp compares their outcomes with the full search's).
  o.timer_ties = true;
  o.timer_jitter_ns = 5;
  const lt::explore_result timed = lt::explore("dfs_dpor_timers", o, lost_update<false>);
  BOOST_REQUIRE(timed.dfs.has_value());
  BOOST_TEST(timed.dfs->verified);
  BOOST_TEST(lt::explore("dfs_dpor_timers_buggy", o, lost_update<true>).failures.size() == 1u);
  o.timer_ties = false;
  o.timer_jitter_ns = 0;
  o.preemption_bound = 2;
  BOOST_CHECK_THROW(lt::explore("dfs_bounded_dpor", o, lost_update<false>), lt::bad_input);

  // The bounds come from the environment too.
  ::setenv("LOCKSTEP_DELAY_BOUND", "1", 1);
  ::setenv("LOCKSTEP_PREEMPTION_BOUND", "none", 1);
  lt::test_options e;
  lt::apply_environment(e);
  BOOST_TEST(!e.preemption_bound.has_value());
  BOOST_TEST((e.delay_bound == std::optional<std::uint32_t>{1}));
  ::setenv("LOCKSTEP_DPOR", "1", 1);
  lt::apply_environment(e);
  BOOST_TEST(e.dpor);
  ::setenv("LOCKSTEP_DPOR", "yes", 1);
  BOOST_CHECK_THROW(lt::apply_environment(e), lt::bad_input);
  ::unsetenv("LOCKSTEP_DPOR");
  ::setenv("LOCKSTEP_DELAY_BOUND", "some", 1);
  BOOST_CHECK_THROW(lt::apply_environment(e), lt::bad_input);
  ::unsetenv("LOCKSTEP_DELAY_BOUND");
  ::unsetenv("LOCKSTEP_PREEMPTION_BOUND");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_property_rebuilds_its_case_from_the_record_and_replays_it_in_one_command) {
  // A "property" whose generated input picks the body: "buggy" or "fixed".
  const auto case_of = [](const std::string& input) -> std::optional<lt::test_body> {
    if (input == "buggy") return lt::test_body(lost_update<true>);
    if (input == "fixed") return lt::test_body(lost_update<false>);
    return std::nullopt;
  };
  const std::string dir = temp_dir("property_replay");
  lt::test_options o = options_in(dir);
  o.input = "buggy";
  const lt::explore_result r = lt::explore("prop", o, lost_update<true>);
  BOOST_REQUIRE_EQUAL(r.failures.size(), 1U);
  const std::string path = r.failures.front().record_path;

  ::unsetenv("LOCKSTEP_REPLAY");
  BOOST_TEST(!lt::replay_property_case("prop", case_of, "./prop").has_value());  // not asked: the property runs

  ::setenv("LOCKSTEP_REPLAY", path.c_str(), 1);
  const std::optional<lt::case_outcome> again = lt::replay_property_case("prop", case_of, "./prop");
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(!again->passed);
  BOOST_TEST(again->report.find("reproduced") != std::string::npos, again->report);
  // The same record, its input rebuilt as the fixed case, continued past it: no longer fails.
  lt::test_record edited = lt::read_test_record(path);
  edited.input = "fixed";
  const std::string fixed_path = dir + "/fixed.json";
  lt::write_test_record(fixed_path, edited);
  ::setenv("LOCKSTEP_REPLAY", fixed_path.c_str(), 1);
  ::setenv("LOCKSTEP_REPLAY_CONTINUE", "1", 1);
  const std::optional<lt::case_outcome> gone = lt::replay_property_case("prop", case_of, "./prop");
  BOOST_REQUIRE(gone.has_value());
  BOOST_TEST(gone->passed, gone->report);
  BOOST_TEST(gone->report.find("no longer fails") != std::string::npos, gone->report);
  ::unsetenv("LOCKSTEP_REPLAY_CONTINUE");
  // Another test's record is skipped.
  const std::optional<lt::case_outcome> other = lt::replay_property_case("another_prop", case_of, "./prop");
  BOOST_REQUIRE(other.has_value());
  BOOST_TEST(other->passed);
  BOOST_TEST(other->report.find("skipped") != std::string::npos);
  ::unsetenv("LOCKSTEP_REPLAY");
  std::filesystem::remove_all(dir);
}
