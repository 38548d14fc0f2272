// A mutex in one word, whose uncontended lock and unlock are one atomic instruction each, inline: std::mutex's are
// calls into glibc that check the mutex's kind first, about 50 instructions a pair on the memory store's hot path
// (bench/hit_instructions). Contended, a waiter spins briefly, then sleeps on a futex (Drepper, "Futexes Are
// Tricky", mutex 3). Meets Lockable, for std::lock_guard.
#pragma once

#include <atomic>
#include <cstdint>

namespace ratewarden::util {

class Lock {
 public:
  void lock() {
    uint32_t expected = 0;
    if (!state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed))
      lock_contended();
  }
  bool try_lock() {
    uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == kWaited) wake_one();
  }

 private:
  static constexpr uint32_t kHeld = 1;
  static constexpr uint32_t kWaited = 2;  // held, and a thread may be asleep on it

  void lock_contended();
  void wake_one();

  std::atomic<uint32_t> state_{0};
};

}  // namespace ratewarden::util
