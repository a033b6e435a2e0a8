#include "tools/cli/prepared.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <locale>
#include <system_error>
#include <thread>

#include "sim/sizing_run.hpp"
#include "sim/strategy.hpp"
#include "tools/cli/report.hpp"
#include "tools/crash_report.hpp"
#include "tools/scenario/generate.hpp"
#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/scenario/schema_check.hpp"
#include "tools/scenario/swarm.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

prepared prepare_scenario(scenario::scenario s) {
  prepared p;
  p.name = s.source;
  p.scen = std::make_shared<const scenario::scenario>(std::move(s));
  return p;
}

namespace {

/// Where the file has swarm ranges and --swarm is given: the ranges checked,
/// and the document kept for for_seed.
std::shared_ptr<const nlohmann::json> swarm_document_of(const run_options& o, const nlohmann::json& doc) {
  if (!o.swarm) return nullptr;
  scenario::check_against_schema(doc, o.file, "");
  scenario::swarm::check_ranges(doc, o.file);
  if (scenario::swarm::ranges_in(doc).empty()) return nullptr;
  return std::make_shared<const nlohmann::json>(doc);
}

}  // namespace

prepared for_seed(const prepared& p, std::uint64_t seed) {
  if (!p.generator.empty()) {
    // The reader's rules are checked on every seed; the schema check (most of
    // the cost, as for swarm) is left to `lockstep generate`, which runs it on
    // every document it prints, and to generate_cli, which checks 10,000 with
    // an independent validator: the generator stays within the schema's bounds
    // by construction.
    prepared out = prepare_scenario(
        scenario::read_schema_checked_scenario(scenario::generate::document(p.generator, seed), p.name));
    out.name = p.name;
    out.generator = p.generator;
    return out;
  }
  if (!p.swarm_document) return p;
  scenario::swarm::resolution r = scenario::swarm::resolve(*p.swarm_document, seed);
  // The rules that depend on the run (check_run_settings) do not depend on
  // the values drawn, and the schema bounded every range's values: prepare
  // checked both once, so each seed skips them (the schema check was most
  // of a swarm run's extra cost).
  prepared out = prepare_scenario(scenario::read_schema_checked_scenario(r.document, p.name));
  out.swarm_values = scenario::swarm::values_json(r.values);
  return out;
}

void check_swarm_files(const run_options& o, const std::vector<std::string>& files) {
  if (!o.swarm || files.size() != 1) return;
  const nlohmann::json doc = read_strict_file(files.front());
  scenario::check_against_schema(doc, files.front(), "");
  if (scenario::swarm::ranges_in(doc).empty()) {
    throw input_error(files.front() +
                      ": /: expected swarm ranges ({\"range\": [lo, hi]} or {\"one_of\": [...]} on a configuration "
                      "knob) with --swarm, found none (run the file without --swarm)");
  }
}

prepared prepare(run_options& o) {
  const nlohmann::json doc = read_strict_file(o.file);
  const std::shared_ptr<const nlohmann::json> swarm_doc = swarm_document_of(o, doc);
  scenario::scenario s = scenario::read_scenario(swarm_doc ? scenario::swarm::resolve(doc, 0).document : doc, o.file);
  if (swarm_doc) s.document = doc;  // what the file says: explore's summary names it
  if (!o.cores_given) o.cores = s.cores;
  scenario::check_run_settings(s, o.strategy, o.cores);
  prepared p = prepare_scenario(std::move(s));
  p.swarm_document = swarm_doc;
  return p;
}

prepared prepare_generated(run_options& o) {
  const std::string name = "generated-" + o.generate;
  scenario::scenario s =
      scenario::read_scenario(scenario::generate::document(o.generate, o.first_seed), name);
  if (!o.cores_given) o.cores = s.cores;  // the first seed's; each seed runs on its own (explore_runner)
  scenario::check_run_settings(s, o.strategy, o.cores);
  prepared p = prepare_scenario(std::move(s));
  p.name = name;
  p.generator = o.generate;
  return p;
}

void check_every_file(const run_options& o, const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    run_options one = o;
    one.file = f;
    (void)prepare(one);
  }
}

