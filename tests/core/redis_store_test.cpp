// The Redis store against real redis-server processes on loopback (started and stopped by the tests).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conformance.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using Ms = std::chrono::milliseconds;
constexpr int64_t kS = 1000000;

RedisServer& server() {
  static RedisServer s;
  return s;
}

// Tests of what is decided, not of when: a timeout (10 s unless `query` sets one) that a loaded machine meets.
std::shared_ptr<Store> redis(const std::string& query = "") {
  if (query.find("timeout=") != std::string::npos) return open_store(server().url() + query);
  return open_store(server().url() + (query.empty() ? "?" : query + "&") + "timeout=10s");
}

std::shared_ptr<Store> redis_with_clock(const ManualClock& clock) {
  RedisStoreOptions o;
  o.port = server().port();
  o.clock = clock.clock();
  o.timeout_us = 10000000;  // tests of what is decided, not of when: a timeout that a loaded machine meets
  return std::make_shared<RedisStore>(o);
}

template <class F>
int64_t elapsed_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - t0).count();
}

class RedisConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(RedisConformance, MatchesTheVectors) {
  ManualClock clock;
  run_conformance_case(GetParam(), redis_with_clock(clock), [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, RedisConformance, ::testing::ValuesIn(conformance_cases()),
                         conformance_case_name);

// Issue 12: the scripts name the policy a decision reports, as the memory store does (limiter_test.cpp).
TEST(RedisStore, DecisionNamesThePolicyItReports) {
  ManualClock clock;
  LimiterOptions o;
  o.prefix = "policy-index";
  Limiter limiter("10/second; 10 per 2 seconds", redis_with_clock(clock), o);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.hit("k").policy_index, 0);  // equal remaining: the first policy
  clock.advance(1500000);
  const Decision d = limiter.hit("k");
  EXPECT_EQ(d.policy_index, 1);
  EXPECT_EQ(d.remaining, 4);
}

// At the widest bucket allowed (~104 days) the Lua arithmetic must still be exact: both stores agree.
TEST(RedisStore, AgreesWithMemoryAtTheBucketWidthBound) {
  LimiterOptions o = with_algorithm(Algorithm::sliding_window);
  o.buckets = 1;
  o.prefix = "widest";
  ManualClock redis_clock, memory_clock;
  Limiter on_redis("2/2501h", redis_with_clock(redis_clock), o);
  Limiter in_memory("2/2501h", memory_store(memory_clock), o);
  const int64_t w = on_redis.policies()[0].bucket_width_us();
  on_redis.reset("k");
  const int64_t start = (redis_clock.now() / w + 1) * w;
  for (int64_t t : {start - 1, start - 1, start, start + 1, start + w / 3, start + w - 1}) {
    redis_clock.set(t);
    memory_clock.set(t);
    EXPECT_EQ(on_redis.hit("k"), in_memory.hit("k")) << t - start;
  }
}

TEST(RedisStore, UsesTheServerClockByDefault) {
  Limiter limiter("2/minute", redis());
  limiter.reset("clock");
  Decision d = limiter.hit("clock");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.reset_after_us, 60 * kS);
  limiter.hit("clock");
  Decision denied = limiter.hit("clock");
  EXPECT_FALSE(denied.allowed);
  EXPECT_GT(denied.retry_after_us, 59 * kS);
  EXPECT_LE(denied.retry_after_us, 60 * kS);
}

// Under the server clock a fixed window is a counter whose TTL is the window (docs/key-format.md): the times it
// reports come from the TTL, never early, and the window ends when the key does.
TEST(RedisStore, ServerClockFixedWindowIsTheKeysTtl) {
  for (const char* rate : {"3 per 300ms", "3 per 300ms; 5 per 10 seconds"}) {
    SCOPED_TRACE(rate);
    Limiter limiter(rate, redis("?prefix=fwttl"));
    limiter.reset("k");
    for (int i = 0; i < 3; ++i) {
      Decision d = limiter.hit("k");
      EXPECT_TRUE(d.allowed);
      EXPECT_EQ(d.remaining, 2 - i);
      EXPECT_EQ(d.used, i + 1);
      EXPECT_EQ(d.limit, 3);
      EXPECT_GT(d.reset_after_us, 200 * 1000);
      EXPECT_LE(d.reset_after_us, 300 * 1000);
    }
    Decision peek = limiter.peek("k");
    EXPECT_FALSE(peek.allowed);
    Decision denied = limiter.hit("k");
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.remaining, 0);
    EXPECT_EQ(denied.used, 3);
    EXPECT_GT(denied.retry_after_us, 0);
    EXPECT_LE(denied.retry_after_us, 300 * 1000);
    EXPECT_EQ(denied.retry_after_us, denied.reset_after_us);
    const std::string key = limiter.storage_key("k", 0);
    EXPECT_EQ(server().command({"GET", key}), "3");  // denials wrote nothing
    std::this_thread::sleep_for(std::chrono::microseconds(denied.retry_after_us));
    Decision again = limiter.hit("k");
    EXPECT_TRUE(again.allowed) << "a hit at now + retry_after is allowed";
    if (std::string(rate).find(';') == std::string::npos) {
      EXPECT_EQ(again.remaining, 2);
      EXPECT_EQ(again.reset_after_us, 300 * 1000);
    }
  }
}

