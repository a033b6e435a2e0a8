// lockstep selfcheck [--budget 60s] [--jobs N] [--library DIR] [--only NAME...]:
// the harness tested as it tests others. For each bug planted in the engine
// (engine/plant.hpp; a selfcheck build), three searches, each with the same
// wall-clock budget and each stopped by its first catch:
//   1. library:    every bundled scenario that holds the bug's component, the
//                  bug planted (its `canary` set), seeds 1, 2, ... in turn
//                  over the files (random and pct alternating; a file with
//                  exact `expect` counts once under fifo);
//   2. generate:   scenarios drawn whole from seeds 1, 2, ... (explore
//                  --generate's, tools/scenario/generate.hpp), the bug planted;
//   3. threads:    the library's files again, on the real pinned-thread
//                  backend (each run a `lockstep run --backend threads` of
//                  this binary, cut at the budget): the baseline a plain
//                  stress test would give.
// Each row says whether the bug was caught, by which oracle or detection,
// after how many runs and seconds, and how small `lockstep shrink` makes the
// first simulated catch. Exit 0 when the library or --generate caught every
// bug; 1 (naming the holes) otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/plant.hpp"
#include "tools/cli/explore_summary.hpp"
#include "tools/cli/prepared.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/shrinker.hpp"
#include "tools/cli/verbs.hpp"
#include "tools/exit_codes.hpp"
#include "tools/output_file.hpp"
#include "tools/scenario/generate.hpp"
#include "tools/scenario/run_scenario.hpp"
#include "tools/scenario/scenario_reader.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

/// A planted bug's component: its name's prefix, the key its `canary` sits under in /system.
struct target {
  plant::bug bug;
  std::string name;       ///< shards_lifo_per_key
  std::string component;  ///< shards (what --generate draws)
  std::string system_key; ///< shards (where its canary goes)
  std::string canary;     ///< lifo_per_key
};

target target_of(plant::bug b) {
  target t{b, std::string(plant::name(b)), "", "", ""};
  const auto cut = t.name.find('_');
  t.component = t.name.substr(0, cut);
  t.system_key = t.component == "flights" ? "single_flight" : t.component;
  t.canary = t.name.substr(cut + 1);
  return t;
}

/// What one search found.
struct search {
  bool caught = false;
  std::string by;         ///< explore's failure reason: "oracle per_key_order", "liveness ..."
  std::string where;      ///< file and seed (or generated seed) of the first catch
  std::uint64_t runs = 0;
  double seconds = 0;
  std::optional<failure_record> first;  ///< the simulated catch, to shrink
};

/// The library's files that hold the component (expect_failure files aside:
/// their verdict is turned round), with the bug planted.
struct subject {
  std::string file;
  json doc;
  bool fifo_only = false;
};

std::vector<subject> library_of(const std::string& library, const target& t) {
  std::vector<subject> out;
  for (const std::string& f : expand_files({library})) {
    json doc = read_strict_file(f);
    if (!doc["system"].contains(t.system_key) || doc.contains("expect_failure")) continue;
    doc["system"][t.system_key]["canary"] = t.canary;
    try {
      (void)scenario::read_scenario(doc, f);
    } catch (const input_error&) {
      continue;  // where the format has no room for this bug (a flight canary in a composed system)
    }
    out.push_back({f, doc, doc.contains("expect")});
  }
  return out;
}

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

/// One simulated run of `doc`; a failure fills `s` (record included).
bool run_sim(const json& doc, const std::string& name, std::uint64_t seed, const std::string& strategy, search& s,
             clock_type::time_point t0) {
  const scenario::scenario scen = scenario::read_scenario(doc, name);
  const prepared p = prepare_scenario(scen);
  run_options o;
  o.strategy = strategy;
  o.cores = scen.cores;
  sim::run_config c = with_sizing_run(p, config_of(o, seed, sim::trace_mode::hash));
  const sim::run_result r = run_once(p, c);
  ++s.runs;
  if (r.ok()) return false;
  s.caught = true;
  s.by = failure_reason(std::string(sim::to_string(r.failed->kind)), r.failed->message);
  s.where = name + " seed " + std::to_string(seed) + " " + strategy;
  s.seconds = since(t0);
  s.first = failure_record{c, r, name, doc, name, nullptr};
  return true;
}

/// How long a simulated search goes on: a wall-clock budget, or (--runs) a
/// number of runs, which gives the same result on any machine.
struct limit {
  double seconds = 0;
  std::uint64_t runs = 0;  ///< 0: the clock decides
  bool spent(const search& s, clock_type::time_point t0) const {
    return runs != 0 ? s.runs >= runs : since(t0) >= seconds;
  }
};

