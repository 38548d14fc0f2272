// The algorithm functions on their own, with a frozen clock, plus properties checked over random traffic.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int64_t kS = 1000000;
constexpr int64_t kT0 = 1702080000000000;

// The algorithms write their decision in place and return the state's expiry; the tests look at both together.
struct Outcome {
  Decision decision;
  int64_t expires_at_us = 0;
};

template <class Fn, class State>
Outcome run(Fn algorithm, State& state, int64_t now, const Policy& p, int64_t cost, Mode mode) {
  Outcome out;
  out.expires_at_us = algorithm(state, now, p, cost, mode, out.decision);
  return out;
}

Policy policy(const char* text, Algorithm a, std::optional<int64_t> burst = {}, std::optional<int64_t> buckets = {}) {
  return make_policies(parse_rates(text), {a, burst, buckets})[0];
}

TEST(FixedWindow, WindowStartsAtFirstHit) {
  Policy p = policy("3/10s", Algorithm::fixed_window);
  FixedWindowState s;
  const int64_t t = kT0 + 1234567;
  EXPECT_TRUE(run(fixed_window, s, t, p, 3, Mode::hit).decision.allowed);
  Outcome denied = run(fixed_window, s, t + 9 * kS, p, 1, Mode::hit);
  EXPECT_FALSE(denied.decision.allowed);
  EXPECT_EQ(denied.decision.retry_after_us, kS);
  EXPECT_EQ(denied.expires_at_us, t + 10 * kS);
  EXPECT_TRUE(run(fixed_window, s, t + 10 * kS, p, 1, Mode::hit).decision.allowed);
  EXPECT_EQ(s.start_us, t + 10 * kS);
}

TEST(SlidingLog, HoldsAtMostLimitEntries) {
  Policy p = policy("5/1s", Algorithm::sliding_log);
  SlidingLogState s;
  for (int64_t i = 0; i < 10000; ++i) {
    run(sliding_log, s, kT0 + i * 1000, p, 1, Mode::hit);
    ASSERT_LE(s.entries.size() - s.head, 5u);
    ASSERT_LE(s.entries.size(), 5u + 17u + 5u) << "storage is compacted";
  }
}

TEST(SlidingWindow, OneBucketIsTheTwoWindowApproximation) {
  Policy p = policy("10/10s", Algorithm::sliding_window, {}, 1);
  SlidingWindowState s;
  EXPECT_TRUE(run(sliding_window, s, kT0, p, 10, Mode::hit).decision.allowed);  // previous window: 10
  // A quarter into the next window the previous one weighs 3/4: 7.5 -> 8 counted.
  Outcome o = run(sliding_window, s, kT0 + 12500000, p, 1, Mode::peek);
  EXPECT_EQ(o.decision.used, 8);
  EXPECT_EQ(o.decision.remaining, 2);
  EXPECT_TRUE(run(sliding_window, s, kT0 + 12500000, p, 2, Mode::hit).decision.allowed);
  EXPECT_FALSE(run(sliding_window, s, kT0 + 12500000, p, 1, Mode::hit).decision.allowed);
}

TEST(Gcra, BurstThenSteadyRate) {
  Policy p = policy("10/s", Algorithm::gcra, 3);
  GcraState s;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(run(gcra, s, kT0, p, 1, Mode::hit).decision.allowed);
  Outcome denied = run(gcra, s, kT0, p, 1, Mode::hit);
  EXPECT_FALSE(denied.decision.allowed);
  EXPECT_EQ(denied.decision.retry_after_us, 100000);
  EXPECT_TRUE(run(gcra, s, kT0 + 100000, p, 1, Mode::hit).decision.allowed);
}

// Random traffic against every algorithm: after each call the state is copied, and properties are checked on it.
struct PropertyCase {
  Algorithm algorithm;
  const char* rate;
  std::optional<int64_t> burst;
  std::optional<int32_t> buckets;
};

class Properties : public ::testing::TestWithParam<PropertyCase> {};

TEST_P(Properties, HoldOverRandomTraffic) {
  const PropertyCase& pc = GetParam();
  Policy p = policy(pc.rate, pc.algorithm, pc.burst, pc.buckets);
  std::mt19937_64 rng(42);
  AlgorithmState s = fresh_state(pc.algorithm);
  int64_t now = kT0 + 777;
  for (int i = 0; i < 20000; ++i) {
    now += std::uniform_int_distribution<int64_t>(0, p.period_us / 4)(rng);
    const int64_t cost = std::uniform_int_distribution<int64_t>(1, p.capacity())(rng);

    AlgorithmState peeked = s;
    Outcome peek = run(evaluate, peeked, now, p, cost, Mode::peek);
    Outcome hit = run(evaluate, s, now, p, cost, Mode::hit);
    // A peek says what the hit decides.
    ASSERT_EQ(peek.decision.allowed, hit.decision.allowed);
    ASSERT_EQ(peek.decision.retry_after_us, hit.decision.retry_after_us);
    ASSERT_GE(hit.decision.remaining, 0);
    ASSERT_LE(hit.decision.remaining, p.capacity());
    ASSERT_GE(hit.decision.reset_after_us, 0);
    if (hit.decision.allowed) {
      ASSERT_EQ(hit.decision.retry_after_us, 0);
      ASSERT_GT(hit.expires_at_us, now);
      continue;
    }
    // A denied hit consumes nothing and changes no answer.
    AlgorithmState again = s;
    ASSERT_EQ(run(evaluate, again, now, p, cost, Mode::peek).decision, peek.decision);
    // Retrying at exactly now + retry_after is allowed; one microsecond earlier is not.
    const int64_t retry = hit.decision.retry_after_us;
    ASSERT_GT(retry, 0);
    AlgorithmState later = s;
    ASSERT_TRUE(run(evaluate, later, now + retry, p, cost, Mode::peek).decision.allowed) << "i=" << i;
    AlgorithmState early = s;
    ASSERT_FALSE(run(evaluate, early, now + retry - 1, p, cost, Mode::peek).decision.allowed) << "i=" << i;
  }
}

