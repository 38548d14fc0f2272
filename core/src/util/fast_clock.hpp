// The memory store's clock: monotonic microseconds from the CPU's time-stamp counter, anchored to CLOCK_MONOTONIC
// at least every millisecond. A steady_clock read costs about 23 ns on the VMs we run on, more than the rest of a
// hit on a hot key; the counter costs about 10.
#pragma once

#include <cstdint>
#include <limits>

namespace ratewarden::util {

// Not thread-safe: each shard owns one and reads it under its lock (no thread_local, which costs a call per access
// in a shared library such as the Python and Node extensions). Never goes back; within a microsecond of
// steady_clock. Reads steady_clock where the counter cannot be trusted (no invariant TSC, or the kernel itself
// does not keep time with it).
class FastClock {
 public:
  int64_t now_us();
  // The counter, read now: now_us(ticks) later gives the time of this read (no earlier than the last time given).
  // A caller reads it before work that does not need the time, whose instructions then overlap the read's
  // latency (the counter read is the slowest instruction of a hit on some CPUs and hypervisors). Both inline, the
  // usual case of now_us too: they are on every hit's path.
#if defined(__x86_64__)
  static uint64_t ticks() { return __builtin_ia32_rdtsc(); }
  int64_t now_us(uint64_t ticks) {
    const uint64_t since = ticks - ticks_;  // a counter that went back wraps to a huge value: past the span
    if (since >= span_ticks_) return past_span(since);
    const int64_t us = (ns_ + static_cast<int64_t>((since * ns_per_tick_q32_) >> 32)) / 1000;
    if (us > floor_us_) floor_us_ = us;
    return floor_us_;
  }
#else
  static uint64_t ticks() { return 0; }
  int64_t now_us(uint64_t) { return now_us(); }
#endif

 private:
  int64_t past_span(uint64_t since);
  int64_t reanchor();

  uint64_t ticks_ = 0;           // the anchor: a counter reading ...
  int64_t ns_ = 0;               // ... and the steady_clock time it was taken at
  uint64_t ns_per_tick_q32_ = 0;  // nanoseconds per tick, 32.32 fixed point
  uint64_t span_ticks_ = 0;       // extrapolate this far at most; 0 until the rate is known
  int64_t floor_us_ = std::numeric_limits<int64_t>::min();  // the latest value returned
};

}  // namespace ratewarden::util
