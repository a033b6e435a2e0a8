// A bounded work queue written against the standard library's names through
// the alias `cc`: production code builds it with `cc` = std; its tests build
// it with `cc` = lockstep::sim_std (test_work_queue.cpp), unchanged.
// With EXAMPLE_PLANTED_BUG=1, pop() checks its condition once instead of in a
// loop, which a spurious wake-up (or a stolen item) turns into a pop from an
// empty queue.
#pragma once

#include <cstddef>
#include <deque>
#include <stdexcept>

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
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(item));
    not_empty_.notify_one();
  }

  T pop() {
    cc::unique_lock<cc::mutex> lock(m_);
#if EXAMPLE_PLANTED_BUG
    if (items_.empty()) not_empty_.wait(lock);
#else
    not_empty_.wait(lock, [&] { return !items_.empty(); });
#endif
    if (items_.empty()) throw std::logic_error("work_queue: pop from an empty queue");
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

 private:
  std::size_t capacity_;
  cc::mutex m_;
  cc::condition_variable not_full_, not_empty_;
  std::deque<T> items_;  // guarded by m_
};

}  // namespace example
