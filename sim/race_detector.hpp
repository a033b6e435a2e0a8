// The data-race detector's record of one plain memory location (what a
// lockstep::var<T> holds): its last write and the reads since then that no
// later read covers, each with the fiber's epoch and the program's line.
// FastTrack's rules (Flanagan & Freund, PLDI 2009): an access races with an
// earlier one of another fiber when the happens-before clocks do not order
// them and at least one of the two writes. Reads that happen before a later
// read of the same location are dropped (a write racing with them races with
// the later read too), so most locations hold one read, as FastTrack's
// read epochs do, and a vector only while reads are concurrent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "code_site.hpp"
#include "happens_before.hpp"

namespace lockstep::sim {

class executor;

class shadow_cell {
 public:
  /// A location created (and so written) by the running fiber at `created`;
  /// `name` the program's, or empty.
  shadow_cell(executor& ex, code_site created, std::string name);
  shadow_cell(const shadow_cell&) = delete;
  shadow_cell& operator=(const shadow_cell&) = delete;

  /// Call before the access; each is a scheduling point. A race fails the
  /// run (failure_kind::data_race) and stops the calling fiber there.
  void read(code_site where);
  void write(code_site where);

 private:
  struct access {
    happens_before::epoch when;
    code_site where;
  };
  void enter(const char* op, code_site where);
  [[gnu::cold]] void report(const access& earlier, bool earlier_wrote, bool now_writes, code_site where);
  [[nodiscard]] std::string label() const;

  executor* ex_;
  std::uint64_t id_;
  code_site created_;
  code_site first_use_{nullptr, 0};  ///< the first read or write's line (label(), for a var made by a container)
  std::string name_;
  access write_;
  std::vector<access> reads_;
};

}  // namespace lockstep::sim
