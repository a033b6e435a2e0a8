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

// More jobs than the machine has hardware threads: one seed a chunk. A stop
// keeps only the finished prefix, which ends at the first chunk cut short;
// with a thousand workers sharing two cores every chunk was in flight at
// once, so 16-seed chunks kept 31 runs of a second's 20,000 at --jobs 1024.
// With one seed a chunk every run in flight finishes and is kept.
//
// And only one worker per hardware thread runs, the others waiting for its
// permit (work(), below): the kernel would time-slice them in the middle of
// runs; the outcomes are the same with fewer switches, and a stop then
// waits for a few runs, not for every job's.
std::uint64_t chunk_size_for(std::uint64_t last_position, unsigned jobs, unsigned hardware) {
  if (jobs > hardware) return 1;
  const std::uint64_t per_job = last_position / jobs + 1;  // at least ceil(positions / jobs), no overflow
  return std::clamp<std::uint64_t>(per_job, 1, max_chunk_seeds);
}
/// A run permit held for a scope (none to take: a no-op).
class permit {
 public:
  explicit permit(explore_runner::run_permits* s) : s_(s) {
    if (s_ != nullptr) s_->acquire();
  }
  ~permit() {
    if (s_ != nullptr) s_->release();
  }
  permit(const permit&) = delete;
  permit& operator=(const permit&) = delete;

 private:
  explore_runner::run_permits* s_;
};
}  // namespace

explore_runner::explore_runner(std::vector<explore_target> targets, unsigned jobs, stop_check should_stop)
    : should_stop_(std::move(should_stop)) {
  // The machine's hardware threads (1 where the library cannot tell).
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  for (const explore_target& t : targets) {
    auto s = std::make_unique<target_state>();
    s->t = t;
    if (t.slice.empty()) {
      s->exhausted = true;
    } else {
      s->chunk_seeds = chunk_size_for(t.slice.last_position(), jobs, hardware);
      s->chunks = t.slice.last_position() / s->chunk_seeds + 1;  // an open range's stays below 2^60
    }
    targets_.push_back(std::move(s));
  }
  skip_finished_targets();
  if (take_target_ >= targets_.size()) return;  // nothing to run
  window_ = 4 * static_cast<std::uint64_t>(jobs);
  if (jobs > hardware) {
    run_permits_ = std::make_unique<run_permits>(hardware);
  }
  live_ = jobs;
  workers_.reserve(jobs);
  for (unsigned i = 0; i < jobs; ++i) {
    try {
      workers_.emplace_back([this, i] { work(i); });
    } catch (const std::system_error& e) {
      // The system refused a thread (a memory or task limit): go on with
      // fewer, since the outcomes are the same for any number of jobs. Not
      // with all it gave: at the limit there is no room left for the runs'
      // own fiber stacks (each worker maps a slab of them at its first run;
      // at 183 workers a run failed resource_exhausted, or the explore ran
      // out of memory), so at most three in four go on, and no more than
      // the machine has hardware threads; the others end and give theirs back.
      if (workers_.empty()) {
        throw input_error("--jobs " + std::to_string(jobs) + ": the system started no worker thread (" + e.what() + ")");
      }
      refused_ = e.what();
      started_ = i;
      {
        std::lock_guard lock(m_);
        allowed_ = std::max(1U, std::min(i - i / 4, hardware));
        live_ -= jobs - i;
        consumed_.notify_all();
        produced_.notify_all();
      }
      // Joined now: an ended thread's stack is only given back when joined.
      for (std::size_t w = allowed_; w < workers_.size(); ++w) workers_[w].join();
      workers_.resize(allowed_);
      break;
    }
  }
  // No run before every thread is started (or refused and the extra ones
  // joined): a run under way while threads fill the address space found no
  // room for its fiber stacks.
  std::lock_guard lock(m_);
  gate_open_ = true;
  consumed_.notify_all();
}

