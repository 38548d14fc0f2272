// The keyed hash and the clock of the memory store and the hybrid knowledge (core/src/util/).
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/fast_clock.hpp"
#include "util/siphash.hpp"
#include "ratewarden/clock.hpp"

namespace ratewarden::util {
namespace {

// CPython 3.11+ hashes bytes with SipHash-1-3, and with PYTHONHASHSEED=0 its key is all zeros:
//   PYTHONHASHSEED=0 python3 -c 'print(hex(hash(b"user:42") & (2**64 - 1)))'
TEST(MemoryInternals, SipHash13MatchesCPython) {
  const SipKey zero;
  EXPECT_EQ(siphash13(zero, "a"), 0x407448d2b89b1813ULL);
  EXPECT_EQ(siphash13(zero, "user:42"), 0x223dd74fb15f308dULL);
  EXPECT_EQ(siphash13(zero, "0123456"), 0x810aaf7acf670379ULL);
  EXPECT_EQ(siphash13(zero, "01234567"), 0xda3dcedf84ea6cc6ULL);
  EXPECT_EQ(siphash13(zero, "012345678"), 0xb79d8581f8552753ULL);
  EXPECT_EQ(siphash13(zero, "the quick brown fox jumps over"), 0xad7dbf39b6f5e689ULL);
}

TEST(MemoryInternals, EveryStoreDrawsItsOwnHashKey) {
  const SipKey a = random_sip_key(), b = random_sip_key();
  EXPECT_NE(siphash13(a, "user:42"), siphash13(b, "user:42"));
}

// Bracketed by steady_clock reads, one clock per thread on several threads at once, for long enough to re-anchor
// many times: never outside the bracket (by more than a microsecond of rounding) and never going back.
TEST(MemoryInternals, TheFastClockIsSteadyClockToTheMicrosecond) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([] {
      FastClock clock;
      int64_t previous = clock.now_us();
      const int64_t end = monotonic_now_us() + 300000;
      for (int64_t before = monotonic_now_us(); before < end; before = monotonic_now_us()) {
        const int64_t now = clock.now_us();
        const int64_t after = monotonic_now_us();
        ASSERT_GE(now, before - 1);
        ASSERT_LE(now, after + 1);
        ASSERT_GE(now, previous);
        previous = now;
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace ratewarden::util
