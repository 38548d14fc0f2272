// Read-first (docs/algorithms.md): a denied hit, and a peek, write nothing on the server — no TTL refresh, no count
// growth — for every algorithm's script, with one and with two policies, under the server clock. Checked on a
// redis-server of the test's own, three ways: every state's DUMP (its value, byte for byte) is unchanged after a
// flood of denials, no state's PTTL grew, and INFO commandstats shows that the scripts ran no write command at all.
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

RedisServer& server() {
  static RedisServer s;
  return s;
}

// The commands INFO commandstats shows to have run since the last CONFIG RESETSTAT.
std::set<std::string> commands_run() {
  std::set<std::string> out;
  std::istringstream lines(server().command({"INFO", "commandstats"}));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cmdstat_", 0) != 0) continue;
    out.insert(line.substr(8, line.find(':') - 8));
  }
  return out;
}

struct Case {
  Algorithm algorithm;
  const char* rate;
};

class ReadFirst : public ::testing::TestWithParam<Case> {};

TEST_P(ReadFirst, DenialsAndPeeksWriteNothing) {
  LimiterOptions o;
  o.algorithm = GetParam().algorithm;
  o.prefix = "readfirst";
  Limiter limiter(GetParam().rate, open_store(server().url() + "?timeout=10s"), o);  // a loaded machine meets it
  limiter.reset("k");
  int allowed = 0;
  while (limiter.hit("k").allowed) ASSERT_LT(++allowed, 100);
  ASSERT_GT(allowed, 0);

  std::vector<std::string> dumps, ttls;
  for (size_t i = 0; i < limiter.policies().size(); ++i) {
    const std::string key = limiter.storage_key("k", i);
    dumps.push_back(server().command({"DUMP", key}));
    ttls.push_back(server().command({"PTTL", key}));
    ASSERT_FALSE(dumps.back().empty()) << key;
    ASSERT_GT(std::stoll(ttls.back()), 0) << key;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a refreshed TTL would now read higher
  server().command({"CONFIG", "RESETSTAT"});
  for (int i = 0; i < 50; ++i) {
    ASSERT_FALSE(limiter.hit("k").allowed);
    ASSERT_FALSE(limiter.peek("k").allowed);
  }
  const std::set<std::string> run = commands_run();
  const std::set<std::string> reads = {"evalsha", "eval", "script|load", "time", "get", "pttl", "hmget", "hget",
                                       "hgetall", "info", "config|resetstat"};
  for (const std::string& command : run) EXPECT_TRUE(reads.count(command)) << "a denial or a peek ran " << command;
  EXPECT_TRUE(run.count("evalsha") + run.count("eval")) << "the scripts did not run";
  for (size_t i = 0; i < limiter.policies().size(); ++i) {
    const std::string key = limiter.storage_key("k", i);
    EXPECT_EQ(server().command({"DUMP", key}), dumps[i]) << key;
    EXPECT_LT(std::stoll(server().command({"PTTL", key})), std::stoll(ttls[i])) << key;
  }
}

const Case kCases[] = {
    {Algorithm::fixed_window, "5/minute"},
    {Algorithm::fixed_window, "5/minute; 8/hour"},
    {Algorithm::sliding_log, "5/minute"},
    {Algorithm::sliding_log, "5/minute; 8/hour"},
    {Algorithm::sliding_window, "5/minute"},
    {Algorithm::sliding_window, "5/minute; 8/hour"},
    {Algorithm::token_bucket, "5/minute"},
    {Algorithm::token_bucket, "5/minute; 8/hour"},
    {Algorithm::gcra, "5/minute"},
    {Algorithm::gcra, "5/minute; 8/hour"},
};

INSTANTIATE_TEST_SUITE_P(EveryScript, ReadFirst, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const bool one = std::string(info.param.rate).find(';') == std::string::npos;
                           const std::string name(algorithm_name(info.param.algorithm));
                           return name + (one ? "_1_policy" : "_2_policies");
                         });

}  // namespace
}  // namespace ratewarden::testing
