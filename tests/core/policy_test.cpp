// Policy strings and policy validation.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

struct Parsed {
  const char* text;
  std::vector<Rate> rates;
};

class ParseGood : public ::testing::TestWithParam<Parsed> {};

TEST_P(ParseGood, Parses) {
  const Parsed& p = GetParam();
  std::vector<Rate> rates = parse_rates(p.text);
  ASSERT_EQ(rates.size(), p.rates.size()) << p.text;
  for (size_t i = 0; i < rates.size(); ++i) {
    EXPECT_EQ(rates[i].limit, p.rates[i].limit) << p.text;
    EXPECT_EQ(rates[i].period_us, p.rates[i].period_us) << p.text;
  }
}

constexpr int64_t kMs = 1000, kS = 1000000, kMin = 60 * kS, kH = 60 * kMin, kD = 24 * kH;

INSTANTIATE_TEST_SUITE_P(
    Strings, ParseGood,
    ::testing::Values(Parsed{"100/minute", {{100, kMin}}}, Parsed{"10 per second", {{10, kS}}},
                      Parsed{"5 per 30 seconds", {{5, 30 * kS}}}, Parsed{"1000/1h", {{1000, kH}}},
                      Parsed{"2/500ms", {{2, 500 * kMs}}}, Parsed{"1/day", {{1, kD}}},
                      Parsed{"3 per 2 days", {{3, 2 * kD}}}, Parsed{"  7 / 15 MIN  ", {{7, 15 * kMin}}},
                      Parsed{"1/1millisecond", {{1, kMs}}}, Parsed{"60/hour", {{60, kH}}},
                      Parsed{"10/second; 1000/hour", {{10, kS}, {1000, kH}}},
                      Parsed{"10/s,100/m , 1000/d", {{10, kS}, {100, kMin}, {1000, kD}}}));

class ParseBad : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseBad, RaisesInvalidArgumentQuotingTheString) {
  const std::string text = GetParam();
  try {
    parse_rates(text);
    FAIL() << "parsed: " << text;
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("\"" + text + "\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

INSTANTIATE_TEST_SUITE_P(Strings, ParseBad,
                         ::testing::Values("", "   ", "abc", "100", "100/", "/minute", "100/fortnight", "0/minute",
                                           "10/0s", "-5/minute", "10 minute", "10/minute;", "; 10/minute",
                                           "10/minute;;5/s", "10 permille second", "10/minute extra",
                                           "1.5/second", "1/0.5s", "99999999999999999999/s", "10/4000d"));

TEST(ParseBad, NamesTheReason) {
  try {
    parse_rates("10/fortnight");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown unit \"fortnight\""), std::string::npos) << e.what();
  }
  // A fraction is named as one, not as the '/' or unit the parser would find missing after it.
  for (const char* text : {"1.5/second", "1/0.5s", "10 per 1.5 minutes"}) {
    try {
      parse_rates(text);
      FAIL() << text;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(" must be a whole number: \"3/2s\" is 1.5 a second"), std::string::npos)
          << e.what();
    }
  }
}

