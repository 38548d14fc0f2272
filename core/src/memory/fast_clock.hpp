// The memory store's clock: monotonic microseconds from the CPU's time-stamp counter, anchored to CLOCK_MONOTONIC
// at least every millisecond. A steady_clock read costs about 23 ns on the VMs we run on, more than the rest of a
// hit on a hot key; the counter costs about 10.
#pragma once

#include <cstdint>

namespace ratewarden::memory {

// Never goes back on one thread; within about 0.1 us of steady_clock. Falls back to steady_clock where the
// counter cannot be trusted (no invariant TSC, or the kernel itself does not time with it).
int64_t fast_now_us();

}  // namespace ratewarden::memory
