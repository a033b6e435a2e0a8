// A move-only `void()` callable: fiber bodies capture move-only state (a lane
// owns its receiver), which std::function cannot hold.
//
// A body of up to `inline_bytes` is kept inside the object, not on the heap:
// a fiber body is made by one thread and destroyed by another, and with
// 64,000 single-flight waiters spawned from one core and ended on both, the
// second malloc/free pair per fiber had the two threads queue on glibc's
// arena lock (a futex sleep and wake each time it was contended).
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace lockstep::threads::detail {

class unique_function {
 public:
  static constexpr std::size_t inline_bytes = 64;

  unique_function() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
  unique_function(F&& fn)  // NOLINT: implicit, like std::function
  {
    using G = std::decay_t<F>;
    if constexpr (kept_inline<G>) {
      ::new (static_cast<void*>(storage_)) G(std::forward<F>(fn));
      ops_ = &inline_ops<G>;
    } else {
      ::new (static_cast<void*>(storage_)) G*(new G(std::forward<F>(fn)));
      ops_ = &heap_ops<G>;
    }
  }
  unique_function(unique_function&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) {
      ops_->relocate(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }
  unique_function& operator=(unique_function&& other) noexcept {
    if (this != &other) {
      reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) {
        ops_->relocate(other.storage_, storage_);
        other.ops_ = nullptr;
      }
    }
    return *this;
  }
  unique_function(const unique_function&) = delete;
  unique_function& operator=(const unique_function&) = delete;
  ~unique_function() { reset(); }

  void operator()() { ops_->call(storage_); }
  explicit operator bool() const { return ops_ != nullptr; }

 private:
  struct ops {
    void (*call)(void* at);
    // Moves the callable at `from` to `to` and ends the one at `from`.
    void (*relocate)(void* from, void* to) noexcept;
    void (*destroy)(void* at) noexcept;
  };

  template <class G>
  static constexpr bool kept_inline = sizeof(G) <= inline_bytes && alignof(G) <= alignof(std::max_align_t) &&
                                      std::is_nothrow_move_constructible_v<G>;

  template <class G>
  static G& inline_at(void* at) {
    return *std::launder(static_cast<G*>(at));
  }
  template <class G>
  static G*& heap_at(void* at) {
    return *std::launder(static_cast<G**>(at));
  }

  template <class G>
  static constexpr ops inline_ops{
      [](void* at) { inline_at<G>(at)(); },
      [](void* from, void* to) noexcept {
        ::new (to) G(std::move(inline_at<G>(from)));
        inline_at<G>(from).~G();
      },
      [](void* at) noexcept { inline_at<G>(at).~G(); },
  };
  template <class G>
  static constexpr ops heap_ops{
      [](void* at) { (*heap_at<G>(at))(); },
      [](void* from, void* to) noexcept { ::new (to) G*(heap_at<G>(from)); },
      [](void* at) noexcept { delete heap_at<G>(at); },
  };

  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

  alignas(std::max_align_t) unsigned char storage_[inline_bytes];
  const ops* ops_ = nullptr;
};

}  // namespace lockstep::threads::detail
