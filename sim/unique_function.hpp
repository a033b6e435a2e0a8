// A move-only `void()` callable: fibers own their bodies, and bodies often
// capture move-only things (a channel receiver, a guard). std::function cannot
// hold those and std::move_only_function is C++23.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace lockstep::sim {

class unique_function {
 public:
  unique_function() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
  unique_function(F&& f) : impl_(std::make_unique<model<std::decay_t<F>>>(std::forward<F>(f))) {}

  void operator()() { impl_->call(); }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    virtual void call() = 0;
  };
  template <class F>
  struct model final : concept_t {
    explicit model(F&& f) : fn(std::move(f)) {}
    explicit model(const F& f) : fn(f) {}
    void call() override { fn(); }
    F fn;
  };
  std::unique_ptr<concept_t> impl_;
};

}  // namespace lockstep::sim
