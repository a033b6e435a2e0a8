// A bounded work queue written against the standard library's names through
// the alias `cc`: production code builds it with `cc` = std; its tests build
// it with `cc` = lockstep::sim_std (test_work_queue.cpp), unchanged.
// Producers and consumers wait on one condition variable for different
// conditions (room, an item), so every change must wake them all. With
// EXAMPLE_PLANTED_BUG=1 it wakes one (notify_one instead of notify_all): a
// consumer's pop can wake another consumer instead of the producer waiting
// for room, and everyone ends up waiting (a lost wake-up, seen as a deadlock).
#pragma once

#include <cstddef>
#include <deque>

#ifndef EXAMPLE_CC
#include <condition_variable>
#include <mutex>
#define EXAMPLE_CC std
#endif

namespace example {

namespace cc = EXAMPLE_CC;

template <class T>
class work_queue {
 public:
  explicit work_queue(std::size_t capacity) : capacity_(capacity) {}

  void push(T item) {
    cc::unique_lock<cc::mutex> lock(m_);
    changed_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(item));
    wake();
  }

  T pop() {
    cc::unique_lock<cc::mutex> lock(m_);
    changed_.wait(lock, [&] { return !items_.empty(); });
    T item = std::move(items_.front());
    items_.pop_front();
    wake();
    return item;
  }

 private:
  void wake() {
#if EXAMPLE_PLANTED_BUG
    changed_.notify_one();
#else
    changed_.notify_all();
#endif
  }

  std::size_t capacity_;
  cc::mutex m_;
  cc::condition_variable changed_;  // room or an item: producers and consumers both wait here
  std::deque<T> items_;  // guarded by m_
};

}  // namespace example
