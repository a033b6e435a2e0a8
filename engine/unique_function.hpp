// A move-only `void()` callable: fiber bodies capture move-only things (a
// channel receiver, a guard), which std::function cannot hold, and
// std::move_only_function is C++23. Both runtimes keep their fibers' bodies
// in one (sim/unique_function.hpp, engine/threads/unique_function.hpp).
//
// A body of up to InlineBytes (a lambda capturing some references, the usual
// case) is stored inline, not on the heap: a spawn then costs no allocation
// for its body.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace lockstep {

template <std::size_t InlineBytes>
class basic_unique_function {
 public:
  static constexpr std::size_t inline_bytes = InlineBytes;

 private:
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
      [](void* s) { (*std::launder(static_cast<F*>(s)))(); },
      [](void* from, void* to) noexcept {
        F* f = std::launder(static_cast<F*>(from));
        ::new (to) F(std::move(*f));
        f->~F();
      },
      [](void* s) noexcept { std::launder(static_cast<F*>(s))->~F(); },
  };
  template <class F>
  static constexpr ops heap_ops{
      [](void* s) { (**std::launder(static_cast<F**>(s)))(); },
      [](void* from, void* to) noexcept { ::new (to) F*(*std::launder(static_cast<F**>(from))); },
      [](void* s) noexcept { delete *std::launder(static_cast<F**>(s)); },
  };

 public:
  basic_unique_function() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, basic_unique_function>>>
  basic_unique_function(F&& f) {  // NOLINT: implicit, like std::function
    using G = std::decay_t<F>;
    if constexpr (stored_inline<G>) {
      ::new (static_cast<void*>(storage_)) G(std::forward<F>(f));
      ops_ = &inline_ops<G>;
    } else {
      ::new (static_cast<void*>(storage_)) G*(new G(std::forward<F>(f)));
      ops_ = &heap_ops<G>;
    }
  }
  basic_unique_function(basic_unique_function&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) ops_->move(o.storage_, storage_);
    o.ops_ = nullptr;
  }
  basic_unique_function& operator=(basic_unique_function&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_ != nullptr) ops_->move(o.storage_, storage_);
      o.ops_ = nullptr;
    }
    return *this;
  }
  basic_unique_function(const basic_unique_function&) = delete;
  basic_unique_function& operator=(const basic_unique_function&) = delete;
  ~basic_unique_function() { reset(); }

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

}  // namespace lockstep