void explore_runner::run_permits::acquire() {
  std::unique_lock lock(m_);
  freed_.wait(lock, [&] { return free_ > 0 || open_all_; });
  --free_;  // may go below 0 once open: only the count of runs in flight then
}

void explore_runner::run_permits::release() {
  {
    std::lock_guard lock(m_);
    ++free_;
  }
  freed_.notify_one();  // one waiter: a thousand workers may wait here
}

void explore_runner::run_permits::open_all() {
  {
    std::lock_guard lock(m_);
    open_all_ = true;
  }
  freed_.notify_all();
}

explore_runner::~explore_runner() {
  request_stop("");
  for (auto& t : workers_) t.join();
}

void explore_runner::skip_finished_targets() {
  while (take_target_ < targets_.size() &&
         (take_chunk_ >= targets_[take_target_]->chunks || targets_[take_target_]->dropped.load())) {
    ++take_target_;
    take_chunk_ = 0;
  }
}

void explore_runner::request_stop(const std::string& reason) {
  // The reason before the flag, so that whoever sees the flag's effects sees
  // the reason; under its own lock, never held across anything else.
  {
    std::lock_guard reason_lock(reason_m_);
    if (stop_reason_.empty()) stop_reason_ = reason;
  }
  // The flag without m_: a worker holding m_ may have been preempted (a
  // thousand workers on two cores), and the runs must stop on time all the same.
  stopping_.store(true);
  // Every worker waiting for a permit goes at once, sees the stop and ends.
  if (run_permits_) run_permits_->open_all();
  std::lock_guard lock(m_);
  consumed_.notify_all();
  produced_.notify_all();
}

void explore_runner::stop(const std::string& reason) { request_stop(reason); }

bool explore_runner::poll_stop() {
  if (!stopping_.load() && should_stop_) {
    const std::string why = should_stop_();
    if (!why.empty()) request_stop(why);
  }
  return stopping_.load();
}

std::string explore_runner::stop_reason() const {
  std::lock_guard lock(reason_m_);
  return stop_reason_;
}

bool explore_runner::exhausted() const {
  std::lock_guard lock(m_);
  return current_ < targets_.size() && targets_[current_]->exhausted;
}

