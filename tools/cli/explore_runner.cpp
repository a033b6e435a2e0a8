#include "tools/cli/explore_runner.hpp"

#include <algorithm>
#include <system_error>

#include "tools/cli/report.hpp"
#include "tools/crash_report.hpp"
#include "tools/strict_json.hpp"

namespace lockstep::cli {
namespace {
// Seeds per chunk at most: a lock per chunk, not per run, and a stop still
// comes within one run (each run checks it). A small range takes smaller
// chunks, so that every job gets some: 16 seeds on 8 jobs were one chunk, one
// job. Outcomes are handed over in seed order whatever the chunks.
constexpr std::uint64_t max_chunk_seeds = 16;

std::uint64_t chunk_size_for(std::uint64_t last_position, unsigned jobs) {
  const std::uint64_t per_job = last_position / jobs + 1;  // at least ceil(positions / jobs), no overflow
  return std::clamp<std::uint64_t>(per_job, 1, max_chunk_seeds);
}
}  // namespace

explore_runner::explore_runner(const prepared& p, const run_options& o, seed_slice slice, unsigned jobs)
    : p_(p), o_(o), slice_(slice) {
  empty_ = slice_.empty();
  if (empty_) {
    exhausted_ = true;
    return;
  }
  chunk_seeds_ = chunk_size_for(slice_.last_position(), jobs);
  last_chunk_ = slice_.last_position() / chunk_seeds_;
  window_ = 4 * static_cast<std::uint64_t>(jobs);
  live_ = jobs;
  workers_.reserve(jobs);
  for (unsigned i = 0; i < jobs; ++i) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      // The system refused a thread (a memory or task limit): go on with the
      // ones it gave, since the outcomes are the same for any number of jobs.
      if (workers_.empty()) {
        throw input_error("--jobs " + std::to_string(jobs) + ": the system started no worker thread (" + e.what() + ")");
      }
      refused_ = e.what();
      std::lock_guard lock(m_);
      live_ -= jobs - i;
      produced_.notify_all();
      break;
    }
  }
}

explore_runner::~explore_runner() {
  stop();
  for (auto& t : workers_) t.join();
}

void explore_runner::stop() {
  std::lock_guard lock(m_);
  stopping_ = true;
  consumed_.notify_all();
}

seed_outcome explore_runner::run_seed(std::uint64_t seed) const {
  seed_outcome out;
  out.seed = seed;
  auto c = config_of(o_, seed, sim::trace_mode::hash);
  out.probed = c.strategy == "pct" && c.options.pct_steps == 0;
  // --generate: the seed's scenario, drawn once here and run as it is, on
  // its own cores unless --cores says otherwise.
  prepared drawn;
  if (!p_.generator.empty()) {
    drawn = for_seed(p_, seed);
    drawn.generator.clear();
    if (!o_.cores_given) c.cores = drawn.scen->cores;
  }
  const prepared& p = p_.generator.empty() ? p_ : drawn;
  c = describe_and_size(p, c);
  auto r = run_once(p, c);
  crash_report::clear();
  out.trace_hash = r.trace_hash;
  out.schedule_hash = schedule_hash_of(r);
  out.probe_hits = r.probe_hits;
  out.probe_orders = r.probe_orders;
  if (!r.ok()) out.failure = std::make_unique<failed_run>(failed_run{std::move(c), std::move(r)});
  return out;
}

void explore_runner::work() {
  crash_report::install_thread();
  try {
    for (;;) {
      std::uint64_t c = 0;
      {
        std::unique_lock lock(m_);
        consumed_.wait(lock, [&] {
          return stopping_ || next_chunk_ > last_chunk_ || next_chunk_ < consume_chunk_ + window_;
        });
        if (stopping_ || next_chunk_ > last_chunk_) break;
        c = next_chunk_++;
      }
      chunk result;
      const std::uint64_t begin = c * chunk_seeds_;
      const std::uint64_t end = std::min(slice_.last_position() - begin, chunk_seeds_ - 1) + begin;  // inclusive
      for (std::uint64_t pos = begin;; ++pos) {
        if (stopping_.load(std::memory_order_relaxed)) {
          result.partial = true;
          break;
        }
        result.outcomes.push_back(run_seed(slice_.seed_at(pos)));
        if (pos == end) break;
      }
      std::lock_guard lock(m_);
      done_.emplace(c, std::move(result));
      produced_.notify_all();
    }
  } catch (...) {
    std::lock_guard lock(m_);
    if (!error_) error_ = std::current_exception();
    stopping_ = true;
    consumed_.notify_all();
  }
  std::lock_guard lock(m_);
  --live_;
  produced_.notify_all();
}

explore_runner::poll explore_runner::next(seed_outcome& out, std::chrono::milliseconds wait) {
  if (empty_ || exhausted_) return poll::end;
  std::unique_lock lock(m_);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (error_) std::rethrow_exception(error_);
    auto it = done_.find(consume_chunk_);
    if (it != done_.end()) {
      chunk& ch = it->second;
      if (consume_pos_ < ch.outcomes.size()) {
        out = std::move(ch.outcomes[consume_pos_++]);
        if (!ch.partial && consume_pos_ == ch.outcomes.size() && consume_chunk_ == last_chunk_) exhausted_ = true;
        return poll::outcome;
      }
      if (ch.partial || consume_chunk_ == last_chunk_) return poll::end;
      done_.erase(it);
      ++consume_chunk_;
      consume_pos_ = 0;
      consumed_.notify_all();
      continue;
    }
    // The chunk is not done and no worker is left to do it: stopped.
    if (live_ == 0) return poll::end;
    if (produced_.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (done_.find(consume_chunk_) == done_.end()) return poll::timeout;
    }
  }
}

}  // namespace lockstep::cli
