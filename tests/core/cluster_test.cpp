// The cluster store against a real 3-master Redis Cluster on loopback (started and stopped by the tests).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
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

RedisCluster& cluster() { return shared_redis_cluster(); }

// Tests of what is decided, not of when: a timeout (10 s unless `query` sets one) that a loaded machine meets.
constexpr const char* kPatient = "timeout=10s";

std::shared_ptr<Store> cluster_store(const std::string& query = "") {
  if (query.find("timeout=") != std::string::npos) return open_store(cluster().url() + query);
  return open_store(cluster().url() + (query.empty() ? "?" : query + "&") + kPatient);
}

std::string slot_of(const std::string& key) { return cluster().slot_of(key); }

class ClusterConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(ClusterConformance, MatchesTheVectors) {
  ManualClock clock;
  ClusterStoreOptions o;
  o.seeds = {{"127.0.0.1", cluster().node(0).port()}};  // the other masters are discovered
  o.clock = clock.clock();
  o.timeout_us = 10000000;
  run_conformance_case(GetParam(), std::make_shared<ClusterStore>(o), [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, ClusterConformance, ::testing::ValuesIn(conformance_cases()),
                         conformance_case_name);

// The same cases over TLS: a cluster whose nodes (and bus) speak TLS only, found from one seed.
RedisCluster& tls_cluster() {
  static RedisCluster c(ServerOptions{true, true, false});
  return c;
}

class TlsClusterConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(TlsClusterConformance, MatchesTheVectors) {
  ManualClock clock;
  run_conformance_case(GetParam(), open_store(tls_cluster().tls_url() + "&" + kPatient, clock.clock()),
                       [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, TlsClusterConformance, ::testing::ValuesIn(conformance_cases()),
                         conformance_case_name);

// And on Unix sockets: one per master, each matched to its node by CLUSTER MYID.
RedisCluster& unix_cluster() {
  static RedisCluster c(ServerOptions{false, false, true});
  return c;
}

std::string unix_cluster_url() {
  std::string url = "redis+cluster+unix://";
  for (size_t i = 0; i < unix_cluster().size(); ++i) url += (i == 0 ? "" : ",") + unix_cluster().node(i).unix_path();
  return url;
}

class UnixClusterConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(UnixClusterConformance, MatchesTheVectors) {
  ManualClock clock;
  run_conformance_case(GetParam(), open_store(unix_cluster_url() + "?" + kPatient, clock.clock()),
                       [&](int64_t now) { clock.set(now); });
}

INSTANTIATE_TEST_SUITE_P(Vectors, UnixClusterConformance, ::testing::ValuesIn(conformance_cases()),
                         conformance_case_name);

TEST(UnixCluster, KeysReachEveryMasterThroughItsSocket) {
  Limiter limiter("5/minute", open_store(unix_cluster_url() + "?prefix=unix-spread"));
  for (int i = 0; i < 60; ++i) EXPECT_TRUE(limiter.hit("user" + std::to_string(i)).allowed);
  for (size_t n = 0; n < unix_cluster().size(); ++n)
    EXPECT_NE(unix_cluster().node(n).command({"DBSIZE"}), "0") << "master " << n << " got no key";
  // A master whose socket is not listed is unreachable: its slots fail, the others serve.
  Limiter partial("5/minute", open_store("redis+cluster+unix://" + unix_cluster().node(0).unix_path() +
                                         "?prefix=unix-partial"));
  int served = 0, failed = 0;
  for (int i = 0; i < 30; ++i) {
    try {
      partial.hit("user" + std::to_string(i));
      ++served;
    } catch (const StoreError&) {
      ++failed;
    }
  }
  EXPECT_GT(served, 0);
  EXPECT_GT(failed, 0);
  EXPECT_THROW(open_store("redis+cluster+unix://host/a.sock"), InvalidArgument);
}

// The hang of the thread-pool design: 40 limiters with 200 calls each in flight, batches among them, and callbacks
// that call back into the library synchronously. Every call settles, in seconds.
TEST(ClusterAsync, ThousandsOfCallsInFlightAllSettle) {
  auto store = cluster_store("?prefix=in-flight&timeout=5s");
  std::vector<std::shared_ptr<Limiter>> limiters;
  for (int i = 0; i < 40; ++i) limiters.push_back(std::make_shared<Limiter>(std::to_string(1000 + i) + "/minute", store));
  std::mutex mu;
  std::condition_variable cv;
  int left = 40 * 200 + 40, errors = 0;
  auto settle = [&](bool ok) {
    std::lock_guard<std::mutex> lock(mu);
    errors += ok ? 0 : 1;
    if (--left == 0) cv.notify_all();
  };
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 40; ++i) {
      const std::shared_ptr<Limiter>& limiter = limiters[i];
      const std::string key = "k" + std::to_string(round % 17);
      limiter->hit_async(key, 1, [&, limiter, round](const Decision* d, const Error*) {
        bool ok = d != nullptr;
        if (round % 50 == 0) ok = ok && limiter->hit_many({"x", "y", "z"}).size() == 3;  // sync, from the callback
        settle(ok);
      });
    }
  }
  for (int i = 0; i < 40; ++i) {
    std::vector<std::string> keys;
    for (int k = 0; k < 50; ++k) keys.push_back("batch" + std::to_string(k));
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    limiters[i]->hit_many_async(views, 1, [&](const std::vector<Decision>* d, const Error*) {
      settle(d != nullptr && d->size() == 50);
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return left == 0; })) << left << " calls never settled";
  EXPECT_EQ(errors, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Cluster, CheckReachesTheCluster) {
  EXPECT_NO_THROW(cluster_store()->check());
  EXPECT_NO_THROW(open_store(unix_cluster_url())->check());
  EXPECT_THROW(open_store("redis+cluster://127.0.0.1:" + std::to_string(free_port()) + "?timeout=100ms")->check(),
               StoreError);
}

// A key's calls in a batch are decided in the batch's order on every master, whatever the pool.
TEST(Cluster, HitManyKeepsEachKeysOrder) {
  Limiter limiter("2/minute", cluster_store("?prefix=ordered&pool=7"));
  for (int round = 0; round < 3; ++round)  // the first on new connections, then on open ones
    expect_hit_many_in_order(limiter, "round " + std::to_string(round) + ": user", 200);
}

TEST(Cluster, KeysSpreadOverEveryMaster) {
  Limiter limiter("5/minute", cluster_store("?prefix=spread"));
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("user" + std::to_string(i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  for (const Decision& d : limiter.hit_many(views)) EXPECT_TRUE(d.allowed);
  std::vector<int> per_master(cluster().size(), 0);
  for (const auto& key : keys) {
    const std::string stored = limiter.storage_key(key, 0);
    const size_t master = cluster().master_of(stored);
    ++per_master[master];
    EXPECT_EQ(cluster().node(master).command({"EXISTS", stored}), "1") << stored;
    EXPECT_NE(cluster().node(master).command({"CLUSTER", "COUNTKEYSINSLOT", slot_of(stored)}), "0");
  }
  for (size_t i = 0; i < per_master.size(); ++i) EXPECT_GT(per_master[i], 50) << "master " << i;
}

TEST(Cluster, EveryPolicyOfAKeySharesOneSlot) {
  Limiter limiter("2/second; 5/minute; 100/day", cluster_store("?prefix=multi"), with_algorithm(Algorithm::gcra));
  const std::string key("a}b{c", 5);  // braces inside the key do not split its policies
  EXPECT_TRUE(limiter.hit(key).allowed);
  EXPECT_TRUE(limiter.hit(key).allowed);
  EXPECT_FALSE(limiter.hit(key).allowed);
  EXPECT_EQ(slot_of(limiter.storage_key(key, 0)), slot_of(limiter.storage_key(key, 1)));
  EXPECT_EQ(slot_of(limiter.storage_key(key, 0)), slot_of(limiter.storage_key(key, 2)));
  limiter.reset(key);
  EXPECT_TRUE(limiter.hit(key).allowed);
}

TEST(ClusterMigration, MovingAHotSlotUnderTrafficLosesNothing) {
  // Two policies: two keys in the slot, so the migration also meets multi-key scripts (ASK, TRYAGAIN).
  // No cached scripts: an ASK must then carry the script body (a NOSCRIPT retry would lose its ASKING).
  for (size_t i = 0; i < cluster().size(); ++i) cluster().node(i).command({"SCRIPT", "FLUSH"});
  Limiter limiter("2000/hour; 100000/day", cluster_store("?prefix=migrate"));
  limiter.reset("hot");
  limiter.hit("hot");  // the keys exist before the move
  const std::string stored = limiter.storage_key("hot", 0);
  const size_t from = cluster().master_of(stored), to = (from + 1) % cluster().size();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> allowed{1}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1500 || !stop; ++i) {
        try {
          if (limiter.hit("hot").allowed) allowed++;
        } catch (const Error& e) {
          errors++;
          ADD_FAILURE() << e.what();
        }
        if (i > 20000) break;
      }
    });
  // The slot moves under traffic: once the callers are deciding (each makes 1500 calls at least, and goes on until
  // the move is done).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (allowed < 50 && errors == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(Ms(1));
  EXPECT_GE(allowed.load(), 50);
  cluster().migrate_slot_of(stored, to);
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), 2000);
  EXPECT_EQ(cluster().master_of(stored), to);
  EXPECT_FALSE(limiter.hit("hot").allowed);
}

