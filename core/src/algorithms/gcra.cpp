// gcra: the generic cell rate algorithm; one timestamp (the theoretical arrival time) per key.
#include <algorithm>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {

int64_t gcra(GcraState& s, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& d) {
  const int64_t t = p.interval_us();
  const int64_t tau = p.burst * t;
  const int64_t tat = mode == Mode::refund ? std::max(s.tat_us - cost * t, now) : std::max(s.tat_us, now);
  const int64_t next = tat + cost * t;

  d = Decision{};
  d.limit = p.burst;
  d.allowed = next - now <= tau;
  s.tat_us = d.allowed && mode == Mode::hit ? next : tat;
  // Below 0 only when reservations hold slots beyond the burst (Mode::reserve): nothing is left then.
  d.remaining = std::max<int64_t>(0, (tau - (s.tat_us - now)) / t);
  d.used = p.burst - d.remaining;
  d.reset_after_us = s.tat_us - now;
  d.retry_after_us = d.allowed ? 0 : next - now - tau;
  return s.tat_us;
}

}  // namespace ratewarden
