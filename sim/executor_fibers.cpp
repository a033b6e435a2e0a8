// Fibers: spawning one (a stack from the pool or a parked fiber reused),
// its entry point, and how its end or its exception becomes the run's.
#include "sim/executor.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <typeinfo>

#include "engine/runtime.hpp"
#include "sim/sanitizer.hpp"

namespace lockstep::sim {

namespace {

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  return out;
}

}  // namespace

fiber_id executor::spawn_fiber(std::uint32_t core, const char* fixed, std::string* given, unique_function body) {
  if (core >= ncores_) {
    throw std::out_of_range("spawn on core " + std::to_string(core) + " but the run has " +
                            std::to_string(ncores_) + " cores");
  }
  const auto id = static_cast<fiber_id>(fibers_.size());
  if (live_ >= config_.max_live_fibers) {
    out_of_resources(id, fixed != nullptr ? fixed : *given,
                     ("the run's limit of " + std::to_string(config_.max_live_fibers) +
                      " live fibers is reached (run_config::max_live_fibers)")
                         .c_str());
  }
  fiber* f = nullptr;
  try {
    std::unique_ptr<fiber> owned;
    if (!spare_fibers_.empty()) {
      owned = std::move(spare_fibers_.back());
      spare_fibers_.pop_back();
    } else {
      owned = std::make_unique<fiber>();
    }
    f = owned.get();
    fibers_.push_back(std::move(owned));
  } catch (const std::bad_alloc&) {
    out_of_resources(id, fixed != nullptr ? fixed : *given, "out of memory for its record");
  }
  f->id = id;
  f->core = core;
  ++residents_[core];
  if (fixed != nullptr) {
    f->fixed_name = fixed;  // f->name is empty: a recycled record is made anew (retire)
  } else {
    f->name = std::move(*given);
  }
  f->body = std::move(body);
  f->owner = this;
  f->tsan_fiber = san::tsan_create();
  ++live_;
  // Spawned while the run is being torn down: born cancelled, so its body
  // never runs against a frame that is unwinding (see executor.hpp).
  if (tearing_down_) {
    f->cancel_requested = true;
    teardown_top_ = fibers_.size();
  }

  if (f->cont && f->pool == stacks_) {
    --parked_fibers_;  // a parked context: its next resume runs this body
  } else {
    if (f->cont) --parked_fibers_;
    drop_parked(*f);  // parked on a stack of another size
    // Boost's constructor makes an excursion onto the new stack and back; tell
    // ASan it is a switch to "self" so no fake frame is taken from the creator.
    const void* creator_bottom = current_ ? stack_bottom(*current_) : sched_bottom_;
    const std::size_t creator_size = current_ ? current_->stack.size : sched_size_;
    void* creator_tsan = current_ ? current_->tsan_fiber : sched_tsan_;
    void* t = nullptr;
    san::start_switch(&t, creator_bottom, creator_size);
    san::tsan_switch(f->tsan_fiber);
    try {
      f->cont = boost::context::fiber(std::allocator_arg, pooled_stack_allocator{stacks_, &f->stack},
                                      [f](boost::context::fiber&& from) {
                                        executor* ex = f->owner;
                                        ex->adopt(std::move(from));
                                        for (;;) {
                                          san::finish_switch(nullptr, nullptr, nullptr);
                                          f->started = true;
                                          fiber_main(ex, f);
                                          if (!ex->may_park()) break;
                                          // Parked (done is set): the scheduler retires the
                                          // record with this context; the next spawn that takes
                                          // it resumes here, with the record refilled, maybe for
                                          // another executor of this thread.
                                          ex->switched_from_ = f;
                                          from = std::move(ex->sched_cont_).resume();
                                          ex = f->owner;
                                          ex->adopt(std::move(from));
                                        }
                                        ex->switched_from_ = f;
                                        return std::move(ex->sched_cont_);
                                      });
      f->pool = stacks_;
    } catch (const std::exception& e) {  // stack_exhausted, or bad_alloc
      san::tsan_switch(creator_tsan);
      san::finish_switch(t, nullptr, nullptr);
      san::tsan_destroy(f->tsan_fiber);
      const std::string fiber_name = f->name_text();
      fibers_.pop_back();  // it never existed: no trace line, no id reuse hazard (nothing saw it)
      --live_;
      --residents_[core];
      if (tearing_down_) teardown_top_ = fibers_.size();
      out_of_resources(id, fiber_name, e.what());
    }
    san::tsan_switch(creator_tsan);
    san::finish_switch(t, nullptr, nullptr);
  }

  f->op_count = 0;
  strategy_->on_spawn(f->id);
  access(enable_key(f->id));  // the child's first step follows this one
  // For the race detector too: the child starts after what its parent did.
  if (clocks_ != nullptr) clocks_->spawned(current_ != nullptr ? current_->id : f->id, f->id);
  if (trace_.on()) {
    trace_.begin("spawn")
        .field("t", now_)
        .field("fiber", static_cast<std::int64_t>(f->id))
        .field("core", static_cast<std::int64_t>(core))
        .field("parent", current_ ? static_cast<std::int64_t>(current_->id) : -1)
        .field("name", f->name_text())
        .end();
  }
  make_ready(*f);
  return f->id;
}

