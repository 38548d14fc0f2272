#include "util/lock.hpp"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "io/fork_guard.hpp"

namespace ratewarden::util {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the futex word is the atomic itself");

// A lock is held for one decision (well under a microsecond): a short spin usually outlasts it, and costs less
// than a sleep and a wake.
constexpr int kSpins = 100;
// Without membarrier an unlock's wake can be missed: a sleeper then checks again this often.
constexpr long kFallbackSleepNs = 1000000;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

long membarrier(int command) { return syscall(SYS_membarrier, command, 0, 0); }

// A full memory barrier on every CPU that runs a thread of this process, or false where the kernel refuses it. The
// process registers on first use (inherited by a fork's child; once registered, a call costs about 0.2 us plus an
// interrupt per CPU running another of its threads).
bool barrier_everywhere() {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  if (errno != EPERM || membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return false;
  return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

void futex(std::atomic<uint32_t>& word, int op, uint32_t value, const timespec* timeout = nullptr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

// The high half of a sleepers' count made in this process.
uint64_t this_process() { return fork_generation() << 32; }
constexpr uint64_t kProcess = ~uint64_t{0xFFFFFFFF};

}  // namespace

void Lock::lock_contended() {
  for (int i = 0; i < kSpins; ++i) {
    relax();
    if (held_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
  }
  watch_forks();  // before a count exists that a fork could copy: the child's generation then moves on
  const uint64_t mine = this_process();
  uint64_t count = sleepers_.load(std::memory_order_relaxed);
  while (!sleepers_.compare_exchange_weak(count, ((count & kProcess) == mine ? count : mine) + 1,
                                          std::memory_order_seq_cst, std::memory_order_relaxed)) {
  }
  // From here on, every unlock either has its store seen by the try_lock below or reads the count above.
  static const timespec fallback{0, kFallbackSleepNs};
  const timespec* timeout = barrier_everywhere() ? nullptr : &fallback;
  while (!try_lock()) futex(held_, FUTEX_WAIT_PRIVATE, 1, timeout);  // sleeps while held, `timeout` at most
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void Lock::wake_one() {
  uint64_t count = sleepers_.load(std::memory_order_relaxed);
  const uint64_t mine = this_process();
  if ((count & kProcess) != mine) {
    // Counted by a parent's threads before a fork (none of them is here), and by no thread of this process since,
    // which would have made the count its own: as good as 0. Reset, so that unlocks skip this call again.
    sleepers_.compare_exchange_strong(count, mine, std::memory_order_relaxed);
    return;
  }
  futex(held_, FUTEX_WAKE_PRIVATE, 1);
}

}  // namespace ratewarden::util
