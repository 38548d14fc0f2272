// A mutex whose uncontended lock is one atomic instruction and whose unlock is a plain store and a load, inline:
// std::mutex's are calls into glibc that check the mutex's kind first, about 50 instructions a pair on the memory
// store's hot path (bench/hit_instructions). Contended, a waiter spins briefly, then sleeps on a futex.
//
// Why the unlock is not an atomic exchange: on x86 any locked instruction waits for every earlier store to reach the
// cache, and a hit's unlock comes right after the hit's own stores (bench/memory_store_bench: the lock and unlock were
// a quarter of a hit on a hot key). Instead the unlock stores 0, then reads whether anyone sleeps, with no fence
// between: it may read before its store is seen. The waiter pays for that (an asymmetric Dekker pair): it counts
// itself in `sleepers_`, then runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full barrier on every CPU running
// a thread of this process. After it, every unlock either had its store seen (the waiter finds the lock free and
// takes it) or reads the count after it (and wakes a sleeper). Where membarrier is refused (a kernel without it, a
// seccomp filter), a waiter sleeps at most kFallbackSleepNs at a time, so a missed wake costs that, never a hang.
// Meets Lockable, for std::lock_guard.
#pragma once

#include <atomic>
#include <cstdint>

namespace ratewarden::util {

class Lock {
 public:
  void lock() {
    if (!try_lock()) lock_contended();
  }
  bool try_lock() {
    uint32_t expected = 0;
    return held_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() {
    held_.store(0, std::memory_order_release);
    // The compiler keeps the read after the store; the CPU may not (see above).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (static_cast<uint32_t>(sleepers_.load(std::memory_order_relaxed)) != 0) wake_one();
  }
  // Whether some thread holds it (in a forked child: a thread of the parent, which the child does not have).
  bool held() const { return held_.load(std::memory_order_relaxed) != 0; }

 private:
  void lock_contended();
  void wake_one();

  std::atomic<uint32_t> held_{0};      // the futex word: 1 while held
  // Low half: the threads past their spin, which may be asleep on held_. High half: the process they are in (its
  // fork generation), as a forked child inherits the count but not the threads: it drops a count not its own.
  std::atomic<uint64_t> sleepers_{0};
};

}  // namespace ratewarden::util
