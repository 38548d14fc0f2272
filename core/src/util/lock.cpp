#include "util/lock.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

namespace ratewarden::util {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the futex word is the atomic itself");

// A lock is held for one decision (well under a microsecond): a short spin usually outlasts it, and costs less
// than a sleep and a wake.
constexpr int kSpins = 100;

void futex(std::atomic<uint32_t>& word, int op, uint32_t value) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

void Lock::lock_contended() {
  for (int i = 0; i < kSpins; ++i) {
    relax();
    if (state_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
  }
  // From here on the word says kWaited while this thread may sleep, so that the holder's unlock wakes one.
  while (state_.exchange(kWaited, std::memory_order_acquire) != 0) futex(state_, FUTEX_WAIT_PRIVATE, kWaited);
}

void Lock::wake_one() { futex(state_, FUTEX_WAKE_PRIVATE, 1); }

}  // namespace ratewarden::util
