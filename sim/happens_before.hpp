// Happens-before for the race detector: a vector clock per fiber and per
// synchronising object, as in FastTrack (Flanagan & Freund, PLDI 2009), with
// the C++ rules for what synchronises (release/acquire on atomics, release
// sequences of read-modify-writes, fences, mutexes, thread start and join).
//
// Off until a program first creates a lockstep::var (nothing else reads the
// clocks), so runs that check no plain memory pay one branch per operation.
// Turning it on part-way through a run is sound: every access to a var comes
// after the var's creation, so every ordering that can matter between two
// of them is made after the clocks started.
//
// Keys name what a release publishes into: an object's id, an atomic's key,
// a fiber's end (executor::fiber_key). The clocks live in an unordered map
// that is never iterated: nothing here reaches a trace or a decision.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace lockstep::sim {

class happens_before {
 public:
  using fiber_id = std::uint32_t;
  using vector_clock = std::vector<std::uint32_t>;

  /// A point in one fiber's history: its `time`-th interval between releases.
  struct epoch {
    fiber_id fiber;
    std::uint32_t time;
  };

  /// Forgets every clock (a new run).
  void clear();

  /// The epoch `t` is in now.
  [[nodiscard]] epoch now(fiber_id t);
  /// Whatever happened at `e` happens before `t`'s next step.
  [[nodiscard]] bool ordered_before(epoch e, fiber_id t) const;

  /// `child` starts after everything its parent did so far (no parent: the
  /// run's main fiber, or a fiber the scheduler starts).
  void spawned(fiber_id parent, fiber_id child);
  /// `to` goes on after everything `from` did so far (a runtime primitive's
  /// wake-up: tokio's channels and notify order the woken task after the waker).
  void transfer(fiber_id from, fiber_id to);

  /// t reads what was published under `key` (an acquire).
  void acquire(fiber_id t, std::uint64_t key);
  /// t publishes everything it did under `key`, replacing what was there
  /// (an unlock; a release store starts a new release sequence).
  void release(fiber_id t, std::uint64_t key);
  /// t adds everything it did to what `key` holds (a release read-modify-
  /// write continues the release sequence; a semaphore's count gathers
  /// every releaser).
  void release_merge(fiber_id t, std::uint64_t key);
  /// Both, for the runtime API's primitives, which do not say which they are.
  void acquire_release(fiber_id t, std::uint64_t key) {
    acquire(t, key);
    release_merge(t, key);
  }

  // Relaxed operations order nothing by themselves, but fences make them:
  // an acquire fence orders t after the releases its earlier relaxed loads
  // read from; a release fence makes t's later relaxed stores publish what t
  // did before the fence (C++20 [atomics.fences]).
  /// A relaxed load of `key`: what it read from waits for t's acquire fence.
  void relaxed_load(fiber_id t, std::uint64_t key);
  /// A relaxed store to `key`: ends the release sequence there; publishes
  /// what t's last release fence covered.
  void relaxed_store(fiber_id t, std::uint64_t key);
  /// A relaxed read-modify-write: continues the release sequence, adding
  /// what t's last release fence covered.
  void relaxed_modify(fiber_id t, std::uint64_t key);
  void acquire_fence(fiber_id t);
  void release_fence(fiber_id t);

  // For the memory model (memory_model.hpp), which keeps a clock per store
  // instead of one per atomic.
  /// What `t` has seen.
  [[nodiscard]] const vector_clock& clock(fiber_id t) { return of(t).now; }
  /// What `t`'s last release fence covered (what its relaxed stores publish).
  [[nodiscard]] const vector_clock& fenced(fiber_id t) { return of(t).fenced; }
  /// `t` acquires `c` (an acquire load of a store that published it).
  void acquire_clock(fiber_id t, const vector_clock& c) { join(of(t).now, c); }
  /// `t` read a store that published `c` without acquiring: its next acquire fence will.
  void pend(fiber_id t, const vector_clock& c) { join(of(t).pending, c); }
  /// `t` releases: its clock as it is, after which its epoch moves on.
  [[nodiscard]] vector_clock release_clock(fiber_id t) {
    vector_clock c = of(t).now;
    tick(t);
    return c;
  }
  /// What was published under `key` (null: nothing).
  [[nodiscard]] const vector_clock* published(std::uint64_t key) const {
    const auto it = published_.find(key);
    return it == published_.end() ? nullptr : &it->second;
  }
  static void join(vector_clock& into, const vector_clock& from);

 private:
  struct fiber_clocks {
    vector_clock now;            // what t has seen (its own entry: its epoch)
    vector_clock fenced;         // now at t's last release fence
    vector_clock pending;        // what t's relaxed loads read, for an acquire fence
  };
  fiber_clocks& of(fiber_id t);
  void tick(fiber_id t) { ++of(t).now[t]; }

  std::vector<fiber_clocks> fibers_;  // [used_, size) are empty, kept for their capacity
  std::size_t used_ = 0;
  std::unordered_map<std::uint64_t, vector_clock> published_;
};

}  // namespace lockstep::sim