// Every algorithm of the table with its defaults, plus options and rates that stress the arithmetic.
std::vector<PropertyCase> property_cases() {
  std::vector<PropertyCase> out;
  for (const AlgorithmInfo& a : kAlgorithms) out.push_back({a.algorithm, "10/s", {}, {}});
  const std::vector<PropertyCase> more = {{Algorithm::sliding_window, "17/7s", {}, 1},
                                          {Algorithm::sliding_window, "100/1s", {}, 7},
                                          {Algorithm::token_bucket, "7/minute", 3, {}},
                                          {Algorithm::token_bucket, "10/s", 25, {}},
                                          {Algorithm::gcra, "7/minute", 3, {}},
                                          {Algorithm::gcra, "10/s", 25, {}}};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Properties, ::testing::ValuesIn(property_cases()));

// gcra keeps one number where token_bucket keeps two; both must decide identically.
TEST(TokenBucketAndGcra, AdmitTheSameHits) {
  for (int64_t burst : {1, 5, 20}) {
    Policy tb = policy("13/7s", Algorithm::token_bucket, burst);
    Policy gc = policy("13/7s", Algorithm::gcra, burst);
    TokenBucketState ts;
    GcraState gs;
    std::mt19937_64 rng(burst);
    int64_t now = kT0;
    for (int i = 0; i < 20000; ++i) {
      now += std::uniform_int_distribution<int64_t>(0, 600000)(rng);
      const int64_t cost = std::uniform_int_distribution<int64_t>(1, burst)(rng);
      const Mode mode = i % 5 == 0 ? Mode::peek : Mode::hit;
      ASSERT_EQ(run(token_bucket, ts, now, tb, cost, mode).decision, run(gcra, gs, now, gc, cost, mode).decision) << i;
    }
  }
}

// The decision of policy `index`, as combine_decisions reports it.
Decision reported(Decision d, int32_t index) {
  d.policy_index = index;
  return d;
}

TEST(CombineDecisions, ReportsTheBindingPolicy) {
  Decision a{true, 10, 7, 1000, 0, 3}, b{true, 100, 2, 5000, 0, 98}, b2{true, 50, 2, 9000, 0, 48};
  EXPECT_EQ(combine_decisions({a, b}), reported(b, 1));
  EXPECT_EQ(combine_decisions({a, b, b2}), reported(b, 1));  // ties go to the first
  Decision c{false, 10, 0, 1000, 400, 10}, d{false, 100, 0, 5000, 900, 100};
  EXPECT_EQ(combine_decisions({a, c, d}), reported(d, 2));  // the longest wait
  Decision e{false, 20, 1, 900, 900, 19};
  EXPECT_EQ(combine_decisions({e, d}), reported(d, 1));  // equal waits: the lowest remaining
  EXPECT_EQ(combine_decisions({d, a}), reported(d, 0));  // a denial reports a denying policy
}

// decide_all on states of its own: a denial by one policy charges none; an allowed hit charges all.
TEST(DecideAll, ChargesAllOrNone) {
  const std::vector<Policy> policies = make_policies(parse_rates("2/s; 3/10s"), {Algorithm::fixed_window, {}, {}});
  AlgorithmState s0 = fresh_state(Algorithm::fixed_window), s1 = fresh_state(Algorithm::fixed_window);
  AlgorithmState* states[] = {&s0, &s1};
  int64_t expires[2];
  auto hit = [&](int64_t now) { return decide_all(policies.data(), states, 2, now, 1, Mode::hit, expires); };
  EXPECT_EQ(hit(kT0), (Decision{true, 2, 1, kS, 0, 1, 0}));
  EXPECT_EQ(hit(kT0), (Decision{true, 2, 0, kS, 0, 2, 0}));
  EXPECT_EQ(expires[1], kT0 + 10 * kS);
  EXPECT_EQ(hit(kT0 + kS), (Decision{true, 3, 0, 9 * kS, 0, 3, 1}));
  const Decision denied = hit(kT0 + kS);  // the 1 s window allows it, the 10 s one does not: nothing is charged
  EXPECT_EQ(denied, (Decision{false, 3, 0, 9 * kS, 9 * kS, 3, 1}));
  EXPECT_EQ(std::get<FixedWindowState>(s0).count, 1);
  EXPECT_EQ(decide_all(policies.data(), states, 2, kT0 + kS, 1, Mode::peek, expires), denied);
}

}  // namespace
}  // namespace ratewarden::testing