// A one-policy fast path replies with one integer (prelude.lua); where that integer would not be exact (a fixed
// window of the largest limit over 10 years: left_ms * (limit + 1) >= 2^53) it replies with the table, and the
// decision is the same.
TEST(RedisStore, ServerClockFixedWindowOfAHugeLimit) {
  constexpr int64_t kPeriodUs = 3650LL * 86400 * kS;
  Limiter limiter("1000000000 per 3650d", redis("?prefix=fwhuge"));
  limiter.reset("k");
  Decision d = limiter.hit("k", 3);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.limit, 1000000000);
  EXPECT_EQ(d.remaining, 1000000000 - 3);
  EXPECT_EQ(d.used, 3);
  EXPECT_EQ(d.reset_after_us, kPeriodUs);
  d = limiter.hit("k", 2);
  EXPECT_EQ(d.remaining, 1000000000 - 5);
  EXPECT_GT(d.reset_after_us, kPeriodUs - 10 * kS);
  EXPECT_LE(d.reset_after_us, kPeriodUs);
}

// Several fixed-window policies under the server clock reply with one integer naming the policy reported (or the
// table where it is not exact): every field of the decision survives it, an empty window's too.
TEST(RedisStore, ServerClockFixedWindowSeveralPolicies) {
  Limiter limiter("3 per 300s; 5 per 1000s", redis("?prefix=fwmulti"));
  limiter.reset("k");
  EXPECT_EQ(limiter.peek("k"), (Decision{true, 3, 3, 0, 0, 0, 0}));  // nothing counted: no reset
  for (int i = 0; i < 3; ++i) {
    const Decision d = limiter.hit("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 2 - i);
    EXPECT_EQ(d.used, i + 1);
    EXPECT_EQ(d.policy_index, 0);
    EXPECT_GT(d.reset_after_us, 290 * kS);
    EXPECT_LE(d.reset_after_us, 300 * kS);
  }
  const Decision denied = limiter.hit("k");
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.policy_index, 0);
  EXPECT_EQ(denied.used, 3);
  EXPECT_EQ(denied.retry_after_us, denied.reset_after_us);
  EXPECT_GT(denied.retry_after_us, 290 * kS);
  // The second policy reported: its remaining is the lowest once the first's window is given more room.
  Limiter other("5 per 300s; 2 per 1000s", redis("?prefix=fwmulti2"));
  other.reset("k");
  Decision d = other.hit("k");
  EXPECT_EQ(d.policy_index, 1);
  EXPECT_EQ(d.limit, 2);
  EXPECT_EQ(d.remaining, 1);
  EXPECT_EQ(d.reset_after_us, 1000 * kS);
  other.hit("k");
  d = other.hit("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy_index, 1);
  EXPECT_EQ(d.used, 2);
  // Where x * n + index is not exact below 2^53, the table, with the same decision.
  Limiter huge("1000000000 per 3650d; 1000000000 per 3649d", redis("?prefix=fwmultihuge"));
  huge.reset("k");
  d = huge.hit("k", 3);
  EXPECT_EQ(d, (Decision{true, 1000000000, 1000000000 - 3, 3650LL * 86400 * kS, 0, 3, 0}));
}

// Under the server clock a sliding window's hits in its newest bucket rewrite only the state's head (SETRANGE): the
// TTL set when the bucket opened stays. One integer carries an allowed decision where it is exact; the largest limit
// per hour (reset_after * (limit + 1) >= 2^53) replies with the table, and decides the same.
TEST(RedisStore, ServerClockSlidingWindow) {
  LimiterOptions o = with_algorithm(Algorithm::sliding_window);
  o.buckets = 2;
  Limiter limiter("3 per 2000s", redis("?prefix=swclock"), o);  // buckets of 1,000 s
  limiter.reset("k");
  const std::string key = limiter.storage_key("k", 0);
  for (int i = 0; i < 3; ++i) {
    const Decision d = limiter.hit("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 2 - i);
    EXPECT_EQ(d.used, i + 1);
    EXPECT_GT(d.reset_after_us, 2000 * kS);  // (n + 1) * w - (now - bucket start)
    EXPECT_LE(d.reset_after_us, 3000 * kS);
  }
  EXPECT_EQ(server().command({"TYPE", key}), "string");
  EXPECT_EQ(server().command({"STRLEN", key}), "32");  // the head alone: no older bucket counted
  const int64_t ttl = std::stoll(server().command({"PTTL", key}));
  EXPECT_GT(ttl, 2000 * 1000);
  EXPECT_LE(ttl, 3000 * 1000);
  const Decision denied = limiter.hit("k");
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.remaining, 0);
  EXPECT_GT(denied.retry_after_us, 1000 * kS);  // the first bucket's hits weigh in until the window passes it
  EXPECT_LE(denied.retry_after_us, 3000 * kS);

  Limiter huge("1000000000/hour", redis("?prefix=swhuge"), with_algorithm(Algorithm::sliding_window));
  huge.reset("k");
  Decision d = huge.hit("k", 3);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1000000000 - 3);
  EXPECT_EQ(d.used, 3);
  const int64_t w = huge.policies()[0].bucket_width_us();
  EXPECT_GT(d.reset_after_us, 10 * w);
  EXPECT_LE(d.reset_after_us, 11 * w);
  d = huge.peek("k", 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1000000000 - 3);
}

