// sliding_log: the exact log of allowed hits in (now - period, now]; at most `limit` entries per key.
#include <algorithm>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {
namespace {

// Drops expired entries from the head (the running total with them); compacts the storage once the dead prefix
// outweighs the live part.
void drop_expired(SlidingLogState& s, int64_t now, int64_t period) {
  while (s.head < s.entries.size() && s.entries[s.head].at_us <= now - period) s.sum -= s.entries[s.head++].cost;
  if (s.head == s.entries.size()) {
    s.entries.clear();
    s.head = 0;
    s.sum = 0;
  } else if (s.head > 16 && s.head * 2 > s.entries.size()) {
    s.entries.erase(s.entries.begin(), s.entries.begin() + static_cast<std::ptrdiff_t>(s.head));
    s.head = 0;
  }
}

}  // namespace

int64_t sliding_log(SlidingLogState& s, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& d) {
  drop_expired(s, now, p.period_us);
  int64_t& sum = s.sum;
  // A refund takes back from the newest entries.
  for (int64_t left = mode == Mode::refund ? cost : 0; left > 0 && s.head < s.entries.size();) {
    const int64_t taken = std::min(left, s.entries.back().cost);
    s.entries.back().cost -= taken;
    sum -= taken;
    left -= taken;
    if (s.entries.back().cost == 0) s.entries.pop_back();
  }

  d = Decision{};
  d.limit = p.limit;
  d.allowed = sum + cost <= p.limit;
  if (d.allowed && mode == Mode::hit) {
    if (s.head < s.entries.size() && s.entries.back().at_us == now)
      s.entries.back().cost += cost;  // same instant: one entry
    else
      s.entries.push_back({now, cost});
    sum += cost;
  }
  if (!d.allowed) {
    // The first entry whose expiry frees enough of the quota: the scan reads only the entries it needs.
    int64_t freed = 0;
    for (size_t i = s.head; i < s.entries.size(); ++i) {
      freed += s.entries[i].cost;
      if (sum - freed + cost <= p.limit) {
        d.retry_after_us = s.entries[i].at_us + p.period_us - now;
        break;
      }
    }
  }
  const bool empty = s.head == s.entries.size();
  d.used = sum;
  d.remaining = p.limit - sum;
  d.reset_after_us = empty ? 0 : s.entries.back().at_us + p.period_us - now;
  return now + d.reset_after_us;
}

}  // namespace ratewarden
