// The store contract (docs/architecture.md, "Adding a store"): what every store does, run over every store URL —
// a new store is a row of kStores (and its server, if it needs one) and passes this suite or shows where it does not.
// What a store writes where (its layout) is its own test file's.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "across_processes.hpp"
#include "ratewarden/ratewarden.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

// A store under test: its name, its URL with a prefix of the test's own (its servers started on first use), and
// what its URL adds for many callers at once (32 on one hot key: a sliding log of 1,000 entries costs a server
// ~2 ms a call, so calls queue). Timeouts are long: this suite tests what stores decide, on machines as busy as
// they come (a PostgreSQL backend forked for each of 16 connections at once), not how fast.
struct StoreKind {
  const char* name;
  std::string (*url)(const std::string& prefix);
  const char* many_callers;
};

const StoreKind kStores[] = {
    {"memory", [](const std::string& prefix) { return "memory://?prefix=" + prefix; }, ""},
    {"redis", [](const std::string& prefix) { return shared_redis_server().url() + "?timeout=10s&connect_timeout=10s&prefix=" + prefix; },
     "&pool=2"},
    {"cluster",
     [](const std::string& prefix) { return shared_redis_cluster().url() + "?timeout=10s&connect_timeout=10s&prefix=" + prefix; },
     "&pool=2"},
    {"postgres", [](const std::string& prefix) { return shared_postgres_server().url("?timeout=10s&connect_timeout=10s&prefix=" + prefix); },
     "&pool=2"},
    {"sentinel",
     [](const std::string& prefix) {
       return shared_redis_sentinel().url() + "?timeout=10s&connect_timeout=10s&prefix=" + prefix;
     },
     "&pool=2"},
    {"redis_local_first",
     [](const std::string& prefix) {
       return shared_redis_server().url() + "?mode=local_first&timeout=10s&connect_timeout=10s&prefix=" + prefix;
     },
     "&pool=2"},
};

std::string kind_name(const ::testing::TestParamInfo<StoreKind>& info) { return info.param.name; }

class StoreContract : public ::testing::TestWithParam<StoreKind> {
 protected:
  // A store of this kind, on keys of this test's own.
  std::shared_ptr<Store> store() const { return open_store(url()); }
  std::string url() const {
    return GetParam().url(::testing::UnitTest::GetInstance()->current_test_info()->name() + std::string("x"));
  }
};

// Any bytes make a key, and keys that are prefixes of one another, or differ after a NUL, count apart.
TEST_P(StoreContract, KeysOfAnyBytesCountApart) {
  Limiter limiter("1/minute", store());
  const std::string nasty("a\0}{']]--\r\n\"end\\x00", 20);
  const std::vector<std::string> keys = {nasty, std::string("a\0}", 3), "a", std::string("a\0", 2), "a}", "{a}"};
  for (const std::string& k : keys) limiter.reset(k);
  for (const std::string& k : keys) EXPECT_TRUE(limiter.hit(k).allowed);
  for (const std::string& k : keys) EXPECT_FALSE(limiter.hit(k).allowed);
}

// A peek tells what a hit would and consumes nothing; a reset forgets the key under every policy.
TEST_P(StoreContract, PeekConsumesNothingAndResetForgets) {
  Limiter limiter("3/minute; 5/hour", store());
  limiter.reset("k");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.peek("k").remaining, 3);
  EXPECT_TRUE(limiter.hit("k", 3).allowed);
  const Decision denied = limiter.peek("k");
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.policy_index, 0);
  EXPECT_GT(denied.retry_after_us, 0);
  limiter.reset("k");
  const Decision fresh = limiter.hit("k");
  EXPECT_TRUE(fresh.allowed);
  EXPECT_EQ(fresh.remaining, 2);
}

// A batch of calls is decided in its order, one answer per call.
TEST_P(StoreContract, HitManyDecidesInOrder) {
  Limiter limiter("2/minute", store());
  expect_hit_many_in_order(limiter, "k", 100);
}

// A store says whether other processes share its state (traits().shared), and does as it says: a second store
// opened on the same URL sees the first one's hits exactly when it is shared.
TEST_P(StoreContract, SharedAsItsTraitsSay) {
  const std::shared_ptr<Store> store = this->store();
  Limiter first("4/hour", store);
  Limiter second("4/hour", open_store(url()));
  first.reset("k");
  second.reset("k");
  EXPECT_TRUE(first.hit("k", 3).allowed);
  EXPECT_EQ(second.peek("k").remaining, store->traits().shared ? 1 : 4);
}

// open_shared_store (what Python's open_store, Node's limiters given a URL and rw_store_open_shared use): a shared
// store's URL gives one Store while something holds it, even to threads asking at once, and none once nothing does;
// any other store is new at each call.
TEST_P(StoreContract, OpenedOncePerProcessWhenShared) {
  const std::string url = this->url();
  std::vector<std::shared_ptr<Store>> opened(8);
  std::vector<std::thread> threads;
  for (auto& store : opened) threads.emplace_back([&store, &url] { store = open_shared_store(url); });
  for (auto& t : threads) t.join();
  const bool shared = opened[0]->traits().shared;
  for (size_t i = 1; i < opened.size(); ++i) EXPECT_EQ(opened[i] == opened[0], shared);
  std::weak_ptr<Store> held_by_none = open_shared_store(GetParam().url("held_by_none"));
  EXPECT_TRUE(held_by_none.expired());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::ValuesIn(kStores), kind_name);

// 8 processes x 4 threads hit one key: a shared store that is exact admits exactly the limit, whichever exact
// algorithm; a store of one process admits the limit in each (here, every hit: each process makes 240).
class StoreContractAcrossProcesses : public ::testing::TestWithParam<std::tuple<StoreKind, Algorithm>> {};

TEST_P(StoreContractAcrossProcesses, AdmitExactlyTheLimit) {
  const auto& [kind, algorithm] = GetParam();
  const std::string url = kind.url(std::string("exact_") + std::string(algorithm_name(algorithm))) + kind.many_callers;
  // Nothing of the library runs in this process before the forks (ThreadSanitizer cannot follow a fork of a
  // process with threads): each test is a process of its own, with servers and keys of its own.
  const int64_t allowed = allowed_across_processes(url, "1000/hour", algorithm);
  const StoreTraits traits = open_store(url)->traits();
  if (traits.shared) {
    EXPECT_EQ(allowed, 1000) << url;
  } else {
    EXPECT_EQ(allowed, 8 * 4 * 60) << url;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Exact, StoreContractAcrossProcesses,
    ::testing::Combine(::testing::ValuesIn(kStores),
                       ::testing::Values(Algorithm::fixed_window, Algorithm::sliding_log, Algorithm::token_bucket,
                                         Algorithm::gcra)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::string(algorithm_name(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace ratewarden::testing
