// token_bucket: credit in µs of refill time (one token = interval_us), refilled lazily on every call. The state is
// the instant the bucket is full again, full_at = last + cap - credit (token_bucket.lua stores just that number): a
// call before `last` (a reservation charged a later slot, or the clock went back) sees the credit of its own time,
// negative when reservations hold slots beyond the burst.
#include <algorithm>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {

int64_t token_bucket(TokenBucketState& s, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& d) {
  const int64_t t = p.interval_us();
  const int64_t cap = p.burst * t;
  if (s.fresh) s = TokenBucketState{cap, now, false};
  s.credit_us = std::min(cap, s.credit_us + (now - s.last_us));
  s.last_us = now;

  const int64_t need = cost * t;
  if (mode == Mode::refund) s.credit_us = std::min(cap, s.credit_us + need);
  d = Decision{};
  d.limit = p.burst;
  d.allowed = s.credit_us >= need;
  if (d.allowed && mode == Mode::hit) s.credit_us -= need;
  d.remaining = std::max<int64_t>(0, s.credit_us / t);
  d.used = p.burst - d.remaining;
  d.reset_after_us = cap - s.credit_us;
  d.retry_after_us = d.allowed ? 0 : need - s.credit_us;
  return now + d.reset_after_us;
}

}  // namespace ratewarden
