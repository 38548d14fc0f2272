// sliding_window: clock-aligned bucket counters; the oldest bucket is weighted by its overlap with the window, in
// integer thousandths so that the Lua script computes the very same numbers.
#include <algorithm>
#include <optional>

#include "ratewarden/algorithms.hpp"

namespace ratewarden {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b < 0 ? 1 : 0); }

// The buckets live in a ring of n + 1 slots: bucket k in slot k mod (n + 1).
class Ring {
 public:
  Ring(SlidingWindowState& s, int64_t n) : s_(s), slots_(n + 1) {}
  int64_t& at(int64_t k) { return s_.counts[slot(k)]; }
  int64_t get(int64_t k) const { return k > s_.newest || k <= s_.newest - slots_ ? 0 : s_.counts[slot(k)]; }
  // Moves the newest bucket forward to c, clearing the slots it passes.
  void advance(int64_t c) {
    if (s_.counts.empty()) {
      s_.counts.assign(static_cast<size_t>(slots_), 0);
      s_.newest = c;
      return;
    }
    for (int64_t k = s_.newest + 1; k <= c && k <= s_.newest + slots_; ++k) at(k) = 0;
    s_.newest = std::max(s_.newest, c);
  }

 private:
  // Floor modulo: an injected clock may run before its origin (k < 0).
  size_t slot(int64_t k) const { return static_cast<size_t>(((k % slots_) + slots_) % slots_); }

  SlidingWindowState& s_;
  int64_t slots_;
};

}  // namespace

int64_t sliding_window(SlidingWindowState& s, int64_t now, const Policy& p, int64_t cost, Mode mode, Decision& d) {
  const int64_t n = p.buckets;
  const int64_t w = p.bucket_width_us();
  Ring ring(s, n);
  if (!s.counts.empty()) now = std::max(now, s.newest * w);  // a clock that went back: not before the state
  const int64_t c = floor_div(now, w);
  const int64_t e = now - c * w;
  ring.advance(c);
  // A refund takes back from the newest counted buckets.
  for (int64_t k = c, left = mode == Mode::refund ? cost : 0; left > 0 && k >= c - n; --k) {
    const int64_t taken = std::min(left, ring.at(k));
    ring.at(k) -= taken;
    left -= taken;
  }

  int64_t full = 0;
  for (int64_t k = c - n + 1; k <= c; ++k) full += ring.get(k);
  const int64_t old = ring.get(c - n);
  // ceil((w - e) * 1000 / w), computed so that no intermediate value exceeds w * 1000 (< 2^53).
  const int64_t weight = 1000 - e * 1000 / w;
  int64_t estimate = full + ceil_div(old * weight, 1000);

  d = Decision{};
  d.limit = p.limit;
  d.allowed = estimate + cost <= p.limit;
  if (d.allowed && mode == Mode::hit) {
    ring.at(c) += cost;
    estimate += cost;
  }
  if (!d.allowed) {
    // full2: the buckets cc - n + 1 .. cc, slid along with cc.
    int64_t full2 = full;
    for (int64_t cc = c; cc <= c + n + 1; ++cc) {
      if (cc > c) full2 += ring.get(cc) - ring.get(cc - n);
      const int64_t old2 = ring.get(cc - n);
      const int64_t r = p.limit - cost - full2;
      if (r < 0) continue;
      int64_t offset = 0;
      if (old2 > 0) {
        const int64_t q = r * 1000 / old2;
        offset = q >= 1000 ? 0 : w - q * w / 1000;
      }
      if (offset >= w) continue;
      d.retry_after_us = std::max(cc * w + offset, now) - now;
      break;
    }
  }
  std::optional<int64_t> newest_counted;
  for (int64_t k = c; k >= c - n && !newest_counted; --k)
    if (ring.get(k) > 0) newest_counted = k;
  d.used = estimate;
  d.remaining = std::max<int64_t>(0, p.limit - estimate);
  d.reset_after_us = newest_counted ? (*newest_counted + n + 1) * w - now : 0;
  return now + d.reset_after_us;
}

}  // namespace ratewarden