TEST(RedisStore, KeysOfAnyBytesStayInTheirPlace) {
  Limiter limiter("1/minute", redis("?prefix=bin"));
  const std::string nasty("a\0}{']]--\r\n\"end", 16);
  limiter.reset(nasty);
  EXPECT_TRUE(limiter.hit(nasty).allowed);
  EXPECT_FALSE(limiter.hit(nasty).allowed);
  EXPECT_TRUE(limiter.hit(std::string("a\0}", 3)).allowed);
  EXPECT_EQ(server().command({"EXISTS", limiter.storage_key(nasty, 0)}), "1");
  EXPECT_EQ(server().command({"TYPE", limiter.storage_key(nasty, 0)}), "string");
}

// A key's calls in a batch are decided in the batch's order, whatever the pool: the batch leaves on one connection
// (with pool=3 or 7 its calls on one key once went on different connections, and the third could pass the second).
TEST(RedisStore, HitManyIsOnePipeline) {
  for (int pool : {1, 3, 4, 7}) {
    Limiter limiter("2/minute", redis("?prefix=many" + std::to_string(pool) + "&pool=" + std::to_string(pool)));
    expect_hit_many_in_order(limiter, "pool " + std::to_string(pool) + ": k", 100);
  }
}

// Every key written carries a TTL no longer than its algorithm needs.
TEST(RedisStore, EveryKeyHasABoundedTtl) {
  server().command({"FLUSHALL"});
  struct Case {
    Algorithm algorithm;
    const char* rate;
    int64_t max_ttl_ms;
  };
  const Case cases[] = {{Algorithm::fixed_window, "5/10s", 10000},     {Algorithm::sliding_log, "5/10s", 10000},
                        {Algorithm::sliding_window, "5/10s", 11000},   {Algorithm::token_bucket, "5/10s", 10000},
                        {Algorithm::gcra, "5/10s", 10000}};
  auto store = redis("?prefix=ttl");
  for (const Case& c : cases) {
    Limiter limiter(c.rate, store, with_algorithm(c.algorithm));
    for (int i = 0; i < 40; ++i) {
      limiter.hit("user" + std::to_string(i % 7), 1 + i % 3);
      limiter.peek("peek-only" + std::to_string(i));
    }
  }
  std::string cursor = "0";
  int keys = 0;
  do {
    std::string reply = server().command({"SCAN", cursor, "COUNT", "1000"});
    std::istringstream lines(reply);
    std::getline(lines, cursor);
    for (std::string key; std::getline(lines, key);) {
      ++keys;
      EXPECT_EQ(key.find("peek-only"), std::string::npos) << "a peek wrote " << key;
      const int64_t ttl = std::stoll(server().command({"PTTL", key}));
      int64_t max_ttl = 0;
      for (const Case& c : cases)
        if (key.find(std::string(algorithm_name(c.algorithm)) + ":") != std::string::npos) max_ttl = c.max_ttl_ms;
      EXPECT_GT(ttl, 0) << key;
      EXPECT_LE(ttl, max_ttl + 1) << key;
    }
  } while (cursor != "0");
  EXPECT_EQ(keys, 5 * 7);
}

