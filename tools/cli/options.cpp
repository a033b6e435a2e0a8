#include "tools/cli/options.hpp"

#include "sim/dfs.hpp"
#include "sim/prng.hpp"
#include "testing/record_fields.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <thread>

#include "tools/output_file.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {

std::uint64_t parse_u64(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max) {
  const std::string expected = flag + ": expected a decimal integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", found '" + printable(text, max_shown_chars) + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) throw input_error(expected);
  std::uint64_t v = 0;
  for (char c : text) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) throw input_error(expected);
    v = v * 10 + digit;
  }
  if (v < min || v > max) throw input_error(expected);
  return v;
}

namespace {

// A threads run has no seed, schedule, trace or record: a flag that would
// only mean something on the simulator is refused, not silently ignored.
void resolve_backend(run_options& o, bool with_seed) {
  if (o.backend != "threads") {
    if (o.time_scale_given) {
      throw input_error("--time-scale: expected only with --backend threads (the simulator's clock is virtual), "
                        "found --backend " + o.backend);
    }
    return;
  }
  if (!with_seed) {
    throw input_error("--backend threads: expected only with `lockstep run` (a threads run is not reproducible: "
                      "no seed picks its schedule, so there is nothing to explore or compare)");
  }
  o.time_scale = parse_u64("--time-scale", o.time_scale_text, 1, 1'000'000);
  const std::string why = " with --backend threads (the kernel schedules real threads: no seed, strategy, "
                          "trace or record replays a run)";
  if (!o.sim_only_flag.empty()) throw input_error(o.sim_only_flag + ": expected no simulator-only flag" + why);
  if (o.swarm) throw input_error("--swarm: expected no swarm ranges to draw" + why);
  if (o.trace_given) throw input_error("--trace: expected no trace" + why);
  if (o.record_given) throw input_error("--record: expected no failure record" + why);
}

}  // namespace

