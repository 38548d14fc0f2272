// Runs async_fork_test.c against a real Redis server and a real 3-master cluster (tests/core/redis_server.hpp).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "redis_server.hpp"

namespace ratewarden::testing {
namespace {

RedisServer& server() {
  static RedisServer s;
  return s;
}

RedisCluster& cluster() {
  static RedisCluster c;
  return c;
}

// A generous timeout: thousands of calls sent at once queue at the server, and these tests are about every call
// settling (and getting its own answer), not about latency on a busy machine.
int run(const std::string& mode, const std::string& url) {
  const std::string command = std::string(RW_ASYNC_FORK_TEST) + " " + mode + " '" + url + "?timeout=10s'";
  return std::system(command.c_str());
}

TEST(CapiShared, CallbacksThatCallBackSettleOnRedis) { EXPECT_EQ(run("callbacks", server().url()), 0); }
TEST(CapiShared, CallbacksThatCallBackSettleOnACluster) { EXPECT_EQ(run("callbacks", cluster().url()), 0); }
TEST(CapiShared, ForkedChildrenGetTheirOwnDecisionsOnRedis) { EXPECT_EQ(run("fork", server().url()), 0); }
TEST(CapiShared, ForkedChildrenGetTheirOwnDecisionsOnACluster) { EXPECT_EQ(run("fork", cluster().url()), 0); }

}  // namespace
}  // namespace ratewarden::testing
