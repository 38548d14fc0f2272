// fixed_window: a counter for a window that starts at the first hit on an empty key and lasts one period.
#include <algorithm>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {

int64_t fixed_window(FixedWindowState& s, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& d) {
  if (s.count <= 0 || now >= s.start_us + p.period_us) s = FixedWindowState{0, now};
  if (mode == Mode::refund) s.count = std::max<int64_t>(0, s.count - cost);
  d = Decision{};
  d.limit = p.limit;
  d.allowed = s.count + cost <= p.limit;
  if (d.allowed && mode == Mode::hit) s.count += cost;
  const int64_t window_left = s.start_us + p.period_us - now;
  d.used = s.count;
  d.remaining = p.limit - s.count;
  d.reset_after_us = s.count > 0 ? window_left : 0;
  d.retry_after_us = d.allowed ? 0 : window_left;
  return s.count > 0 ? s.start_us + p.period_us : now;
}

}  // namespace ratewarden
