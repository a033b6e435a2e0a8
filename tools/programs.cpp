#include "tools/programs.hpp"

#include <cstdlib>
#include <vector>

#include "tools/program_options.hpp"

namespace lockstep::cli {
namespace {

// pipeline: producers on every core send (producer, seq) through a bounded
// channel to one consumer, which checks per-producer FIFO order and counts.
// The canary variant counts with load + store from every core: a lost update
// that some schedules expose and the `count` oracle reports.
//
// fault=segv|abort|overflow plants a real crash of the process (not a failed run), at
// the consumer's k-th item with k drawn from the run's seeded randomness: it
// exists to test that a crash still reports the seed and the rerun command.
// Deep enough to run off any fiber stack into its guard page; the bound only
// keeps the compiler from calling it infinite recursion.
[[gnu::noinline]] std::uint64_t descend(std::uint64_t depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == UINT64_MAX) return 0;
  return descend(depth + 1) + static_cast<std::uint64_t>(frame[0]);
}

// no_sanitize: UBSan would stop at the null store first, and gcc's UBSan
// runtime does not run ASan's death callback (the crash report), while a real
// SIGSEGV goes through ASan's handler, which does.
[[noreturn]] __attribute__((no_sanitize("undefined"))) void crash(const std::string& fault) {
  if (fault == "abort") std::abort();
  if (fault == "overflow") (void)descend(0);
  // Both volatile: the compiler may neither assume the pointer is null nor
  // drop the store before abort(), so the kernel answers it with SIGSEGV.
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
  std::abort();  // not reached
}

program pipeline() {
  program p;
  p.description =
      "producers on every simulated core feed a bounded channel; oracles: per-producer order, "
      "exact count (option canary=true plants a lost-update race; fault=segv|abort|overflow crashes the "
      "process on purpose, to test the crash report)";
  p.normalise = [](const json_reader& r) {
    const nlohmann::json& given = options_object(r);
    reject_unknown_options(r, given, {"producers", "items", "capacity", "canary", "fault"});
    nlohmann::json o;
    o["producers"] = option_u64(r, given, "producers", 3, 1, 64);
    o["items"] = option_u64(r, given, "items", 20, 1, 100000);
    o["capacity"] = option_u64(r, given, "capacity", 4, 1, 1 << 20);
    o["canary"] = option_bool(r, given, "canary", false);
    o["fault"] = "none";
    if (given.contains("fault")) {
      const auto& f = given["fault"];
      if (!f.is_string() || (f != "none" && f != "segv" && f != "abort" && f != "overflow")) {
        r.fail("/fault", "one of \"none\", \"segv\", \"abort\", \"overflow\", found " + shown(f));
      }
      o["fault"] = f;
    }
    return o;
  };
  p.run = [](sim::runtime& rt, const nlohmann::json& o) {
    const auto producers = o["producers"].get<std::uint32_t>();
    const auto items = o["items"].get<std::uint32_t>();
    const bool canary = o["canary"].get<bool>();
    const std::string fault = o.value("fault", "none");
    // Drawn only with a fault, so runs without one keep their schedules.
    const std::uint64_t crash_after = fault == "none" ? 0 : 1 + rt.random() % (std::uint64_t{producers} * items);
    // Not a structured binding: clang 14 cannot capture those in lambdas.
    auto channel = sim::channel<std::pair<std::uint32_t, std::uint32_t>>::bounded(rt, o["capacity"].get<std::size_t>());
    auto& tx = channel.first;
    auto& rx = channel.second;
    sim::atomic<std::uint64_t> sent(rt, 0);
    std::vector<sim::task> tasks;
    for (std::uint32_t who = 0; who < producers; ++who) {
      tasks.push_back(rt.spawn_on(who % rt.cores(), "producer-" + std::to_string(who),
                                  [&rt, &sent, canary, items, who, tx]() mutable {
                                    for (std::uint32_t seq = 0; seq < items; ++seq) {
                                      tx.send({who, seq});
                                      if (canary) {
                                        const std::uint64_t seen = sent.load();
                                        sent.store(seen + 1);  // not atomic as a whole: the planted race
                                      } else {
                                        sent.fetch_add(1);
                                      }
                                      if (seq % 7 == 0) rt.sleep_for(1000);
                                    }
                                  }));
    }
    tx.reset();  // only the producers hold senders now: the consumer ends when they do
    auto consumer = rt.spawn_on(0, "consumer", [&, producers, items, crash_after] {
      std::vector<std::int64_t> last(producers, -1);
      std::uint64_t received = 0;
      while (auto item = rx.recv()) {
        const auto [who, seq] = *item;
        sim::check(static_cast<std::int64_t>(seq) == last[who] + 1, "per-producer order",
                   "producer " + std::to_string(who) + " sent " + std::to_string(seq) + " after " +
                       std::to_string(last[who]));
        last[who] = seq;
        ++received;
        if (received == crash_after) crash(fault);
      }
      sim::check(received == std::uint64_t{producers} * items, "every item received",
                 std::to_string(received) + " of " + std::to_string(std::uint64_t{producers} * items));
    });
    for (auto& t : tasks) t.join();
    consumer.join();
    const std::uint64_t counted = sent.load();
    sim::check(counted == std::uint64_t{producers} * items, "count",
               "producers sent " + std::to_string(std::uint64_t{producers} * items) +
                   " items but the shared counter says " + std::to_string(counted));
  };
  return p;
}

}  // namespace

const std::map<std::string, program>& programs() {
  static const std::map<std::string, program> all = {{"grommet", grommet_program()},
                                                      {"pipeline", pipeline()},
                                                      {"probation", probation_program()},
                                                      {"velo", velo_program()}};
  return all;
}

}  // namespace lockstep::cli
