// A move-only `void()` callable: fibers own their bodies, and bodies often
// capture move-only things (a channel receiver, a guard). std::function cannot
// hold those and std::move_only_function is C++23.
//
// A body that fits in a few words (a lambda capturing some references, the
// usual case) is stored inline: every spawn used to cost one allocation and
// one free for its body alone, a measurable share of a small run.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace lockstep::sim {

class unique_function {
  static constexpr std::size_t inline_bytes = 6 * sizeof(void*);
  static constexpr std::size_t inline_align = alignof(std::max_align_t);

  template <class F>
  static constexpr bool stored_inline = sizeof(F) <= inline_bytes && alignof(F) <= inline_align &&
                                        std::is_nothrow_move_constructible_v<F>;

  struct ops {
    void (*call)(void* storage);
    void (*move)(void* from, void* to) noexcept;  // into raw `to`; `from` is left destroyed
    void (*destroy)(void* storage) noexcept;
  };

  template <class F>
  static constexpr ops inline_ops{
      [](void* s) { (*static_cast<F*>(s))(); },
      [](void* from, void* to) noexcept {
        ::new (to) F(std::move(*static_cast<F*>(from)));
        static_cast<F*>(from)->~F();
      },
      [](void* s) noexcept { static_cast<F*>(s)->~F(); },
  };
  template <class F>
  static constexpr ops heap_ops{
      [](void* s) { (**static_cast<F**>(s))(); },
      [](void* from, void* to) noexcept { ::new (to) F*(*static_cast<F**>(from)); },
      [](void* s) noexcept { delete *static_cast<F**>(s); },
  };

 public:
  unique_function() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
  unique_function(F&& f) {  // NOLINT: implicit, like std::function
    using G = std::decay_t<F>;
    if constexpr (stored_inline<G>) {
      ::new (static_cast<void*>(storage_)) G(std::forward<F>(f));
      ops_ = &inline_ops<G>;
    } else {
      ::new (static_cast<void*>(storage_)) G*(new G(std::forward<F>(f)));
      ops_ = &heap_ops<G>;
    }
  }
  unique_function(unique_function&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) ops_->move(o.storage_, storage_);
    o.ops_ = nullptr;
  }
  unique_function& operator=(unique_function&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_ != nullptr) ops_->move(o.storage_, storage_);
      o.ops_ = nullptr;
    }
    return *this;
  }
  unique_function(const unique_function&) = delete;
  unique_function& operator=(const unique_function&) = delete;
  ~unique_function() { reset(); }

  void operator()() { ops_->call(storage_); }
  explicit operator bool() const { return ops_ != nullptr; }
  /// Destroys the callable (and what it captured); empty afterwards.
  void reset() noexcept {
    const ops* o = ops_;
    ops_ = nullptr;
    if (o != nullptr) o->destroy(storage_);
  }

 private:
  const ops* ops_ = nullptr;
  alignas(inline_align) unsigned char storage_[inline_bytes];
};

}  // namespace lockstep::sim
