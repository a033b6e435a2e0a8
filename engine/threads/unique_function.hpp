// A move-only `void()` callable: fiber bodies capture move-only state (a lane
// owns its receiver), which std::function cannot hold.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace lockstep::threads::detail {

class unique_function {
  struct base {
    virtual ~base() = default;
    virtual void call() = 0;
  };
  template <class F>
  struct holder final : base {
    template <class G>
    explicit holder(G&& g) : fn(std::forward<G>(g)) {}
    void call() override { fn(); }
    F fn;
  };

 public:
  unique_function() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
  unique_function(F&& fn)  // NOLINT: implicit, like std::function
      : impl_(std::make_unique<holder<std::decay_t<F>>>(std::forward<F>(fn))) {}

  void operator()() { impl_->call(); }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::unique_ptr<base> impl_;
};

}  // namespace lockstep::threads::detail
