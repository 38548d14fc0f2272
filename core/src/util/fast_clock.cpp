// How it stays honest: each clock keeps an anchor (a counter reading and the steady_clock time taken with it) and
// extrapolates from it for at most 1 ms, at a rate measured over the whole life of the process (steady_clock time
// elapsed / counter ticks since the first anchor). Rate error is a few parts per million early on and shrinks as
// the process runs, so the extrapolation drifts by nanoseconds before the next anchor corrects it. For the first
// few milliseconds of a process, before the rate is known, every read is a steady_clock read.
#include "util/fast_clock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>

#include "ratewarden/clock.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace ratewarden::util {

#if defined(__x86_64__)
namespace {

constexpr int64_t kAnchorNs = 1000000;       // re-anchor after 1 ms
constexpr int64_t kCalibrationNs = 2000000;  // the rate is measured over at least 2 ms
// A clock read bracketed by counter reads fewer ticks apart than this (under 2 us at any rate above 1 GHz; a read
// takes about 100) ties the two to within half of it.
constexpr uint64_t kTightTicks = 2000;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The counter ticks at one rate whatever the CPU's frequency and power state, and the kernel trusts it across CPUs
// (it would have switched its own clocksource away from "tsc" otherwise). Read with plain system calls: an ifstream
// takes the C++ locale's lock, which a forked child may have inherited held (see origin()).
bool counter_is_trustworthy() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1u << 8)) == 0) return false;
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[8] = {};
  const ssize_t n = ::read(fd, name, sizeof name);
  ::close(fd);
  return n == 4 && std::memcmp(name, "tsc\n", 4) == 0;
}

struct Origin {
  bool usable;
  uint64_t ticks;
  int64_t ns;
};

// A counter reading and the steady_clock time of the same instant: the clock read bracketed by two counter reads
// close together (a thread preempted in between would tie the time to the wrong count).
bool read_pair(uint64_t& ticks, int64_t& ns) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    const uint64_t before = __rdtsc();
    const int64_t now = steady_ns();
    const uint64_t after = __rdtsc();
    if (after - before < kTightTicks) {
      ticks = before + (after - before) / 2;
      ns = now;
      return true;
    }
  }
  return false;
}

// Made once, on the first re-anchor, under a shard's lock: not a function-local static, whose guard a thread of
// the parent may hold "in progress" at a fork (the child would then wait on it forever, at every clock's first
// re-anchor). Threads that find none each make one; the first published is kept. Any of them would do.
std::atomic<const Origin*> published_origin{nullptr};

const Origin& origin() {
  const Origin* o = published_origin.load(std::memory_order_acquire);
  if (o != nullptr) return *o;
  auto* mine = new Origin{counter_is_trustworthy(), 0, 0};
  if (mine->usable) mine->usable = read_pair(mine->ticks, mine->ns);
  if (published_origin.compare_exchange_strong(o, mine, std::memory_order_acq_rel)) return *mine;
  delete mine;
  return *o;
}

}  // namespace

int64_t FastClock::reanchor() {
  const Origin& o = origin();
  span_ticks_ = 0;
  uint64_t ticks = 0;
  int64_t ns = 0;
  if (!o.usable || !read_pair(ticks, ns)) ns = steady_ns();
  const int64_t elapsed_ns = ns - o.ns;
  const uint64_t elapsed_ticks = ticks - o.ticks;
  if (o.usable && ticks != 0 && elapsed_ns >= kCalibrationNs && elapsed_ticks > 0 &&
      elapsed_ticks < (uint64_t{1} << 62)) {
    ns_per_tick_q32_ = static_cast<uint64_t>((static_cast<unsigned __int128>(elapsed_ns) << 32) / elapsed_ticks);
    if (ns_per_tick_q32_ > 0) {
      ticks_ = ticks;
      ns_ = ns;
      span_ticks_ = static_cast<uint64_t>((static_cast<unsigned __int128>(kAnchorNs) << 32) / ns_per_tick_q32_);
    }
  }
  const int64_t us = ns / 1000;
  if (us > floor_us_) floor_us_ = us;
  return floor_us_;
}

int64_t FastClock::now_us() { return now_us(__rdtsc()); }

int64_t FastClock::past_span(uint64_t since) {
  // Read before the latest anchor (by a caller that waited for this clock's lock meanwhile): no later than the time
  // already given. Told apart from a counter that went back by the counter now, past the anchor only in the first
  // case (one more read, on this rare path): answering the floor until a counter gone back caught up with the
  // anchor would stop this clock for as long.
  if (span_ticks_ != 0 && static_cast<int64_t>(since) < 0 && static_cast<int64_t>(__rdtsc() - ticks_) >= 0)
    return floor_us_;
  return reanchor();
}

#else

int64_t FastClock::now_us() {
  const int64_t us = monotonic_now_us();
  if (us > floor_us_) floor_us_ = us;
  return floor_us_;
}

#endif

}  // namespace ratewarden::util