seed_outcome explore_runner::run_seed(const explore_target& t, std::uint64_t seed) const {
  seed_outcome out;
  out.seed = seed;
  auto c = config_of(*t.o, seed, sim::trace_mode::hash);
  out.probed = sim::needs_sizing_run(c.strategy, c.options);
  // --generate: the seed's scenario, drawn once here and run as it is, on
  // its own cores unless --cores says otherwise.
  prepared drawn;
  if (!t.p->generator.empty()) {
    drawn = for_seed(*t.p, seed);
    drawn.generator.clear();
    if (!t.o->cores_given) c.cores = drawn.scen->cores;
  }
  const prepared& p = t.p->generator.empty() ? *t.p : drawn;
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

void explore_runner::work(unsigned index) {
  crash_report::install_thread();
  try {
    {
      // Until every thread is started (the constructor), holding no permit:
      // one let go after a refused thread ends here.
      std::unique_lock lock(m_);
      consumed_.wait(lock, [&] { return stopping_ || index >= allowed_ || gate_open_; });
    }
    // Oversubscribed: a permit before any chunk is taken, held to the end,
    // so that one worker per hardware thread runs and the others wait (the
    // kernel would time-slice them mid-run). The seeds taken are the seeds
    // running, so a stop waits for a few runs, not one per job (1,024 runs
    // on two cores took 40 ms to finish); and the waiting ones never build
    // an executor or map fiber stacks. A permit handed on per run instead
    // cost a thread switch per run.
    permit held(index < allowed_.load() ? run_permits_.get() : nullptr);
    for (;;) {
      if (index >= allowed_.load()) break;  // let go after a refused thread (constructor)
      std::size_t at_target = 0;
      std::uint64_t at_chunk = 0;
      {
        std::unique_lock lock(m_);
        consumed_.wait(lock, [&] {
          skip_finished_targets();
          return stopping_ || take_target_ >= targets_.size() || index >= allowed_ || outstanding_ < window_;
        });
        if (stopping_ || take_target_ >= targets_.size() || index >= allowed_) break;
        at_target = take_target_;
        at_chunk = take_chunk_++;
        ++outstanding_;
        skip_finished_targets();
      }
      target_state& ts = *targets_[at_target];
      chunk result;
      const std::uint64_t begin = at_chunk * ts.chunk_seeds;
      const std::uint64_t end =
          std::min(ts.t.slice.last_position() - begin, ts.chunk_seeds - 1) + begin;  // inclusive
      for (std::uint64_t pos = begin;; ++pos) {
        if (!stopping_.load(std::memory_order_relaxed) && should_stop_) {
          const std::string why = should_stop_();
          if (!why.empty()) request_stop(why);
        }
        if (stopping_.load(std::memory_order_relaxed) || ts.dropped.load(std::memory_order_relaxed)) {
          result.partial = true;
          break;
        }
        result.outcomes.push_back(run_seed(ts.t, ts.t.slice.seed_at(pos)));
        if (pos == end) break;
      }
      std::lock_guard lock(m_);
      if (at_target < current_) {
        --outstanding_;  // a target the caller has left: nobody will read it
        consumed_.notify_one();
      } else {
        done_.emplace(std::pair{at_target, at_chunk}, std::move(result));
      }
      produced_.notify_all();
    }
  } catch (...) {
    stopping_.store(true);
    if (run_permits_) run_permits_->open_all();
    std::lock_guard lock(m_);
    if (!error_) error_ = std::current_exception();
    consumed_.notify_all();
  }
  std::lock_guard lock(m_);
  --live_;
  produced_.notify_all();
}

explore_runner::poll explore_runner::next(seed_outcome& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(m_);
  if (current_ >= targets_.size()) return poll::end;
  target_state& ts = *targets_[current_];
  if (ts.exhausted || ts.ended) return poll::end;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (error_) std::rethrow_exception(error_);
    auto it = done_.find(std::pair{current_, consume_chunk_});
    if (it != done_.end()) {
      chunk& ch = it->second;
      const bool last = consume_chunk_ + 1 == ts.chunks;
      if (consume_pos_ < ch.outcomes.size()) {
        out = std::move(ch.outcomes[consume_pos_++]);
        if (!ch.partial && consume_pos_ == ch.outcomes.size() && last) ts.exhausted = true;
        return poll::outcome;
      }
      if (ch.partial || last) {
        ts.ended = true;
        return poll::end;
      }
      done_.erase(it);
      --outstanding_;
      ++consume_chunk_;
      consume_pos_ = 0;
      consumed_.notify_one();
      continue;
    }
    // The chunk is not done and no worker is left to do it (stopped), or the
    // caller dropped this target: its prefix is all there is.
    if (live_ == 0 || ts.dropped.load()) {
      ts.ended = true;
      return poll::end;
    }
    if (produced_.wait_until(lock, deadline) == std::cv_status::timeout) {
      if (done_.find(std::pair{current_, consume_chunk_}) == done_.end()) return poll::timeout;
    }
  }
}

void explore_runner::drop_target() {
  std::lock_guard lock(m_);
  if (current_ >= targets_.size()) return;
  targets_[current_]->dropped.store(true);
  skip_finished_targets();
  consumed_.notify_all();
}

bool explore_runner::next_target() {
  std::lock_guard lock(m_);
  if (current_ >= targets_.size()) return false;
  targets_[current_]->dropped.store(true);  // whatever of it is left is not run
  for (auto it = done_.begin(); it != done_.end() && it->first.first == current_;) {
    it = done_.erase(it);
    --outstanding_;
  }
  ++current_;
  consume_chunk_ = 0;
  consume_pos_ = 0;
  skip_finished_targets();
  consumed_.notify_all();
  return current_ < targets_.size();
}

}  // namespace lockstep::cli