std::uint32_t executor::add_core() {
  cores_.emplace_back();
  residents_.push_back(0);
  return ncores_++;
}

// A resource limit fails the run with its own kind, then unwinds the spawner
// (a run_aborted, so engine panic containment lets it through).
void executor::out_of_resources(fiber_id id, const std::string& name, const char* why) {
  const std::string msg = "could not start fiber #" + std::to_string(id) + " '" + name + "' with " +
                          std::to_string(live_) + " fibers alive: " + why;
  fail(failure_kind::resource_exhausted, msg);
  throw run_aborted{msg};
}

void executor::fiber_main(executor* ex, fiber* f) {
  // Last on every way out, including Boost's forced unwind: mark the fiber
  // done and let ASan free its fake stack (start_switch with nullptr).
  struct exit_guard {
    executor* ex;
    fiber* f;
    ~exit_guard() {
      f->done = true;
      san::start_switch(nullptr, ex->sched_bottom_, ex->sched_size_);
    }
  } guard{ex, f};
  try {
    // Run in place, and dropped here on every way out (an unwind too):
    // captured objects are destroyed on the fiber's own stack, as the fiber.
    struct drop_body {
      fiber* f;
      ~drop_body() { f->body.reset(); }
    } drop{f};
    if (f->cancel_requested) {
      // Cancelled before it ever ran: the body is dropped unrun, as a tokio
      // task aborted before its first poll.
      f->unwinding = true;
      throw fiber_cancelled{};
    }
    f->body();
  } catch (const fiber_cancelled&) {
    // The normal end of a cancelled fiber: every destructor has run.
  } catch (const boost::context::detail::forced_unwind&) {
    throw;  // Boost's own teardown must reach its entry frame
  } catch (const liveness_failed& o) {
    ex->fail(failure_kind::liveness, "liveness oracle '" + o.oracle + "' failed in fiber " + std::to_string(f->id) +
                                         " '" + f->name_text() + "': " + o.message, o.where);
  } catch (const oracle_failed& o) {
    ex->fail(failure_kind::oracle, "oracle '" + o.oracle + "' failed in fiber " + std::to_string(f->id) +
                                       " '" + f->name_text() + "': " + o.message, o.where);
  } catch (const lockstep::task_panic&) {
    // Ends only this fiber, as a panic ends only its task under tokio.
    ++ex->contained_task_panics_;
    if (ex->trace_.on()) ex->note("task_panic").field("name", f->name_text()).end();
  } catch (const run_aborted& a) {
    ex->fail(failure_kind::abort, "fiber " + std::to_string(f->id) + " '" + f->name_text() +
                                      "' aborted the run: " + a.why);
  } catch (const std::exception& e) {
    ex->fail(failure_kind::uncaught_exception, "fiber " + std::to_string(f->id) + " '" + f->name_text() +
                                                   "' ended with an uncaught " +
                                                   type_name(typeid(e)) + ": " + e.what());
  } catch (...) {
    ex->fail(failure_kind::uncaught_exception,
             "fiber " + std::to_string(f->id) + " '" + f->name_text() + "' ended with an uncaught exception");
  }
}

}  // namespace lockstep::sim
