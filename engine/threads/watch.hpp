// R::watch<T> on the threads backend (tokio::sync::watch): the watch object
// is the sender. send_replace always stores, even with no subscriber, so a
// late subscriber still reads the value; changed() reports false once the
// sender is gone and nothing newer was sent.
//
// Senders serialize on the state's lock. Readers of a small value without
// padding, or an optional of one (a single-flight outcome), take no lock:
// the value lives in relaxed atomic words under a sequence count that is odd
// while a send writes them (a seqlock, as Boehm, "Can seqlocks get along with
// programming language memory models?", 2012, writes it for C++), and a
// reader retries if the count moved. A borrow is then a few plain loads where
// the lock cost two locked instructions. Other values are read under the lock.
// The count is also the version: version = count / 2.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "fiber.hpp"
#include "scheduler.hpp"

namespace lockstep::threads {

class runtime;

namespace detail {

/// How a value is spelled in a seqlocked cell's words, for the types whose
/// every byte is value (no padding: copying padding would copy indeterminate
/// bytes), and for std::optional of those, spelled as a flag word and the
/// value. Other types are read under the lock.
template <class T>
struct seqlock_codec {
  static constexpr bool usable = false;
};
template <class T>
  requires(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T> &&
           std::has_unique_object_representations_v<T> && sizeof(T) <= 24)
struct seqlock_codec<T> {
  static constexpr bool usable = true;
  static constexpr std::size_t words = (sizeof(T) + 7) / 8;
  static void encode(const T& v, std::uint64_t* out) {
    for (std::size_t i = 0; i < words; ++i) out[i] = 0;
    std::memcpy(out, static_cast<const void*>(&v), sizeof(T));
  }
  static T decode(const std::uint64_t* in) {
    T v;
    std::memcpy(static_cast<void*>(&v), in, sizeof(T));
    return v;
  }
};
template <class U>
  requires(seqlock_codec<U>::usable)
struct seqlock_codec<std::optional<U>> {
  static constexpr bool usable = true;
  static constexpr std::size_t words = 1 + seqlock_codec<U>::words;
  static void encode(const std::optional<U>& v, std::uint64_t* out) {
    out[0] = v.has_value() ? 1 : 0;
    seqlock_codec<U>::encode(v.has_value() ? *v : U{}, out + 1);
  }
  static std::optional<U> decode(const std::uint64_t* in) {
    if (in[0] == 0) return std::nullopt;
    return seqlock_codec<U>::decode(in + 1);
  }
};

/// The watched value. Every write happens under the state's lock; `seq` is
/// even when no write is under way.
template <class T, bool Seqlocked = seqlock_codec<T>::usable>
class watch_cell {
 public:
  explicit watch_cell(T v) : value_(std::move(v)) {}
  /// Under the lock. Swaps, so the old value dies after the caller unlocks.
  void replace(T& v) {
    using std::swap;
    swap(value_, v);
    seq.store(seq.load(std::memory_order_relaxed) + 2, std::memory_order_release);
  }
  /// The value and the version it had; `mu` is the state's lock.
  T read(lock_t& mu, std::uint64_t& version) const {
    std::lock_guard<lock_t> hold(mu);
    version = seq.load(std::memory_order_relaxed) / 2;
    return value_;
  }
  std::atomic<std::uint64_t> seq{0};

 private:
  T value_;
};

template <class T>
class watch_cell<T, true> {
  using codec = seqlock_codec<T>;
  static constexpr std::size_t words = codec::words;

 public:
  explicit watch_cell(const T& v) { put(v); }
  void replace(const T& v) {
    const std::uint64_t s = seq.load(std::memory_order_relaxed);
    seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // the odd count is seen before any new word
    put(v);
    seq.store(s + 2, std::memory_order_release);
  }
  T read(lock_t& /*mu*/, std::uint64_t& version) const {
    std::uint64_t raw[words];
    while (true) {
      const std::uint64_t before = seq.load(std::memory_order_acquire);
      if ((before & 1) != 0) {  // a send is writing: it holds the lock for a few instructions
        relax();
        continue;
      }
      for (std::size_t i = 0; i < words; ++i) raw[i] = word_[i].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);  // the words are read before the count again
      if (seq.load(std::memory_order_relaxed) == before) {
        version = before / 2;
        return codec::decode(raw);
      }
    }
  }
  std::atomic<std::uint64_t> seq{0};

 private:
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  void put(const T& v) {
    std::uint64_t raw[words];
    codec::encode(v, raw);
    for (std::size_t i = 0; i < words; ++i) word_[i].store(raw[i], std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> word_[words];
};

}  // namespace detail

template <class T>
class watch {
  struct state {
    explicit state(T v) : cell(std::move(v)) {}
    /// The version now, without the lock.
    [[nodiscard]] std::uint64_t version() const { return cell.seq.load(std::memory_order_acquire) / 2; }
    mutable detail::lock_t mu;
    detail::watch_cell<T> cell;
    bool sender_alive = true;  // guarded by mu, as is waiters
    detail::wait_list waiters;
  };

 public:
  class receiver {
   public:
    receiver(std::shared_ptr<state> s, std::uint64_t seen) : s_(std::move(s)), seen_(seen) {}
    /// The current value, marked as seen.
    T borrow_and_update() { return s_->cell.read(s_->mu, seen_); }
    /// Await point until a value newer than the last seen (true, now seen),
    /// or the sender is gone with nothing newer (false).
    bool changed() {
      detail::require_fiber("watch::receiver::changed");
      state& s = *s_;
      std::unique_lock<detail::lock_t> hold(s.mu);
      while (true) {
        const std::uint64_t now = s.version();  // sends write it under mu: stable here
        if (now != seen_) {
          seen_ = now;
          return true;
        }
        if (!s.sender_alive) return false;
        detail::waiter& w = detail::fresh_waiter("watch::receiver::changed");
        detail::wait_on(hold, s.waiters, w, std::nullopt, detail::cancellable);
        if (detail::should_unwind()) detail::unwind();
      }
    }

   private:
    std::shared_ptr<state> s_;
    std::uint64_t seen_;
  };

  watch(runtime& /*rt*/, T initial) : s_(std::make_shared<state>(std::move(initial))) {}
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;
  ~watch() {
    // Nobody else holds the state: no receiver can be waiting, and none can
    // appear (they come from this watch, or copy one that holds the state).
    // Skips a lock and the wake on the common path of a flight's outcome.
    if (s_.use_count() == 1) return;
    std::lock_guard<detail::lock_t> hold(s_->mu);
    s_->sender_alive = false;
    detail::wake_all(s_->waiters);
  }

  /// Stores `v` whether or not anyone is subscribed, and wakes every waiter.
  void send_replace(T v) {
    std::lock_guard<detail::lock_t> hold(s_->mu);
    s_->cell.replace(v);  // swaps: the old value is destroyed after the lock is released
    detail::wake_all(s_->waiters);
  }
  /// A receiver that has seen the current value already. No lock: a send
  /// that races with it is ordered before or after it, as under the lock.
  receiver subscribe() { return receiver(s_, s_->version()); }
  [[nodiscard]] T borrow() const {
    std::uint64_t version = 0;
    return s_->cell.read(s_->mu, version);
  }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace lockstep::threads