TEST(RedisStore, SlidingLogNeverHoldsMoreThanTheLimit) {
  Limiter limiter("20/minute", redis("?prefix=log"), with_algorithm(Algorithm::sliding_log));
  limiter.reset("k");
  for (int i = 0; i < 200; ++i) limiter.hit("k");
  // The totals n, h, t, l and one field per entry.
  EXPECT_EQ(server().command({"HLEN", limiter.storage_key("k", 0)}), "24");
}

TEST(RedisStore, ScriptFlushNeverReachesTheCaller) {
  Limiter limiter("1000000/hour", redis("?prefix=flush"));
  std::atomic<bool> stop{false};
  std::thread flusher([&] {
    while (!stop) {
      server().command({"SCRIPT", "FLUSH"});
      std::this_thread::sleep_for(Ms(2));
    }
  });
  std::vector<std::thread> callers;
  std::atomic<int> errors{0}, calls{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        try {
          limiter.hit("k" + std::to_string(i % 10));
          calls++;
        } catch (const Error&) {
          errors++;
        }
      }
    });
  for (auto& c : callers) c.join();
  stop = true;
  flusher.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(calls.load(), 2000);
}

// A server of its own: these tests kill it.
TEST(RedisFailures, KillAndRestart) {
  RedisServer own;
  Limiter limiter("100/minute", open_store(own.url() + "?timeout=300ms&connect_timeout=300ms&circuit_backoff=100ms"));
  EXPECT_TRUE(limiter.hit("k").allowed);
  own.kill();
  for (int i = 0; i < 5; ++i) {
    int64_t ms = elapsed_ms([&] {
      try {
        limiter.hit("k");
        ADD_FAILURE() << "a dead server answered";
      } catch (const StoreError& e) {
        EXPECT_TRUE(e.code() == ErrorCode::store_unavailable || e.code() == ErrorCode::store_timeout) << e.what();
      }
    });
    EXPECT_LT(ms, 1000);
  }
  own.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the circuit opened: one back-off period
  Decision d = limiter.hit("k");  // the same limiter reconnects by itself
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 99);  // a fresh server: the old state died with the old one
}

// A restart between two calls: the pooled connections are dead, and the next calls get fresh ones without an error.
TEST(RedisFailures, ARestartBetweenCallsIsInvisible) {
  RedisServer own;
  Limiter limiter("100/minute", open_store(own.url() + "?pool=4"));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(limiter.hit("k").allowed);  // every pooled connection is open
  own.kill();
  own.start();
  for (int i = 0; i < 8; ++i) EXPECT_NO_THROW(EXPECT_TRUE(limiter.hit("k").allowed)) << i;
}

TEST(RedisFailures, RefusedConnection) {
  Limiter limiter("1/s", open_store("redis://127.0.0.1:" + std::to_string(free_port())));
  try {
    limiter.hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_unavailable);
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
  LimiterOptions open;
  open.on_store_error = OnStoreError::allow;
  EXPECT_TRUE(Limiter("1/s", limiter.store(), open).hit("k").allowed);
  LimiterOptions closed;
  closed.on_store_error = OnStoreError::deny;
  EXPECT_FALSE(Limiter("1/s", limiter.store(), closed).hit("k").allowed);
}

// A timeout long enough for the answers of a busy machine: the server that does not answer is stopped, not slow.
TEST(RedisFailures, SlowServerTimesOut) {
  RedisServer own;
  Limiter limiter("100/minute", open_store(own.url() + "?timeout=1s&pool=1"));
  EXPECT_TRUE(limiter.hit("k").allowed);
  // Stopped (SIGSTOP, done when stop() returns), the server reads nothing and answers nothing until it goes on; then
  // it answers the call that timed out, late, on the same connection: the answer after that is the next call's.
  own.stop();
  int64_t ms = elapsed_ms([&] {
    try {
      limiter.hit("k");
      ADD_FAILURE() << "answered while stopped";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), ErrorCode::store_timeout) << e.what();
    }
  });
  EXPECT_GE(ms, 1000);
  EXPECT_LT(ms, 3000);
  own.cont();
  EXPECT_TRUE(limiter.hit("k").allowed);
}

TEST(RedisFailures, OutOfMemoryIsAStoreError) {
  RedisServer own({"--maxmemory", "1", "--maxmemory-policy", "noeviction"});
  Limiter limiter("100/minute", open_store(own.url()));
  try {
    limiter.hit("k");
    FAIL() << "a write succeeded over maxmemory";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_error);
    EXPECT_NE(std::string(e.what()).find("OOM"), std::string::npos) << e.what();
  }
}

