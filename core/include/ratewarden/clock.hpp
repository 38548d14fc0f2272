#pragma once

#include <cstdint>
#include <functional>

namespace ratewarden {

// A source of time in microseconds. Stores take one so that tests can freeze and advance time.
using Clock = std::function<int64_t()>;

// Microseconds of std::chrono::steady_clock: never goes back, so windows cannot be cheated by a clock change.
int64_t monotonic_now_us();

}  // namespace ratewarden
