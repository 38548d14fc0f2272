// Runs the shared conformance vectors (tests/conformance/vectors.json) against the memory store.
#include <cctype>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using nlohmann::json;

const json& vectors() {
  static const json doc = [] {
    std::ifstream in(RATEWARDEN_VECTORS);
    if (!in) throw std::runtime_error("cannot open " RATEWARDEN_VECTORS);
    return json::parse(in);
  }();
  return doc;
}

std::vector<size_t> case_indexes() {
  std::vector<size_t> out;
  for (size_t i = 0; i < vectors().at("cases").size(); ++i) out.push_back(i);
  return out;
}

LimiterOptions options_of(const json& c) {
  LimiterOptions options;
  options.algorithm = parse_algorithm(c.at("algorithm").get<std::string>());
  if (!c.at("burst").is_null()) options.burst = c.at("burst").get<int64_t>();
  if (!c.at("buckets").is_null()) options.buckets = c.at("buckets").get<int32_t>();
  return options;
}

class Conformance : public ::testing::TestWithParam<size_t> {};

TEST_P(Conformance, MemoryStore) {
  const json& c = vectors().at("cases").at(GetParam());
  SCOPED_TRACE(c.at("name").get<std::string>());
  const int64_t base = vectors().at("base_us").get<int64_t>();
  ManualClock clock(base);
  Limiter limiter(c.at("policy").get<std::string>(), memory_store(clock), options_of(c));
  size_t n = 0;
  for (const json& step : c.at("steps")) {
    SCOPED_TRACE("step " + std::to_string(n++) + ": " + step.dump());
    clock.set(base + step.at("t").get<int64_t>());
    const std::string op = step.at("op").get<std::string>();
    const std::string key = step.at("key").get<std::string>();
    if (op == "reset") {
      limiter.reset(key);
      continue;
    }
    const int64_t cost = step.at("cost").get<int64_t>();
    Decision d = op == "hit" ? limiter.hit(key, cost) : limiter.peek(key, cost);
    const json& e = step.at("expect");
    EXPECT_EQ(d.allowed, e.at("allowed").get<bool>());
    EXPECT_EQ(d.limit, e.at("limit").get<int64_t>());
    EXPECT_EQ(d.remaining, e.at("remaining").get<int64_t>());
    EXPECT_EQ(d.reset_after_us, e.at("reset_after").get<int64_t>());
    EXPECT_EQ(d.retry_after_us, e.at("retry_after").get<int64_t>());
    EXPECT_EQ(d.used, e.at("used").get<int64_t>());
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string name = vectors().at("cases").at(info.param).at("name").get<std::string>();
  std::string out = std::to_string(info.param) + "_";
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

INSTANTIATE_TEST_SUITE_P(Vectors, Conformance, ::testing::ValuesIn(case_indexes()), case_name);

TEST(ConformanceFile, CoversEveryAlgorithm) {
  std::set<std::string> seen;
  for (const json& c : vectors().at("cases")) seen.insert(c.at("algorithm").get<std::string>());
  EXPECT_EQ(seen, (std::set<std::string>{"fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"}));
}

}  // namespace
}  // namespace ratewarden::testing
