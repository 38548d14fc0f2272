#include "ratewarden/clock.hpp"

#include <chrono>

namespace ratewarden {

int64_t monotonic_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ratewarden
