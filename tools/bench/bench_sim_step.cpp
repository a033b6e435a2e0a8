// ns per simulator scheduling step, beside a raw Boost.Context resume round
// trip measured in the same binary, so the ratio survives this VM's slow
// phases. A step here is: a fiber yields, the executor picks the next fiber
// with the seeded random strategy and resumes it.
//
// Variants: recording off (the floor), + decision list, + trace hashed,
// + trace kept. References: the round trip between two contexts, and one
// over a ring of 1,024 contexts (a step at 1,024 fibers cannot stay in L1).
// Results and the command: results/bench_sim_step.md.
#include <benchmark/benchmark.h>

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <vector>

#include "sim/runtime.hpp"

namespace ctx = boost::context;
using namespace lockstep::sim;

// One iteration = resume the fiber and come back: two switches.
static void BM_raw_context_round_trip(benchmark::State& state) {
  bool stop = false;
  ctx::fiber f{[&stop](ctx::fiber&& main) {
    while (!stop) main = std::move(main).resume();
    return std::move(main);
  }};
  for (auto _ : state) f = std::move(f).resume();
  stop = true;
  f = std::move(f).resume();
}
BENCHMARK(BM_raw_context_round_trip);

// The same round trip over many contexts, resumed one after another: the
// second reference for a step at 1,024 fibers, whose working set (stacks,
// records) no longer fits in L1 as the two-context round trip's does. The
// stacks come from the simulator's own pool (same size, guard pages and
// colouring as sim fibers), and each fiber writes a local on its stack
// every time it runs, as a sim fiber's yield loop does.
static void BM_raw_context_ring(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  stack_pool pool(64 * 1024);
  std::vector<boost::context::stack_context> stacks(n);
  std::vector<ctx::fiber> ring;
  ring.reserve(n);
  bool stop = false;
  for (std::size_t i = 0; i < n; ++i) {
    ring.emplace_back(std::allocator_arg, pooled_stack_allocator{&pool, &stacks[i]},
                      [&stop](ctx::fiber&& main) {
                        volatile std::uint64_t touched = 0;
                        while (!stop) {
                          touched = touched + 1;
                          main = std::move(main).resume();
                        }
                        return std::move(main);
                      });
  }
  for (auto& f : ring) f = std::move(f).resume();  // every fiber into its loop before timing
  std::size_t next = 0;
  for (auto _ : state) {
    ring[next] = std::move(ring[next]).resume();
    if (++next == n) next = 0;
  }
  stop = true;
  for (auto& f : ring) f = std::move(f).resume();
}
BENCHMARK(BM_raw_context_ring)->ArgName("contexts")->Arg(1024);

// The ring again, closer to what a simulator step touches: the next context
// is drawn at random (the simulator's own seeded generator; no prefetcher
// can follow), its 64-byte record (a sim fiber's hot line) is read and
// written, and the fiber reads and writes one cache line of its own frame
// (a sim fiber's yield loop reads its closure there). No scheduler logic:
// the cost of bringing one fiber's record, saved registers and frame line
// into L1 on each step. (Each further line a fiber touches costs more: 8
// bytes of frame gave 9.6 ns, 64 gave 12.4, 192 gave 23.7 on 2026-12-02.)
static void BM_raw_context_random_ring(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  stack_pool pool(64 * 1024);
  std::vector<boost::context::stack_context> stacks(n);
  struct alignas(64) record {
    ctx::fiber cont;
    std::uint64_t runs = 0;
  };
  std::vector<record> ring(n);
  bool stop = false;
  for (std::size_t i = 0; i < n; ++i) {
    ring[i].cont = ctx::fiber(std::allocator_arg, pooled_stack_allocator{&pool, &stacks[i]},
                              [&stop](ctx::fiber&& main) {
                                volatile std::uint64_t frame[8] = {};
                                while (!stop) {
                                  for (auto& word : frame) word = word + 1;
                                  main = std::move(main).resume();
                                }
                                return std::move(main);
                              });
  }
  for (auto& r : ring) r.cont = std::move(r.cont).resume();
  prng draw(42);  // the simulator's own generator and range reduction
  for (auto _ : state) {
    record& r = ring[static_cast<std::size_t>(draw.below(n))];
    ++r.runs;
    r.cont = std::move(r.cont).resume();
  }
  stop = true;
  for (auto& r : ring) r.cont = std::move(r.cont).resume();
}
BENCHMARK(BM_raw_context_random_ring)->ArgName("contexts")->Arg(1024);

enum recording : int { off = 0, decisions = 1, hashed = 2, full = 3 };

// The benchmark loop runs inside the main fiber: every iteration the main
// fiber yields once, and the executor runs however many steps the random
// strategy takes to come back to it. ns_per_step divides the loop's time by
// the steps the executor actually took.
static void BM_sim_step(benchmark::State& state) {
  const auto fibers = static_cast<int>(state.range(0));
  const auto mode = static_cast<recording>(state.range(1));
  run_config cfg;
  cfg.seed = 42;
  cfg.strategy = "random";
  cfg.record_decisions = mode >= decisions;
  cfg.trace = mode == off || mode == decisions ? trace_mode::off
              : mode == hashed                 ? trace_mode::hash
                                               : trace_mode::full;
  cfg.max_steps = ~0ULL;
  cfg.stack_bytes = 64 * 1024;
  std::uint64_t steps = 0;
  auto result = run(cfg, [&](runtime& rt) {
    bool stop = false;
    std::vector<task> workers;
    for (int i = 0; i + 1 < fibers; ++i) {
      workers.push_back(rt.spawn("worker", [&] {
        while (!stop) rt.yield_now();
      }));
    }
    rt.yield_now();  // let every worker reach its loop before timing
    const std::uint64_t before = rt.exec().steps();
    for (auto _ : state) rt.yield_now();
    steps = rt.exec().steps() - before;
    stop = true;
    for (auto& w : workers) w.join();
  });
  if (!result.ok()) state.SkipWithError(result.failed->message.c_str());
  state.counters["steps_per_iter"] = benchmark::Counter(static_cast<double>(steps) / static_cast<double>(state.iterations()));
  state.counters["ns_per_step"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_sim_step)
    ->ArgNames({"fibers", "recording"})
    ->ArgsProduct({{2, 64, 1024}, {off}})
    ->ArgsProduct({{64}, {decisions, hashed, full}});

BENCHMARK_MAIN();