// A message is a C string (what(), the C ABI's errmsg): a NUL in the input it quotes is written \0, and what
// follows it stays in the message.
TEST(ParseBad, QuotesANulAsBackslashZero) {
  try {
    parse_rates(std::string("5/min\0ute", 9));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("\"5/min\\0ute\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(Error(ErrorCode::internal, std::string("\0a\0\0", 4)).what(), std::string("\\0a\\0\\0"));
}

TEST(Algorithm, NamesRoundTrip) {
  for (const AlgorithmInfo& a : kAlgorithms) {
    EXPECT_EQ(parse_algorithm(a.name), a.algorithm);
    EXPECT_EQ(algorithm_name(a.algorithm), a.name);
  }
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

// The messages list the algorithms from the table.
TEST(Algorithm, MessagesNameTheAlgorithms) {
  std::string names;
  for (const std::string& name : algorithm_names()) names += (names.empty() ? "" : ", ") + name;
  EXPECT_EQ(message_of([] { parse_algorithm("leaky"); }), "unknown algorithm \"leaky\": expected one of " + names);
  EXPECT_EQ(message_of([] { make_policies(parse_rates("1/s"), {Algorithm::sliding_log, 2, std::nullopt}); }),
            "burst applies to token_bucket and gcra, not to sliding_log");
  EXPECT_EQ(message_of([] { make_policies(parse_rates("1/s"), {Algorithm::gcra, std::nullopt, 2}); }),
            "buckets applies to sliding_window, not to gcra");
}

std::vector<Policy> policies(const char* text, PolicyOptions options) { return make_policies(parse_rates(text), options); }

TEST(MakePolicies, Defaults) {
  auto p = policies("10/second", {Algorithm::token_bucket, std::nullopt, std::nullopt});
  EXPECT_EQ(p[0].burst, 10);
  EXPECT_EQ(p[0].capacity(), 10);
  EXPECT_EQ(p[0].interval_us(), 100000);
  auto w = policies("10/minute", {Algorithm::sliding_window, std::nullopt, std::nullopt});
  EXPECT_EQ(w[0].buckets, 10);
  EXPECT_EQ(w[0].bucket_width_us(), 6 * kS);
  EXPECT_EQ(policies("7/minute", {Algorithm::gcra, std::nullopt, std::nullopt})[0].interval_us(), 8571429);
}

TEST(MakePolicies, RejectsOptionsThatDoNotApply) {
  EXPECT_THROW(policies("10/s", {Algorithm::fixed_window, 5, std::nullopt}), InvalidArgument);
  EXPECT_THROW(policies("10/s", {Algorithm::gcra, std::nullopt, 4}), InvalidArgument);
  EXPECT_THROW(policies("10/s; 100/m", {Algorithm::gcra, 20, std::nullopt}), InvalidArgument);
}

TEST(MakePolicies, RejectsValuesOutOfRange) {
  EXPECT_THROW(policies("10/s", {Algorithm::gcra, 0, std::nullopt}), InvalidArgument);
  EXPECT_THROW(policies("10/s", {Algorithm::gcra, kMaxLimit + 1, std::nullopt}), InvalidArgument);
  EXPECT_THROW(policies("10/s", {Algorithm::sliding_window, std::nullopt, 0}), InvalidArgument);
  EXPECT_THROW(policies("10/s", {Algorithm::sliding_window, std::nullopt, kMaxBuckets + 1}), InvalidArgument);
  EXPECT_THROW(policies("2000000000/s", {Algorithm::fixed_window, std::nullopt, std::nullopt}), InvalidArgument);
  // burst x interval over 2^50 µs: a million-token burst of one token a day.
  EXPECT_THROW(policies("1/day", {Algorithm::token_bucket, 1000000000, std::nullopt}), InvalidArgument);
  EXPECT_NO_THROW(policies("1000000000/3650d", {Algorithm::gcra, std::nullopt, std::nullopt}));
  // sliding_window buckets at most ~104 days wide (exact integer weights in Lua too).
  EXPECT_THROW(policies("5/3650d", {Algorithm::sliding_window, std::nullopt, std::nullopt}), InvalidArgument);
  EXPECT_NO_THROW(policies("5/1040d", {Algorithm::sliding_window, std::nullopt, std::nullopt}));
  EXPECT_NO_THROW(policies("5/3650d", {Algorithm::sliding_window, std::nullopt, 100}));
}

TEST(Describe, IsAPolicyString) {
  auto p = policies("5 per 30 seconds; 2/500ms", {});
  EXPECT_EQ(describe(p[0]), "5/30s");
  EXPECT_EQ(describe(p[1]), "2/500ms");
  EXPECT_EQ(parse_rates(describe(p[0]))[0].period_us, 30 * kS);
}

}  // namespace
}  // namespace ratewarden::testing
