// Properties of the simulator over generated programs: whatever the program,
// seed, strategy and core count, (1) the same inputs give the same trace
// bytes, (2) replaying the recorded decisions gives the same bytes again,
// (3) the executor's invariants hold at every operation, and (4) atomic
// read-modify-writes never lose an update under any schedule.
#include <rapidcheck.h>

#include <cstdio>
#include <string>
#include <vector>

#include "sim/runtime.hpp"

using namespace lockstep::sim;

namespace {

// One operation of a generated fiber. None of them can deadlock: every wait
// has a deadline or is a critical section that always ends.
enum class op : std::uint8_t { add, locked_add, yield, sleep, notify, wait_notify, send, recv };

struct fiber_spec {
  std::uint32_t core;
  std::vector<op> ops;
};

struct program_spec {
  std::uint32_t cores;
  std::vector<fiber_spec> fibers;
};

std::string describe(const program_spec& p) {
  std::string s = "cores=" + std::to_string(p.cores) + " fibers:";
  for (const auto& f : p.fibers) {
    s += " [core " + std::to_string(f.core) + ":";
    for (op o : f.ops) s += " " + std::to_string(static_cast<int>(o));
    s += "]";
  }
  return s;
}

rc::Gen<program_spec> gen_program() {
  return rc::gen::mapcat(rc::gen::inRange<std::uint32_t>(1, 4), [](std::uint32_t cores) {
    auto gen_fiber = rc::gen::build<fiber_spec>(
        rc::gen::set(&fiber_spec::core, rc::gen::inRange<std::uint32_t>(0, cores)),
        rc::gen::set(&fiber_spec::ops,
                     rc::gen::container<std::vector<op>>(rc::gen::element(
                         op::add, op::locked_add, op::yield, op::sleep, op::notify, op::wait_notify,
                         op::send, op::recv))));
    return rc::gen::build<program_spec>(
        rc::gen::set(&program_spec::cores, rc::gen::just(cores)),
        rc::gen::set(&program_spec::fibers, rc::gen::resize(6, rc::gen::nonEmpty(rc::gen::container<std::vector<fiber_spec>>(gen_fiber)))));
  });
}

struct outcome {
  run_result result;
  std::uint64_t adds_expected = 0;
  std::uint64_t adds_seen = 0;
};

outcome execute(const program_spec& p, run_config cfg) {
  cfg.cores = p.cores;
  outcome out;
  for (const auto& f : p.fibers)
    for (op o : f.ops) out.adds_expected += (o == op::add || o == op::locked_add) ? 1 : 0;
  out.result = run(cfg, [&](runtime& rt) {
    atomic<std::uint64_t> total(rt, 0);
    mutex m(rt);
    notify n(rt);
    auto ch = channel<int>::unbounded(rt);
    std::vector<task> tasks;
    for (const auto& f : p.fibers) {
      tasks.push_back(rt.spawn_on(f.core, "gen", [&, &ops = f.ops] {
        for (op o : ops) {
          rt.exec().check_invariants();
          switch (o) {
            case op::add: total.fetch_add(1); break;
            case op::locked_add: {
              std::lock_guard g(m);
              total.fetch_add(1);
              break;
            }
            case op::yield: rt.yield_now(); break;
            case op::sleep: rt.sleep_for(static_cast<std::int64_t>(rt.random() % 50)); break;
            case op::notify: n.notify_one(); break;
            case op::wait_notify: n.notified_until(rt.now() + 20); break;
            case op::send: ch.first.send(1); break;
            case op::recv: ch.second.recv_until(rt.now() + 10); break;
          }
        }
      }));
    }
    for (auto& t : tasks) t.join();
    out.adds_seen = total.load();
  });
  return out;
}

}  // namespace

int main() {
  int passed = 0;
  int failed = 0;
  auto tally = [&](bool ok) { (ok ? passed : failed) += 1; };
  tally(rc::check("same inputs give the same trace bytes; replay reproduces them", [] {
    const program_spec p = *gen_program();
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    const auto strategy = *rc::gen::element<std::string>("random", "pct", "fifo");
    RC_TAG(strategy);
    run_config cfg;
    cfg.seed = seed;
    cfg.strategy = strategy;
    const outcome a = execute(p, cfg);
    RC_LOG() << "lockstep seed=" << seed << " strategy=" << strategy << " " << describe(p) << "\n";
    RC_ASSERT(a.result.ok());
    const outcome b = execute(p, cfg);
    RC_ASSERT(a.result.trace_hash == b.result.trace_hash);
    RC_ASSERT(a.result.decisions == b.result.decisions);
    run_config replay = cfg;
    replay.strategy = "replay";
    replay.options.decisions = a.result.decisions;
    const outcome c = execute(p, replay);
    RC_ASSERT(c.result.ok());
    RC_ASSERT(c.result.trace_hash == a.result.trace_hash);
  }));
  tally(rc::check("atomic read-modify-writes never lose an update", [] {
    const program_spec p = *gen_program();
    run_config cfg;
    cfg.seed = *rc::gen::arbitrary<std::uint64_t>();
    cfg.strategy = *rc::gen::element<std::string>("random", "pct");
    cfg.trace = trace_mode::off;
    const outcome a = execute(p, cfg);
    RC_LOG() << "lockstep seed=" << cfg.seed << " strategy=" << cfg.strategy << " " << describe(p) << "\n";
    RC_ASSERT(a.result.ok());
    RC_ASSERT(a.adds_seen == a.adds_expected);
  }));
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
