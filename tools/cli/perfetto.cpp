#include "tools/cli/perfetto.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <vector>

#include "sim/trace.hpp"
#include "tools/cli/explore_summary.hpp"

namespace lockstep::cli {
namespace {

constexpr int fiber_pid = 1;
constexpr int key_pid = 2;

// The format wants microseconds; the clock is in nanoseconds. Written as an
// exact decimal (never through a double's formatting), so the bytes are the
// same everywhere.
std::string micros(std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t v = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  std::string frac = std::to_string(v % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return (negative ? "-" : "") + std::to_string(v / 1000) + "." + frac;
}

std::string dump(const nlohmann::json& j) {
  // replace: a name with bytes that are not UTF-8 must not lose the export.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct event {
  std::string name;
  std::string cat;
  char ph = 'i';
  std::int64_t ts = 0;
  std::int64_t dur = 0;  // X only
  int pid = fiber_pid;
  std::uint64_t tid = 0;
  char scope = 't';  // i only: t(hread) or g(lobal)
  nlohmann::json args = nlohmann::json::object();
};

// Keys in one fixed order, whatever the event.
std::string to_text(const event& e) {
  std::string s = "{\"name\":";
  sim::append_json_string(s, e.name);
  if (!e.cat.empty()) {
    s += ",\"cat\":";
    sim::append_json_string(s, e.cat);
  }
  s += ",\"ph\":\"";
  s += e.ph;
  s += "\"";
  s += ",\"ts\":" + micros(e.ts);  // metadata too: some importers want every event to have one
  if (e.ph == 'X') s += ",\"dur\":" + micros(e.dur);
  s += ",\"pid\":" + std::to_string(e.pid) + ",\"tid\":" + std::to_string(e.tid);
  if (e.ph == 'i') {
    s += ",\"s\":\"";
    s += e.scope;
    s += "\"";
  }
  if (!e.args.empty()) s += ",\"args\":" + dump(e.args);
  return s + "}";
}

event metadata(const char* what, int pid, std::uint64_t tid, nlohmann::json args) {
  event e;
  e.name = what;
  e.ph = 'M';
  e.pid = pid;
  e.tid = tid;
  e.args = std::move(args);
  return e;
}

// Fiber ids are dense from 0; tids start at 1 so no fiber's track is taken
// for the process's own.
std::uint64_t fiber_tid(std::uint64_t fiber) { return fiber + 1; }

/// A component's interval on a key: from its start event to its end event.
struct key_slice {
  std::uint64_t key = 0;
  event e;
  bool open = true;
};

class converter {
 public:
  explicit converter(const perfetto_source& src) : src_(src) {}

  void line(const nlohmann::json& j) {
    const std::string ev = j.at("ev").get<std::string>();
    const std::int64_t t = j.contains("t") ? j.at("t").get<std::int64_t>() : now_;
    now_ = t;
    if (ev == "step" || ev == "time" || ev == "end") close_step();
    if (j.contains("fiber")) see_fiber(j.at("fiber").get<std::uint64_t>());
    if (ev == "run") {
      run_ = j;
      run_.erase("ev");
    } else if (ev == "step") {
      step_ = open_step{j.at("fiber").get<std::uint64_t>(), j.at("n").get<std::uint64_t>(), j.at("of").get<std::uint64_t>(), t, t};
    } else if (ev == "spawn") {
      const auto fiber = j.at("fiber").get<std::uint64_t>();
      fibers_[fiber] = j.at("name").get<std::string>();
      instant("spawn", "fiber", fiber_tid(fiber), t, args_of(j));
    } else if (ev == "block") {
      const auto fiber = j.at("fiber").get<std::uint64_t>();
      close_block(fiber, t, "blocked again");
      blocked_[fiber] = open_block{t, j.at("on").get<std::string>(), args_of(j)};
    } else if (ev == "wake") {
      const auto fiber = j.at("fiber").get<std::uint64_t>();
      close_block(fiber, t, j.contains("by") ? j.at("by").get<std::string>() : "?");
    } else if (ev == "finish" || ev == "destroyed" || ev == "cancel") {
      const auto fiber = j.at("fiber").get<std::uint64_t>();
      if (ev != "cancel") close_block(fiber, t, ev);
      instant(ev, "fiber", fiber_tid(fiber), t, args_of(j));
    } else if (ev == "fail") {
      failure(j, t);
    } else if (ev == "end") {
      instant("end", "run", 0, t, args_of(j));
      events_.back().scope = 'p';  // the run's, not a fiber's
    } else if (const auto dot = ev.find('.'); dot != std::string::npos) {
      component(ev, ev.substr(0, dot), j, t);
    }
    if (step_) step_->last = t;
  }

  std::string finish() {
    close_step();
    // Whatever is still open ends with the run, marked as such.
    for (auto& [fiber, b] : blocked_) {
      b.args["woken"] = "never";
      slice("blocked on " + b.on, "fiber", fiber_pid, fiber_tid(fiber), b.since, now_, std::move(b.args));
    }
    blocked_.clear();
    for (auto& s : key_slices_) {
      if (!s.open) continue;
      s.e.dur = now_ - s.e.ts;
      s.e.args["ended"] = "not by the end of the run";
    }
    if (src_.failed && !failure_marked_) failure(nlohmann::json::object(), now_);

    std::vector<std::string> out;
    nlohmann::json other = {{"source", src_.label}};
    for (const auto& [k, v] : run_.items()) other[k] = v;
    out.push_back(to_text(metadata("process_name", fiber_pid, 0, {{"name", "fibers"}})));
    out.push_back(to_text(metadata("process_sort_index", fiber_pid, 0, {{"sort_index", 1}})));
    for (const auto& [fiber, name] : fibers_) {
      out.push_back(to_text(metadata("thread_name", fiber_pid, fiber_tid(fiber),
                                     {{"name", "#" + std::to_string(fiber) + " " + name}})));
      out.push_back(to_text(metadata("thread_sort_index", fiber_pid, fiber_tid(fiber), {{"sort_index", fiber}})));
    }
    const std::map<std::uint64_t, std::uint64_t> key_tids = place_key_slices();
    if (!key_tids.empty()) {
      out.push_back(to_text(metadata("process_name", key_pid, 0, {{"name", "keys"}})));
      out.push_back(to_text(metadata("process_sort_index", key_pid, 0, {{"sort_index", 2}})));
    }
    for (const auto& [tid, name] : key_track_names_) {
      out.push_back(to_text(metadata("thread_name", key_pid, tid, {{"name", name}})));
      out.push_back(to_text(metadata("thread_sort_index", key_pid, tid, {{"sort_index", tid}})));
    }
    for (auto& e : events_) {
      if (e.pid == key_pid) e.tid = key_tids.at(e.tid);  // instants carried the key until now
      out.push_back(to_text(e));
    }
    for (const auto& s : key_slices_) out.push_back(to_text(s.e));

    std::string text = "{\"traceEvents\":[\n";
    for (std::size_t i = 0; i < out.size(); ++i) text += out[i] + (i + 1 < out.size() ? ",\n" : "\n");
    text += "],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":" + dump(other) + "}\n";
    return text;
  }

 private:
  struct open_step {
    std::uint64_t fiber, n, of;
    std::int64_t start, last;
  };
  struct open_block {
    std::int64_t since;
    std::string on;
    nlohmann::json args;
  };

  static nlohmann::json args_of(const nlohmann::json& j) {
    nlohmann::json a = j;
    a.erase("ev");
    a.erase("t");
    return a;
  }

  void see_fiber(std::uint64_t fiber) {
    if (fibers_.find(fiber) == fibers_.end()) fibers_[fiber] = "";
  }

  void instant(std::string name, std::string cat, std::uint64_t tid, std::int64_t t, nlohmann::json args,
               int pid = fiber_pid) {
    event e;
    e.name = std::move(name);
    e.cat = std::move(cat);
    e.ts = t;
    e.pid = pid;
    e.tid = tid;
    e.args = std::move(args);
    events_.push_back(std::move(e));
  }

  void slice(std::string name, std::string cat, int pid, std::uint64_t tid, std::int64_t from, std::int64_t to,
             nlohmann::json args) {
    event e;
    e.name = std::move(name);
    e.cat = std::move(cat);
    e.ph = 'X';
    e.ts = from;
    e.dur = to - from;
    e.pid = pid;
    e.tid = tid;
    e.args = std::move(args);
    events_.push_back(std::move(e));
  }

  // A step runs one fiber; virtual time stands still within it, so most run
  // slices are instants of zero width (the blocked slices show the waits).
  void close_step() {
    if (!step_) return;
    slice("run", "fiber", fiber_pid, fiber_tid(step_->fiber), step_->start, step_->last,
          {{"step", step_->n}, {"runnable", step_->of}});
    step_.reset();
  }

  void close_block(std::uint64_t fiber, std::int64_t t, const std::string& how) {
    auto it = blocked_.find(fiber);
    if (it == blocked_.end()) return;
    it->second.args["ended_by"] = how;
    slice("blocked on " + it->second.on, "fiber", fiber_pid, fiber_tid(fiber), it->second.since, t,
          std::move(it->second.args));
    blocked_.erase(it);
  }

  void failure(const nlohmann::json& j, std::int64_t t) {
    failure_marked_ = true;
    nlohmann::json args = args_of(j);
    std::string kind = j.contains("kind") ? j.at("kind").get<std::string>() : "";
    if (src_.failed) {
      kind = sim::to_string(src_.failed->kind);
      const std::string& m = src_.failed->message;
      args["message"] = m;
      args["reason"] = failure_reason(kind, m.substr(0, m.rfind(" [seed ")));
      args["kind"] = kind;
    }
    event e;
    e.name = "FAILED: " + (args.contains("reason") ? args["reason"].get<std::string>() : kind);
    e.cat = "failure";
    e.ts = t;
    e.scope = 'g';
    e.tid = step_ ? fiber_tid(step_->fiber) : 0;
    e.args = std::move(args);
    events_.push_back(std::move(e));
  }

  // The components' events: an instant each, on the key's track when they
  // name a key (else on the fiber's that logged it), and the intervals an
  // item or waiter spends in a component as slices on the key's track.
  void component(const std::string& ev, const std::string& cat, const nlohmann::json& j, std::int64_t t) {
    nlohmann::json args = args_of(j);
    const bool keyed = j.contains("key");
    if (keyed) {
      const auto key = j.at("key").get<std::uint64_t>();
      keys_.insert(key);
      instant(ev, cat, key, t, args, key_pid);
      open_or_close(ev, cat, key, j, t);
    } else {
      instant(ev, cat, fiber_tid(j.value("fiber", std::uint64_t{0})), t, args);
    }
  }

  void open_or_close(const std::string& ev, const std::string& cat, std::uint64_t key, const nlohmann::json& j,
                     std::int64_t t) {
    // start event -> (slice name, the field that identifies it); end events close it.
    static const std::map<std::string, std::pair<std::string, std::string>> starts = {
        {"shards.dispatched", {"process item ", "item"}},
        {"lanes.handle_begin", {"handle item ", "item"}},
        {"flight.joined", {"waiter ", "waiter"}},
    };
    static const std::map<std::string, std::string> ends = {
        {"shards.completed", "item"}, {"lanes.handled", "item"}, {"flight.answered", "waiter"}, {"flight.left", "waiter"}};
    if (const auto s = starts.find(ev); s != starts.end() && j.contains(s->second.second)) {
      const auto id = j.at(s->second.second).get<std::uint64_t>();
      key_slice k;
      k.key = key;
      k.e.name = s->second.first + std::to_string(id);
      k.e.cat = cat;
      k.e.ph = 'X';
      k.e.ts = t;
      k.e.pid = key_pid;
      k.e.args = {{"from", ev}};
      open_[{ev.substr(0, ev.find('.')), id}] = key_slices_.size();
      key_slices_.push_back(std::move(k));
    } else if (const auto e = ends.find(ev); e != ends.end() && j.contains(e->second)) {
      const auto at = open_.find({ev.substr(0, ev.find('.')), j.at(e->second).get<std::uint64_t>()});
      if (at == open_.end()) return;
      key_slice& k = key_slices_[at->second];
      k.e.dur = t - k.e.ts;
      k.e.args["to"] = ev;
      k.open = false;
      open_.erase(at);
    }
  }

  // Slices on one key may overlap without nesting (two items of a key in
  // flight at once: what some bugs look like), which one track cannot show:
  // each key gets as many tracks as it needs, the first fitting one taken in
  // start order. Returns key -> its first track's tid (for its instants).
  std::map<std::uint64_t, std::uint64_t> place_key_slices() {
    std::map<std::uint64_t, std::vector<std::size_t>> by_key;  // slice indices, in start order
    for (std::size_t i = 0; i < key_slices_.size(); ++i) by_key[key_slices_[i].key].push_back(i);
    std::map<std::uint64_t, std::uint64_t> first_tid;
    std::uint64_t tid = 1;
    for (const std::uint64_t key : keys_) {
      first_tid[key] = tid;
      std::vector<std::int64_t> track_end;  // per track of this key: where its last slice ends
      track_end.push_back(INT64_MIN);
      auto it = by_key.find(key);
      if (it != by_key.end()) {
        std::vector<std::size_t>& idx = it->second;
        // Stable: equal starts keep the trace's order.
        std::stable_sort(idx.begin(), idx.end(),
                         [&](std::size_t a, std::size_t b) { return key_slices_[a].e.ts < key_slices_[b].e.ts; });
        for (const std::size_t i : idx) {
          event& e = key_slices_[i].e;
          std::size_t track = 0;
          while (track < track_end.size() && track_end[track] > e.ts) ++track;
          if (track == track_end.size()) track_end.push_back(INT64_MIN);
          track_end[track] = e.ts + e.dur;
          e.tid = tid + track;
        }
      }
      for (std::size_t track = 0; track < track_end.size(); ++track) {
        key_track_names_[tid + track] = "key " + std::to_string(key) +
                                        (track == 0 ? "" : " (overlapping, " + std::to_string(track + 1) + ")");
      }
      tid += track_end.size();
    }
    return first_tid;
  }

  const perfetto_source& src_;
  std::int64_t now_ = 0;
  nlohmann::json run_ = nlohmann::json::object();
  std::optional<open_step> step_;
  std::map<std::uint64_t, std::string> fibers_;
  std::map<std::uint64_t, open_block> blocked_;
  std::set<std::uint64_t> keys_;
  std::vector<event> events_;
  std::vector<key_slice> key_slices_;
  std::map<std::pair<std::string, std::uint64_t>, std::size_t> open_;
  std::map<std::uint64_t, std::string> key_track_names_;
  bool failure_marked_ = false;
};

}  // namespace

std::string perfetto_json(std::string_view trace_jsonl, const perfetto_source& source) {
  converter c(source);
  std::size_t pos = 0;
  std::uint64_t number = 0;
  while (pos < trace_jsonl.size()) {
    const std::size_t nl = trace_jsonl.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? trace_jsonl.size() : nl;
    const std::string_view line = trace_jsonl.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (line.empty()) continue;
    try {
      c.line(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("trace line " + std::to_string(number) + " is not a trace event: " + e.what());
    }
  }
  return c.finish();
}

}  // namespace lockstep::cli