TEST(RedisFailures, ReadOnlyReplicaIsAStoreError) {
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(server().port())});
  Limiter limiter("100/minute", open_store(replica.url()));
  try {
    limiter.hit("k");
    FAIL() << "a replica accepted a write";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_error);
    EXPECT_NE(std::string(e.what()).find("READONLY"), std::string::npos) << e.what();
  }
}

// Fault injection a real server cannot produce: a peer that answers `response` to the first command, then closes.
class FakeServer {
 public:
  explicit FakeServer(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 1);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      if (c >= 0 && ::read(c, buf, sizeof buf) > 0) {
        ssize_t w = ::write(c, response_.data(), response_.size());
        (void)w;
      }
      std::this_thread::sleep_for(Ms(50));
      if (c >= 0) ::close(c);
    });
  }
  ~FakeServer() {
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "?timeout=500ms&pool=1"; }

 private:
  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(RedisFailures, ProtocolErrorIsAStoreError) {
  FakeServer fake("garbage\r\n");
  try {
    Limiter("1/s", open_store(fake.url())).hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_error) << e.what();
  }
}

TEST(RedisFailures, ServerDyingMidReplyIsAStoreError) {
  FakeServer fake("*6\r\n:1\r\n:5\r\n");  // allowed... and then nothing
  int64_t ms = elapsed_ms([&] {
    try {
      Limiter("1/s", open_store(fake.url())).hit("k");
      ADD_FAILURE() << "a partial reply became a decision";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), ErrorCode::store_unavailable) << e.what();
    }
  });
  EXPECT_LT(ms, 500);
}

TEST(RedisAuth, PasswordAndAclUser) {
  RedisServer own({"--requirepass", "s3cret-pw", "--user", "alice", "on", ">alice-pw", "~*", "&*", "+@all"});
  EXPECT_TRUE(Limiter("1/s", open_store("redis://:s3cret-pw@127.0.0.1:" + std::to_string(own.port()))).hit("k").allowed);
  EXPECT_TRUE(
      Limiter("1/s", open_store("redis://alice:alice-pw@127.0.0.1:" + std::to_string(own.port()))).hit("k2").allowed);
  auto wrong = open_store("redis://alice:not-the-pw@127.0.0.1:" + std::to_string(own.port()));
  EXPECT_EQ(wrong->describe().find("not-the-pw"), std::string::npos) << wrong->describe();
  try {
    Limiter("1/s", wrong).hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find("not-the-pw"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  auto none = open_store("redis://127.0.0.1:" + std::to_string(own.port()));
  EXPECT_THROW(Limiter("1/s", none).hit("k"), StoreError);  // NOAUTH
  // A handshake the server refuses counts toward the circuit breaker (docs/deployment.md): no call gets through it.
  // Three refusals (the server's error), then the circuit is open: the next call is not tried.
  Limiter refused("1/s", open_store("redis://alice:not-the-pw@127.0.0.1:" + std::to_string(own.port()) +
                                    "?circuit_failures=3&circuit_backoff=10s"));
  for (int i = 0; i < 3; ++i) {
    try {
      refused.hit("k");
      FAIL();
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), ErrorCode::store_error) << i << ": " << e.what();
    }
  }
  try {
    refused.hit("k");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), ErrorCode::store_unavailable) << e.what();
  }
}

TEST(RedisUrl, ParsesOptionsAndRejectsBadOnes) {
  EXPECT_EQ(open_store("redis://u:pw@localhost:6390/2?timeout=50ms&pool=3&connect_timeout=2s")->describe(),
            "redis://u:***@localhost:6390/2?timeout=50ms&connect_timeout=2000ms&pool=3");
  EXPECT_EQ(open_store("redis://[::1]")->describe(), "redis://[::1]:6379/0?timeout=250ms&connect_timeout=1000ms&pool=4");
  EXPECT_EQ(open_store("redis://h?prefix=app")->key_prefix(), "app");
  for (const char* bad : {"redis://", "redis://h:0", "redis://h:99999", "redis://h:x", "redis://h/abc",
                          "redis://h?timeout=0", "redis://h?timeout=5h", "redis://h?pool=0", "redis://h?pool=65",
                          "redis://h?colour=red", "redis://a:1,b:2", "redis://h?prefix=a{b",
                          "redis://h?circuit_backoff=0", "redis+cluster://a:1,", "redis+cluster://a:1,,b:2",
                          "redis+cluster://a:1/0", "redis+cluster+unix:///a.sock,", "redis+cluster+unix:///a.sock,b.sock"})
    EXPECT_THROW(open_store(bad), InvalidArgument) << bad;
}

}  // namespace
}  // namespace ratewarden::testing
