// The keyed hash and the clock of the memory store and the hybrid knowledge (core/src/util/).
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hybrid/knowledge.hpp"
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

// Every tail length (0..7 bytes after the 8-byte words), shorter and longer than a word: the bytes (i * 37 + 11) % 256,
//   PYTHONHASHSEED=0 python3 -c 'print(hex(hash(bytes((i * 37 + 11) % 256 for i in range(N))) & (2**64 - 1)))'
TEST(MemoryInternals, SipHash13MatchesCPythonAtEveryTailLength) {
  const std::pair<size_t, uint64_t> expected[] = {
      {1, 0x26144e6cff3ac45cULL},  {2, 0x52bd41de9d38aaf7ULL},  {3, 0xa4fa623f1c3d8f91ULL},
      {4, 0x33bce358c2baa9b2ULL},  {5, 0x3e7c050f956de4d6ULL},  {6, 0x10b0654a400278b1ULL},
      {7, 0xdf736fc88c20792aULL},  {8, 0x13c8df4ec019b503ULL},  {9, 0xdfb5eb7cc3223b49ULL},
      {10, 0x20aded9861e58ff1ULL}, {11, 0x60c42a6c0dfe371aULL}, {12, 0xe15d7193b9e32b33ULL},
      {13, 0x4df179531373eff2ULL}, {14, 0x10a40dec9c0adf99ULL}, {15, 0xbeba3cf576457485ULL},
      {16, 0x610125500b21b982ULL}, {17, 0xfa02bdcf2ab24ba9ULL}, {31, 0xde72d3f45318baf4ULL},
      {32, 0x087c22acb367534fULL}, {33, 0x7073225da5a0c159ULL}};
  for (const auto& [n, hash] : expected) {
    std::string bytes;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>((i * 37 + 11) % 256));
    EXPECT_EQ(siphash13(SipKey{}, bytes), hash) << n << " bytes";
  }
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

// A counter read before the clock's lock was taken (the memory store reads it first, then hashes and waits for the
// shard): the time of that read, or the last time given when another caller has moved the clock past it since, so
// that it never goes back. Where the counter is not used (a clocksource other than "tsc", a failed anchor, not
// x86-64), the read is ignored and the time is steady_clock's now: never back, never ahead.
TEST(MemoryInternals, TheFastClockTakesACounterReadEarlier) {
  FastClock clock;
  int64_t previous = clock.now_us();
  // Past the first milliseconds, while the counter's rate is measured and every read is a steady_clock read.
  for (const int64_t calibrated = monotonic_now_us() + 5000; monotonic_now_us() < calibrated;) previous = clock.now_us();
  uint64_t stale = FastClock::ticks();
  for (const int64_t end = monotonic_now_us() + 50000; monotonic_now_us() < end;) {
    const int64_t before = monotonic_now_us();
    const uint64_t ticks = FastClock::ticks();
    const int64_t now = clock.now_us(ticks);
    const int64_t after = monotonic_now_us();
    ASSERT_GE(now, before - 1);
    ASSERT_LE(now, after + 1);
    ASSERT_GE(now, previous);
    previous = now;
    const int64_t again = clock.now_us(stale);  // the previous read, after the clock moved past it
    ASSERT_GE(again, previous);
    ASSERT_LE(again, monotonic_now_us() + 1);
    previous = again;
    stale = ticks;
  }
}


// The hybrid knowledge holds local_keys entries, also where its shards (a power of two) do not divide the bound: a
// flood of distinct keys fills every shard's share, and no more.
TEST(MemoryInternals, TheHybridKnowledgeHoldsItsWholeBound) {
  for (const int64_t bound : {1, 3, 48, 63, 100, 500}) {
    hybrid::Knowledge known(bound, 64);
    const std::string keys[] = {"rw:{k}:v3:fixed_window:1:1000"};  // which storage keys does not matter here
    for (int i = 0; i < 20000; ++i) {
      const std::string tag = "user:" + std::to_string(i);
      const uint64_t hash = known.hash(tag);
      hybrid::Knowledge::Shard& shard = known.shard_of(hash);
      std::lock_guard<Lock> lock(shard.mu);
      known.find_or_add(shard, hash, hybrid::CallRef{tag, keys, 1}, 0);  // at time 0 every entry is of no use
    }
    EXPECT_EQ(known.size(), bound);
  }
}

}  // namespace
}  // namespace ratewarden::util
