// The circuit breaker every network store shares (core/src/net/circuit.hpp), on explicit instants.
#include "net/circuit.hpp"

#include <gtest/gtest.h>

namespace ratewarden {
namespace {

constexpr int64_t kBackoff = 1000000;

CircuitOptions options(int failures, int64_t backoff_us) {
  CircuitOptions o;
  o.failures = failures;
  o.backoff_us = backoff_us;
  return o;
}

bool lets_through(Circuit& c, int64_t now, bool* probe_out = nullptr) {
  bool probe = false;
  const bool through = c.lets_through(now, probe);
  if (probe_out != nullptr) *probe_out = probe;
  return through;
}

TEST(CircuitBreaker, OpensAfterThatManyFailuresInARowAndAnAnswerResetsTheCount) {
  Circuit c(options(3, kBackoff));
  c.failed(0, false, "refused");
  c.failed(1, false, "refused");
  c.answered();  // not in a row
  c.failed(2, false, "refused");
  c.failed(3, false, "refused");
  EXPECT_TRUE(lets_through(c, 4));
  c.failed(4, false, "cut");
  EXPECT_FALSE(lets_through(c, 5));
  EXPECT_EQ(c.refusal(5), "not tried: 3 calls in a row failed (last: cut); the next try is in 1000 ms");
  EXPECT_FALSE(lets_through(c, 4 + kBackoff - 1));
}

TEST(CircuitBreaker, AfterTheBackOffOneProbeGoesThroughAndTheOthersStillFail) {
  Circuit c(options(1, kBackoff));
  c.failed(0, false, "refused");
  bool probe = false;
  EXPECT_TRUE(lets_through(c, kBackoff, &probe));
  EXPECT_TRUE(probe);
  EXPECT_TRUE(c.probing());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(lets_through(c, kBackoff + i, &probe)) << i;
  EXPECT_EQ(c.refusal(kBackoff + 10), "not tried: 1 calls in a row failed (last: refused); the next try is in 0 ms");
  c.answered();  // the probe's answer closes it
  EXPECT_FALSE(c.probing());
  EXPECT_TRUE(lets_through(c, kBackoff + 20, &probe));
  EXPECT_FALSE(probe);
}

TEST(CircuitBreaker, AFailedProbeOpensItForAnotherBackOff) {
  Circuit c(options(2, kBackoff));
  c.failed(0, false, "refused");
  c.failed(0, false, "refused");
  bool probe = false;
  ASSERT_TRUE(lets_through(c, kBackoff, &probe));
  ASSERT_TRUE(probe);
  c.failed(kBackoff + 5, true, "still refused");
  EXPECT_FALSE(lets_through(c, 2 * kBackoff + 4));
  EXPECT_TRUE(lets_through(c, 2 * kBackoff + 5, &probe));
  EXPECT_TRUE(probe);
}

TEST(CircuitBreaker, AProbeThatEndsWithoutNewsLeavesTheNextCallToProbe) {
  Circuit c(options(1, kBackoff));
  c.failed(0, false, "refused");
  bool probe = false;
  ASSERT_TRUE(lets_through(c, kBackoff, &probe));
  c.probe_ended();  // e.g. retried on a fresh connection
  EXPECT_TRUE(lets_through(c, kBackoff + 1, &probe));
  EXPECT_TRUE(probe);
}

TEST(CircuitBreaker, ZeroFailuresNeverOpens) {
  Circuit c(options(0, kBackoff));
  for (int i = 0; i < 100; ++i) c.failed(i, false, "refused");
  EXPECT_TRUE(lets_through(c, 100));
}

}  // namespace
}  // namespace ratewarden