search library_search(const std::vector<subject>& files, const limit& lim) {
  search s;
  const auto t0 = clock_type::now();
  for (std::uint64_t seed = 1; !files.empty() && !lim.spent(s, t0); ++seed) {
    bool ran = false;
    for (const subject& f : files) {
      if (f.fifo_only && seed > 1) continue;  // exact counts: one fifo run says it all
      ran = true;
      if (run_sim(f.doc, f.file, seed, f.fifo_only ? "fifo" : (seed % 2 == 1 ? "random" : "pct"), s, t0)) return s;
      if (lim.spent(s, t0)) break;
    }
    if (!ran) break;
  }
  s.seconds = since(t0);
  return s;
}

search generate_search(const target& t, const limit& lim) {
  search s;
  const auto t0 = clock_type::now();
  for (std::uint64_t seed = 1; !lim.spent(s, t0); ++seed) {
    json doc = scenario::generate::document(t.component, seed);
    doc["system"][t.system_key]["canary"] = t.canary;
    if (run_sim(doc, "generated-" + t.component, seed, seed % 2 == 1 ? "random" : "pct", s, t0)) return s;
  }
  s.seconds = since(t0);
  return s;
}

/// This binary, run as a child: its exit code and output.
int run_child(const std::vector<std::string>& args, std::string& output) {
  std::string cmd;
  for (const std::string& a : args) cmd += shell_quote(a) + " ";
  cmd += "2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  output.clear();
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

search threads_search(const std::vector<subject>& files, const std::string& self, const std::string& dir,
                      double budget_s) {
  search s;
  std::vector<std::string> paths;
  for (const subject& f : files) {
    try {
      scenario::check_threads_settings(scenario::read_scenario(f.doc, f.file));
    } catch (const input_error&) {
      continue;  // what real threads cannot run (composed, exact counts, the abort policy)
    }
    paths.push_back((std::filesystem::path(dir) / std::filesystem::path(f.file).filename()).string());
    const std::string why = write_output_file(paths.back(), f.doc.dump(2) + "\n");
    if (!why.empty()) throw std::runtime_error("selfcheck: " + paths.back() + ": " + why);
  }
  const auto t0 = clock_type::now();
  while (!paths.empty() && since(t0) < budget_s) {
    for (const std::string& p : paths) {
      std::string out;
      // A run past the budget is cut (timeout(1), SIGKILL): a stress test
      // has found nothing in the time it was given.
      const double left = std::max(0.1, budget_s - since(t0));
      char limit[32];
      std::snprintf(limit, sizeof limit, "%.1f", left);
      const int rc = run_child({"timeout", "-s", "KILL", limit, self, "run", p, "--backend", "threads"}, out);
      ++s.runs;
      if (rc == 128 + 9 || rc == 124) break;  // cut at the budget
      if (rc != exit_held) {
        s.caught = true;
        const auto at = out.find("FAILED ");
        const std::string line = at == std::string::npos ? "exit " + std::to_string(rc)
                                                          : out.substr(at + 7, out.find('\n', at) - at - 7);
        const auto colon = line.find(": ");
        s.by = colon == std::string::npos ? line : failure_reason(line.substr(0, colon), line.substr(colon + 2));
        s.where = std::filesystem::path(p).filename().string();
        s.seconds = since(t0);
        return s;
      }
      if (since(t0) >= budget_s) break;
    }
  }
  s.seconds = since(t0);
  return s;
}

struct row {
  target t;
  std::size_t files = 0;
  search library, generate, threads;
  std::string shrunk;  ///< the first simulated catch, shrunk: its size
};

std::string shrunk_size(const search& s) {
  if (!s.first) return "-";
  shrink_limits limits;
  limits.max_runs = 500;
  limits.time_ms = 0;  // a run budget alone: the same result on any machine
  const shrink_outcome o = shrink_record(*s.first, limits);
  std::ostringstream out;
  out << o.after.actors << " actors, " << o.after.steps << " steps, " << o.after.items << " items, "
      << o.after.preemptions << " preemptions";
  return out.str();
}

std::string cell(const search& s) {
  std::ostringstream out;
  if (s.caught) {
    out << s.by << " | " << s.runs << " | " << std::fixed << std::setprecision(3) << s.seconds;
  } else {
    out << "**not caught** | " << s.runs << " | " << std::fixed << std::setprecision(1) << s.seconds;
  }
  return out.str();
}

}  // namespace