std::vector<prepared_file> prepare_every_file(const run_options& o, const std::vector<std::string>& files,
                                              unsigned jobs) {
  std::vector<prepared_file> out(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      try {
        out[i].o = o;
        out[i].o.file = files[i];
        out[i].p = prepare(out[i].o);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  const std::size_t wanted = std::min<std::size_t>(jobs, files.size());
  if (wanted > 1) {
    // libstdc++ fills ctype<char>'s narrow() cache lazily, a byte per
    // character, from whichever thread asks first: a benign race, but a race
    // (GCC bug 77704, reported by TSan here). The schema check compiles
    // std::regex patterns, which narrow() every character of them: fill the
    // cache once on this thread before any helper reads it.
    const auto& ctype = std::use_facet<std::ctype<char>>(std::locale());
    for (int c = 0; c < 256; ++c) (void)ctype.narrow(static_cast<char>(c), '\0');
  }
  for (std::size_t i = 1; i < wanted; ++i) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // this thread does the rest
    }
  }
  work();
  for (auto& t : helpers) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

sim::run_config config_of(const run_options& o, std::uint64_t seed, sim::trace_mode trace) {
  sim::run_config c;
  c.seed = seed;
  c.strategy = o.strategy == "portfolio" ? std::string(sim::portfolio_strategy(seed)) : o.strategy;
  c.cores = o.cores;
  c.options.pct_depth = o.pct_depth;
  c.options.pct_steps = o.pct_steps;
  c.max_steps = o.max_steps;
  const swarm_timer_draw drawn = o.swarm ? swarm_timers(seed) : swarm_timer_draw{};
  c.timer_ties = o.timer_ties || drawn.ties;
  c.timer_jitter_ns = o.timer_jitter_ns ? *o.timer_jitter_ns : drawn.jitter_ns;
  c.trace = trace;
  return c;
}

sim::run_result run_once(const prepared& p, const sim::run_config& c) {
  if (p.swarm_document || !p.generator.empty()) return scenario::run_scenario(c, *for_seed(p, c.seed).scen);
  return scenario::run_scenario(c, *p.scen);  // applies expect_failure
}

// PCT draws its d-1 change points from [1, k]; a k far beyond the run's
// length leaves them all past its end, and PCT degenerates to fixed
// priorities. Unless given, k is the step count of a random run of the same
// scenario and seed: deterministic, and the right order of magnitude. surw
// weighs fibers by what that run saw them do (sim::run_profile).
sim::run_config with_sizing_run(const prepared& p, sim::run_config c) {
  if (!sim::needs_sizing_run(c.strategy, c.options)) return c;
  const sim::run_config probe = sim::sizing_run_of(c);
  sim::apply_sizing_run(c, run_once(p, probe));
  return c;
}

prepared prepare_record(const failure_record& rec) {
  scenario::scenario s = scenario::read_scenario(rec.scenario, rec.path, "/scenario");
  scenario::check_run_settings(s, rec.config.strategy, rec.config.cores, "/scenario");
  s.source = rec.scenario_file;  // reruns and summaries name the file it came from
  prepared p = prepare_scenario(std::move(s));
  p.swarm_values = rec.swarm;  // a continued run's record still says what the swarm run drew
  return p;
}

sim::run_result replay_record(const failure_record& rec, sim::trace_mode trace) {
  sim::run_config c = rec.config;
  c.strategy = "replay";
  c.options.decisions = rec.result.decisions;
  c.trace = trace;
  const prepared p = prepare_record(rec);
  crash_report::describe("lockstep: crashed replaying " + rec.path + " (" + run_summary(p, rec.config) +
                         ")\nrerun with: " + replay_command(rec.path) + "\nor: " +
                         rerun_command(p, rec.config) + "\n");
  auto r = run_once(p, c);
  crash_report::clear();
  return r;
}

bool reproduced(const failure_record& rec, const sim::run_result& r) {
  return r.failed && r.failed->kind != sim::failure_kind::replay_divergence &&
         r.trace_hash == rec.result.trace_hash && r.decisions == rec.result.decisions;
}

}  // namespace lockstep::cli