// Whether node `observer` of the cluster flags node `node` as failed (CLUSTER NODES: "fail", not "fail?").
bool marked_failed(RedisCluster& cluster, size_t observer, size_t node) {
  const std::string nodes = cluster.node(observer).command({"CLUSTER", "NODES"});
  const std::string address = " 127.0.0.1:" + std::to_string(cluster.node(node).port()) + "@";
  const size_t at = nodes.find(address);
  if (at == std::string::npos) return false;
  const size_t flags = nodes.find(' ', at + 1) + 1;
  const std::string f = "," + nodes.substr(flags, nodes.find(' ', flags) - flags) + ",";
  return f.find(",fail,") != std::string::npos;
}

// A cluster of its own: this test stops a master.
TEST(ClusterFailure, AStoppedMasterFailsOnlyItsSlots) {
  RedisCluster own;
  Limiter limiter("1000/minute", open_store(own.url() + "?timeout=300ms&connect_timeout=300ms&prefix=down"));
  // One key per master.
  std::vector<std::string> key_on(own.size());
  for (int i = 0; std::find(key_on.begin(), key_on.end(), "") != key_on.end(); ++i) {
    const std::string key = "k" + std::to_string(i);
    std::string& slot_owner_key = key_on[own.master_of(limiter.storage_key(key, 0))];
    if (slot_owner_key.empty()) slot_owner_key = key;
  }
  for (const auto& key : key_on) EXPECT_TRUE(limiter.hit(key).allowed);
  own.node(0).kill();
  for (int round = 0; round < 2; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      limiter.hit(key_on[0]);
      ADD_FAILURE() << "a stopped master answered";
    } catch (const StoreError& e) {
      EXPECT_TRUE(e.code() == ErrorCode::store_unavailable || e.code() == ErrorCode::store_timeout) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms(1500));
    EXPECT_TRUE(limiter.hit(key_on[1]).allowed);
    EXPECT_TRUE(limiter.hit(key_on[2]).allowed);
    if (round == 0) {  // past cluster-node-timeout, the others mark it failed: the second round meets that
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!marked_failed(own, 1, 0) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(Ms(50));
      ASSERT_TRUE(marked_failed(own, 1, 0));
    }
  }
}

TEST(ClusterUrl, ParsesSeedsAndRejectsBadOnes) {
  EXPECT_EQ(open_store("redis+cluster://u:pw@a:7000,b:7001,[::1]:7002?timeout=50ms")->describe(),
            "redis+cluster://u:***@a:7000,b:7001,[::1]:7002?timeout=50ms&connect_timeout=1000ms&pool=4");
  for (const char* bad : {"redis+cluster://", "redis+cluster://a:1,", "redis+cluster://a:1/2", "redis+cluster://a:x",
                          "redis+cluster://a:1?db=2"})
    EXPECT_THROW(open_store(bad), InvalidArgument) << bad;
}

}  // namespace
}  // namespace ratewarden::testing