int cmd_selfcheck(const selfcheck_options& o) {
  if (!plant::compiled_in()) {
    throw input_error("selfcheck: this build has no planted bugs: configure with -DLOCKSTEP_SELFCHECK=ON "
                      "(the test and demo builds are)");
  }
  const double budget_s = static_cast<double>(parse_duration_ms("--budget", o.budget_text)) / 1000.0;
  const limit sim_limit{budget_s, o.runs_text.empty() ? 0 : parse_u64("--runs", o.runs_text, 1, 1'000'000'000)};
  const std::uint64_t jobs = parse_u64("--jobs", o.jobs_text, 1, 256);
  for (const std::string& n : o.only) {
    if (!plant::by_name(n) || n == "none") {
      throw input_error("--only: expected the name of a planted bug (engine/plant.hpp), found '" +
                        printable(n, max_shown_chars) + "'");
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(o.library, ec)) {
    throw input_error(o.library + ": cannot list the directory: " + (ec ? ec.message() : "not a directory"));
  }
  std::vector<target> targets;
  for (std::size_t i = 1; i < std::size(plant::names); ++i) {
    const target t = target_of(static_cast<plant::bug>(i));
    if (o.only.empty() || std::find(o.only.begin(), o.only.end(), t.name) != o.only.end()) targets.push_back(t);
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("lockstep-selfcheck-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct remove_dir {
    std::filesystem::path p;
    ~remove_dir() {
      std::error_code ignored;
      std::filesystem::remove_all(p, ignored);
    }
  } cleanup{dir};

  std::cout << "selfcheck: " << targets.size() << " planted bugs, "
            << (o.runs_text.empty() ? "budget " + o.budget_text + " per search"
                                    : o.runs_text + " runs per simulated search, " + o.budget_text + " on threads")
            << ", --jobs " << jobs << ", library " << o.library << std::endl;
  std::vector<row> rows(targets.size());
  std::atomic<std::size_t> next{0};
  std::mutex print_mu;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < targets.size();) {
      row& r = rows[i];
      r.t = targets[i];
      const std::vector<subject> files = library_of(o.library, r.t);
      r.files = files.size();
      const plant::scope planted(r.t.bug);  // runs read it from their scenario too: the same bug
      r.library = library_search(files, sim_limit);
      r.generate = generate_search(r.t, sim_limit);
      const auto sub = dir / std::to_string(i);
      std::filesystem::create_directories(sub);
      r.threads = threads_search(files, self, sub.string(), budget_s);
      r.shrunk = shrunk_size(r.library.caught ? r.library : r.generate);
      const std::lock_guard hold(print_mu);
      std::cout << r.t.name << ": library " << (r.library.caught ? r.library.by : "not caught") << ", generate "
                << (r.generate.caught ? r.generate.by : "not caught") << ", threads "
                << (r.threads.caught ? r.threads.by : "not caught") << std::endl;
    }
  };
  std::vector<std::thread> pool;
  for (std::uint64_t j = 1; j < jobs; ++j) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  std::cout << "\n| planted bug | library files | library: caught by | runs | s | --generate: caught by | runs | s "
               "| threads: caught by | runs | s | first catch shrunk |\n"
               "|---|---:|---|---:|---:|---|---:|---:|---|---:|---:|---|\n";
  std::vector<std::string> holes;
  std::size_t by_library = 0, by_generate = 0, by_threads = 0, within_a_second = 0;
  for (const row& r : rows) {
    std::cout << "| `" << r.t.name << "` | " << r.files << " | " << cell(r.library) << " | " << cell(r.generate)
              << " | " << cell(r.threads) << " | " << r.shrunk << " |\n";
    by_library += r.library.caught ? 1 : 0;
    by_generate += r.generate.caught ? 1 : 0;
    by_threads += r.threads.caught ? 1 : 0;
    const bool caught = r.library.caught || r.generate.caught;
    if (!caught) holes.push_back(r.t.name);
    const double first = std::min(r.library.caught ? r.library.seconds : 1e9, r.generate.caught ? r.generate.seconds : 1e9);
    within_a_second += caught && first < 1.0 ? 1 : 0;
  }
  std::cout << "\n" << rows.size() << " planted bugs: " << by_library << " caught by the library, " << by_generate
            << " by --generate, " << rows.size() - holes.size() << " by one or the other (" << within_a_second
            << " within a second); the threads baseline caught " << by_threads << "\n";
  if (!holes.empty()) {
    std::cout << "not caught by the library or --generate within "
              << (o.runs_text.empty() ? o.budget_text : o.runs_text + " runs") << ":";
    for (const std::string& h : holes) std::cout << " " << h;
    std::cout << "\n";
  }
  std::cout.flush();
  return holes.empty() ? exit_held : exit_failed;
}

}  // namespace lockstep::cli