swarm_timer_draw swarm_timers(std::uint64_t seed) {
  static constexpr std::int64_t bounds[] = {0, 1, 10, 100, 1'000, 10'000};
  sim::prng draws(seed ^ 0x7469'6d65'7273'7761ULL);  // "timersw": its own stream, not the schedule's
  swarm_timer_draw d;
  d.ties = draws.below(2) == 1;
  d.jitter_ns = bounds[draws.below(6)];
  return d;
}

void resolve(run_options& o, bool with_seed) {
  if (with_seed) {
    o.seed = parse_u64("--seed", o.seed_text, 0, UINT64_MAX);
  } else {
    o.first_seed = parse_u64("--first-seed", o.first_seed_text, 0, UINT64_MAX);
    if (const auto dots = o.seeds_text.find(".."); dots != std::string::npos) {
      // --seeds A..B (both included), or A.. up to 2^64-1 for a run bounded by --runs or --time.
      if (o.first_seed_given) {
        throw input_error("--seeds " + printable(o.seeds_text, max_shown_chars) +
                          ": expected either a range A..B or --first-seed with a count, found both");
      }
      const std::string b = o.seeds_text.substr(dots + 2);
      o.first_seed = parse_u64("--seeds (the range's first seed A of A..B)", o.seeds_text.substr(0, dots), 0, UINT64_MAX);
      o.last_seed = b.empty() ? UINT64_MAX
                              : parse_u64("--seeds (the range's last seed B of A..B)", b, o.first_seed, UINT64_MAX);
      // A count for whoever needs one (check-determinism), saturated: 0..2^64-1 has 2^64 seeds.
      o.seeds = o.last_seed - o.first_seed == UINT64_MAX ? UINT64_MAX : o.last_seed - o.first_seed + 1;
    } else {
      o.seeds = parse_u64("--seeds", o.seeds_text, 1, std::uint64_t{1} << 40);
      // The last seed is first + seeds - 1: it must not wrap past 2^64 - 1.
      if (o.first_seed > UINT64_MAX - (o.seeds - 1)) {
        throw input_error("--first-seed " + o.first_seed_text + " with --seeds " + o.seeds_text +
                          ": expected a range ending at most at 18446744073709551615, found one past it");
      }
      o.last_seed = o.first_seed + (o.seeds - 1);
    }
  }
  o.cores = static_cast<std::uint32_t>(parse_u64("--cores", o.cores_text, 1, 64));
  o.pct_depth = static_cast<std::uint32_t>(parse_u64("--pct-depth", o.pct_depth_text, 1, 64));
  o.pct_steps = parse_u64("--pct-steps", o.pct_steps_text, 0, UINT64_MAX);
  o.max_steps = parse_u64("--max-steps", o.max_steps_text, 1, UINT64_MAX);
  if (!o.timer_jitter_text.empty()) {
    o.timer_jitter_ns = static_cast<std::int64_t>(parse_u64("--timer-jitter", o.timer_jitter_text, 0, testing::max_timer_jitter_ns));
  }
  if (o.trace_given) check_output_path("--trace", o.trace_out);
  if (o.record_given) check_output_path("--record", o.record_out);
  resolve_backend(o, with_seed);
}

std::uint64_t parse_duration_ms(const std::string& flag, const std::string& text) {
  const std::string expected = flag + ": expected a wall-clock duration like 30s, 5m or 2h (digits then ms, s, m "
                               "or h; 1ms to 8760h), found '" + printable(text, max_shown_chars) + "'";
  const auto unit_at = text.find_first_not_of("0123456789");
  if (unit_at == 0 || unit_at == std::string::npos || unit_at > 12) throw input_error(expected);
  const std::string unit = text.substr(unit_at);
  std::uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  if (unit == "s") scale = 1000;
  if (unit == "m") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (scale == 0) throw input_error(expected);
  const std::uint64_t n = std::stoull(text.substr(0, unit_at));  // at most 12 digits: no overflow below
  const std::uint64_t ms = n * scale;
  if (ms < 1 || ms > 8760ULL * 3'600'000) throw input_error(expected);
  return ms;
}

void resolve_explore(run_options& o, explore_options& e) {
  if (e.jobs_text.empty()) {
    const unsigned cores = std::thread::hardware_concurrency();
    e.jobs = cores == 0 ? 1 : cores;  // 0: the machine would not say
  } else {
    e.jobs = static_cast<unsigned>(parse_u64("--jobs", e.jobs_text, 1, 1024));
  }
  if (!e.runs_text.empty()) {
    const std::uint64_t runs = parse_u64("--runs", e.runs_text, 1, UINT64_MAX);
    // The range's first N seeds, whatever the shard: so N runs over K shards merge into the N of one machine.
    if (o.last_seed - o.first_seed >= runs) o.last_seed = o.first_seed + (runs - 1);
  }
  if (!e.time_text.empty()) e.time_limit_ms = parse_duration_ms("--time", e.time_text);
  e.stop_after = parse_u64("--stop-after", e.stop_after_text, 0, UINT64_MAX);
  if (e.stop_after_liveness_given) {
    e.stop_after_liveness = parse_u64("--stop-after-liveness", e.stop_after_liveness_text, 0, UINT64_MAX);
  }
  e.max_records = parse_u64("--max-records", e.max_records_text, 0, UINT64_MAX);
  if (e.record_dir_given) {
    if (o.record_given) {
      throw input_error("--record-dir: expected either --record FILE or --record-dir DIR, found both");
    }
    std::error_code ignored;  // one that cannot be made is refused just below, naming why
    std::filesystem::create_directories(e.record_dir, ignored);
    check_output_dir("--record-dir", e.record_dir);
  }
  const auto slash = e.shard_text.find('/');
  const std::string expected_shard = "--shard: expected I/N, the shard's index I from 0 to N-1 and the count N "
                                     "from 1 to 65536, found '" + printable(e.shard_text, max_shown_chars) + "'";
  if (slash == std::string::npos) throw input_error(expected_shard);
  try {
    e.shard_count = parse_u64("--shard", e.shard_text.substr(slash + 1), 1, 65536);
    e.shard_index = parse_u64("--shard", e.shard_text.substr(0, slash), 0, e.shard_count - 1);
  } catch (const input_error&) {
    throw input_error(expected_shard);
  }
  e.sharded = e.shard_count > 1;
  if (o.record_given && e.stop_after_liveness) {
    throw input_error("--record: names one file, expected no --stop-after-liveness with it (counted apart, "
                      "liveness and safety failures make several records: use --record-dir)");
  }
  if (o.record_given && e.stop_after != 1) {
    throw input_error("--record: names one file, expected --stop-after 1 with it (without --record every "
                      "failure has its own file), found --stop-after " + e.stop_after_text);
  }
  if (e.json_given) check_output_path("--json", e.json_out);
  if (e.junit_given) check_output_path("--junit", e.junit_out);
  resolve_dfs(o, e);
}

namespace {

bool given(const explore_options& e, std::string_view flag) {
  return std::find(e.given.begin(), e.given.end(), flag) != e.given.end();
}

std::optional<std::uint32_t> parse_bound(const char* flag, const std::string& text) {
  if (text == "none") return std::nullopt;
  return static_cast<std::uint32_t>(parse_u64(std::string(flag) + " (or none)", text, 0, 1'000'000));
}

}  // namespace

void resolve_dfs(run_options& o, explore_options& e) {
  if (o.strategy != "dfs") {
    for (const char* flag : {"--preemption-bound", "--delay-bound", "--max-schedules", "--dfs-from", "--dpor"}) {
      if (given(e, flag)) {
        throw input_error(std::string(flag) + ": expected only with --strategy dfs (a bound of its search), found "
                          "--strategy " + o.strategy);
      }
    }
    return;
  }
  // A search has no seeds to count, shard or sample: what would be ignored is refused.
  for (const char* flag : {"--runs", "--shard", "--stop-after", "--stop-after-liveness", "--json", "--junit",
                           "--swarm", "--generate", "--pct-depth", "--pct-steps"}) {
    if (given(e, flag)) {
      throw input_error(std::string(flag) + ": expected no " + flag + " with --strategy dfs (it searches the "
                        "schedules of one seed, depth first, to its first failure; its budget is "
                        "--max-schedules or --time)");
    }
  }
  if (given(e, "--seeds")) {
    if (o.last_seed != o.first_seed) {
      throw input_error("--seeds " + printable(o.seeds_text, max_shown_chars) +
                        ": expected one seed with --strategy dfs (it searches that seed's schedules; give "
                        "--first-seed S or --seeds S..S), found " + std::to_string(o.seeds) + " seeds");
    }
  }
  o.last_seed = o.first_seed;
  o.seeds = 1;
  if (e.dpor) {
    // The reduction prunes schedules a bound would keep: "verified" holds only without bounds.
    for (const auto& [flag, text] : {std::pair{"--preemption-bound", &e.preemption_bound_text},
                                     std::pair{"--delay-bound", &e.delay_bound_text}}) {
      if (!text->empty() && *text != "none") {
        throw input_error(std::string(flag) + " " + printable(*text, max_shown_chars) +
                          ": expected none with --dpor (partial-order reduction searches without bounds)");
      }
    }
    if (given(e, "--dfs-from")) {
      throw input_error("--dfs-from: expected no position with --dpor (a search with partial-order reduction "
                        "cannot resume: what it tried where, and where steps raced, is not in a position)");
    }
  } else if (!e.preemption_bound_text.empty()) {
    e.preemption_bound = parse_bound("--preemption-bound", e.preemption_bound_text);
  } else if (e.delay_bound_text.empty()) {
    e.preemption_bound = 2;
  }
  if (!e.delay_bound_text.empty()) e.delay_bound = parse_bound("--delay-bound", e.delay_bound_text);
  e.max_schedules = parse_u64("--max-schedules", e.max_schedules_text, 0, UINT64_MAX);
  if (given(e, "--dfs-from")) {
    const auto choices = sim::parse_position(e.dfs_from_text);
    if (!choices) {
      throw input_error("--dfs-from " + printable(e.dfs_from_text, max_shown_chars) +
                        ": expected a position a search printed (choices joined by '.', a run of one choice as "
                        "C*N, like 0*12.1.0)");
    }
    e.dfs_from = *choices;
  }
}

void remove_stale_outputs(const explore_options& e) {
  if (e.json_given) remove_stale_output(e.json_out);
  if (e.junit_given) remove_stale_output(e.junit_out);
}

std::vector<std::string> expand_files(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    std::error_code ec;
    if (!std::filesystem::is_directory(g, ec)) {
      out.push_back(g);  // a missing file is the reader's to report, with its name
      continue;
    }
    std::vector<std::string> in_dir;
    for (const auto& entry : std::filesystem::directory_iterator(g, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") in_dir.push_back(entry.path().string());
    }
    if (ec) throw input_error(printable(g, 200) + ": cannot list the directory: " + ec.message());
    if (in_dir.empty()) throw input_error(printable(g, 200) + ": expected a directory holding scenario files (*.json), found none");
    // Sorted: the directory's own order is the file system's, not the same on two machines.
    std::sort(in_dir.begin(), in_dir.end());
    out.insert(out.end(), in_dir.begin(), in_dir.end());
  }
  return out;
}

void require_one_file(const std::vector<std::string>& files, const char* flag) {
  if (flag == nullptr || files.size() == 1) return;
  throw input_error(std::string(flag) + ": names one output file, expected one scenario FILE with it, found " +
                    std::to_string(files.size()) + " files");
}

void add_explore_flags(CLI::App& app, explore_options& e) {
  app.add_option("--jobs", e.jobs_text,
                 "OS threads running seeds, each with its own executor (1 to 1024; default: the machine's "
                 "cores); failures, records and summary are the same whatever N (--strategy dfs: the tree split among at most 64 "
                 "threads, the same verdict; --dpor: one thread)");
  app.add_option("--runs", e.runs_text, "run at most the range's first N seeds (a shard runs its share of them)");
  app.add_option("--time", e.time_text,
                 "wall-clock budget, like 30s, 5m or 2h: then stop taking seeds, finish the runs in flight "
                 "and report the seeds done");
  app.add_option("--stop-after", e.stop_after_text,
                 "stop after N failures, counted in seed order (default 1; 0: never stop on failures); with "
                 "--stop-after-liveness, N safety failures");
  app.add_option("--stop-after-liveness", e.stop_after_liveness_text,
                 "count liveness failures (deadlock, step or time budget, a liveness oracle) apart and stop "
                 "after M of them (0: never: go on past livelocks to look for a safety failure); the exit "
                 "code is then the first safety failure's, if any");
  app.add_option("--max-records", e.max_records_text,
                 "write at most N failure records (default 100; 0: none): each failure past it is still "
                 "printed, with the command that reruns it, and the summary counts them");
  app.add_option("--record-dir", e.record_dir,
                 "write failure records into this directory (default results/failures, made if missing)");
  app.add_option("--shard", e.shard_text,
                 "run shard I of N (0 <= I < N): the seeds s with (s - first) mod N = I; `lockstep merge` "
                 "combines the shards' --json files");
  app.add_option("--preemption-bound", e.preemption_bound_text,
                 "--strategy dfs: at most N preemptions per schedule (running another fiber while the last one "
                 "could go on; 0 to 1000000, or none; default 2, or none when --delay-bound is given)");
  app.add_option("--delay-bound", e.delay_bound_text,
                 "--strategy dfs: at most N delays per schedule (steps away from a round-robin scheduler's "
                 "choice, free choices included; 0 to 1000000, or none; default none)");
  app.add_option("--max-schedules", e.max_schedules_text,
                 "--strategy dfs: stop after N schedules without calling the search verified (default 1000000; "
                 "0: none)");
  app.add_flag("--dpor", e.dpor,
               "--strategy dfs: dynamic partial-order reduction with sleep sets: schedules that only reorder steps "
               "on different objects run once, so a whole tree can be verified (no bounds: --preemption-bound and "
               "--delay-bound none or not given; no --dfs-from)");
  app.add_option("--dfs-from", e.dfs_from_text,
                 "--strategy dfs: resume a search where an earlier one stood (the position its \"not verified\" "
                 "line printed), with the same file, seed and bounds");
  app.add_option("--json", e.json_out, "write the summary as JSON to this file (the input of `lockstep merge`)");
  app.add_option("--junit", e.junit_out,
                 "write JUnit XML to this file: one testcase per failing seed (its one failure: seed, reason, "
                 "replay command) and one per file that held");
}

void add_run_flags(CLI::App& app, run_options& o, bool with_seed, bool with_dfs) {
  app.add_option("files", o.files,
                 "scenario files (JSON, scenarios/README.md), each run in turn; a directory stands for its "
                 "*.json files sorted by name");  // required unless --generate: checked in main
  if (with_seed) {
    app.add_option("--seed", o.seed_text, "seed of the run (decimal, 0 to 2^64-1; default 1)");
  } else {
    app.add_option("--first-seed", o.first_seed_text, "first seed (decimal; default 1)");
    app.add_option("--seeds", o.seeds_text,
                   "how many seeds from --first-seed (1 to 2^40; default 100), or a range A..B (both included; "
                   "A.. runs to 2^64-1, for --runs or --time to bound)");
  }
  // The default is what `o` holds before parsing: explore's the portfolio, the others' random.
  const auto default_if = [&o](const char* name) { return o.strategy == name ? "default: " : ""; };
  std::string strategies =
      std::string("random (") + default_if("random") + "a uniformly random runnable fiber at each step)" +
      " | pct (priorities with d-1 random change "
      "points) | pos (partial-order sampling: random priorities, redrawn when another fiber's step touches "
      "the object a fiber waits to touch) | surw (a random walk weighted by what each fiber has left to do on "
      "one shared object, counted by a random run of the same seed first) | fifo (the fiber that became runnable "
      "first) | portfolio (" + default_if("portfolio") +
      "seed s under random, pct, pos or surw by (s - 1) mod 4, so seed 1 under random: results/strategies.md)";
  std::vector<std::string> names(std::begin(sim::sampling_strategies), std::end(sim::sampling_strategies));
  names.emplace_back("portfolio");
  if (with_dfs) {
    strategies += " | dfs (every schedule of one seed within --preemption-bound and --delay-bound, depth first)";
    names.emplace_back("dfs");
  }
  app.add_option("--strategy", o.strategy, strategies)->check(CLI::IsMember(names));
  app.add_option("--cores", o.cores_text, "simulated cores (1 to 64; default: the file's system.cores)");
  app.add_option("--pct-depth", o.pct_depth_text, "PCT bug depth d (d-1 priority change points; 1 to 64; default 3)");
  app.add_option("--pct-steps", o.pct_steps_text,
                 "PCT: steps k the change points are drawn from (default 0: the length of a random run "
                 "of the same scenario and seed, so change points land inside the run)");
  app.add_option("--max-steps", o.max_steps_text, "step budget (a livelock past it; at least 1; default 10000000)");
  app.add_flag("--timer-ties", o.timer_ties,
               "timers due at one virtual instant are a choice: all fire together, or one alone first (as if an "
               "instant earlier); recorded, replayed (under --swarm drawn from each seed)");
  app.add_option("--timer-jitter", o.timer_jitter_text,
                 "each timed wait ends up to NS virtual ns late (never early), by a recorded choice among at most 17 "
                 "evenly spaced values from 0 to NS, so timers cross neighbours' deadlines (0 to 10^12; default 0; under "
                 "--swarm drawn from each seed: 0, 1, 10, 100, 1000 or 10000)")
      ->type_name("NS");
  auto sim_only = [&o](const char* flag) {
    return [&o, flag](const std::string&) {
      if (o.sim_only_flag.empty()) o.sim_only_flag = flag;
    };
  };
  // Marked where they are added, so the backend check knows they were given.
  for (const char* flag : {"--strategy", "--pct-depth", "--pct-steps", "--max-steps", "--timer-ties", "--timer-jitter"}) {
    app.get_option(flag)->each(sim_only(flag));
  }
  if (with_seed) app.get_option("--seed")->each(sim_only("--seed"));
  app.add_option("--backend", o.backend,
                 "sim (default) | threads: run on the real pinned-thread backend, real clock (run only, scenario "
                 "files only; not byte-for-byte, no replay)")
      ->check(CLI::IsMember({"sim", "threads"}));
  app.add_option("--time-scale", o.time_scale_text,
                 "with --backend threads: real ns per virtual ns of the file's durations (1 to 1000000; default "
                 "1000, a virtual ns taking a real us)")
      ->each([&o](const std::string&) { o.time_scale_given = true; });
  app.add_option("--record", o.record_out,
                 "where to write the failure record (default: results/failures/FILE-STRATEGY-SEED.json; "
                 "with one FILE only)");
}

void add_swarm_flag(CLI::App& app, run_options& o) {
  app.add_flag("--swarm", o.swarm,
               "draw each run's configuration from its seed within the file's swarm ranges ({\"range\": [lo, hi]}, "
               "{\"one_of\": [...]}; scenarios/README.md); a failure's record holds the values drawn");
}

void add_generate_flag(CLI::App& app, run_options& o) {
  app.add_option("--generate", o.generate,
                 "instead of FILEs: each seed draws a whole scenario (configuration, behaviour, actors and "
                 "steps) of COMPONENT and runs it; a failure's record holds the scenario drawn")
      ->check(CLI::IsMember({"lanes", "shards", "flights", "composed", "any"}))
      ->type_name("COMPONENT");
}

void add_replay_backend_flag(CLI::App& app) {
  static std::string backend;  // only ever "sim": the validator refuses the rest
  app.add_option("--backend", backend, "sim only: a record replays on the simulator")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "sim") return "";
            return "expected sim, found '" + printable(v, max_shown_chars) +
                   "' (a threads run is not reproducible: it has no record and no replay)";
          },
          "sim"));
}

}  // namespace lockstep::cli
