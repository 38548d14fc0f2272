// The memory store: expiry, the max_keys bound, and exactness under threads.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int64_t kS = 1000000;

TEST(MemoryStore, EntriesExpireWhenTheyStopMattering) {
  ManualClock clock;
  auto store = memory_store(clock);
  Limiter fixed("5/10s", store);
  Limiter bucket("10/s", store, with_algorithm(Algorithm::gcra));
  fixed.hit("a");
  bucket.hit("a", 4);  // full again after 400 ms
  EXPECT_EQ(store->size(), 2);
  clock.advance(400000 - 1);
  store->sweep();
  EXPECT_EQ(store->size(), 2);
  clock.advance(1);
  store->sweep();
  EXPECT_EQ(store->size(), 1);
  clock.advance(10 * kS);
  store->sweep();
  EXPECT_EQ(store->size(), 0);
}

TEST(MemoryStore, PeekAndDenialsStoreNothing) {
  ManualClock clock;
  auto store = memory_store(clock);
  Limiter limiter("5/10s; 1/s", store);
  limiter.peek("a");
  EXPECT_EQ(store->size(), 0);
  limiter.hit("b");
  EXPECT_EQ(store->size(), 2);
  limiter.hit("b");  // denied by 1/s
  EXPECT_EQ(store->size(), 2);
}

TEST(MemoryStore, BoundedByMaxKeys) {
  ManualClock clock;
  auto store = memory_store(clock, 1000);
  Limiter limiter("5/minute", store);
  for (int i = 0; i < 20000; ++i) {
    limiter.hit("key" + std::to_string(i));
    ASSERT_LE(store->size(), 1000);
  }
  EXPECT_GE(store->size(), 900);
}

TEST(MemoryStore, ExpiredEntriesGoBeforeLiveOnes) {
  ManualClock clock;
  MemoryStoreOptions o;
  o.clock = clock.clock();
  o.max_keys = 100;
  o.shards = 1;
  auto store = std::make_shared<MemoryStore>(o);
  Limiter long_lived("1/hour", store), short_lived("1/s", store);
  for (int i = 0; i < 50; ++i) long_lived.hit("old" + std::to_string(i));  // the oldest entries
  for (int i = 0; i < 50; ++i) short_lived.hit("tmp" + std::to_string(i));
  clock.advance(2 * kS);  // every short-lived entry has expired
  for (int i = 0; i < 50; ++i) short_lived.hit("new" + std::to_string(i));
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(long_lived.hit("old" + std::to_string(i)).allowed) << i;
}

TEST(MemoryStore, EvictsTheLeastRecentlyChargedWhenNothingExpired) {
  ManualClock clock;
  MemoryStoreOptions o;
  o.clock = clock.clock();
  o.max_keys = 3;
  o.shards = 1;
  auto store = std::make_shared<MemoryStore>(o);
  Limiter limiter("2/hour", store);
  limiter.hit("a");
  limiter.hit("b");
  limiter.hit("c");
  limiter.hit("a");  // a is now the most recent
  limiter.hit("d");  // evicts b
  EXPECT_EQ(limiter.peek("a").remaining, 0);
  EXPECT_EQ(limiter.peek("b").remaining, 2);
  EXPECT_EQ(limiter.peek("c").remaining, 1);
}

TEST(MemoryStore, ADenialIsAUse) {
  ManualClock clock;
  MemoryStoreOptions o;
  o.clock = clock.clock();
  o.max_keys = 3;
  o.shards = 1;
  auto store = std::make_shared<MemoryStore>(o);
  Limiter limiter("1/hour", store);
  limiter.hit("a");
  limiter.hit("b");
  limiter.hit("c");
  EXPECT_FALSE(limiter.hit("a").allowed);  // denied, and now the most recently used
  limiter.hit("d");                        // evicts b
  EXPECT_EQ(limiter.peek("a").remaining, 0);
  EXPECT_EQ(limiter.peek("b").remaining, 1);
  EXPECT_EQ(store->stats().evictions, 1);
}

// A blocked client hammering its key while a flood of new keys churns the store keeps its block.
TEST(MemoryStore, AHammeredBlockedKeyStaysThroughAFlood) {
  ManualClock clock;
  auto store = memory_store(clock, 1000);
  Limiter limiter("1/hour", store);
  ASSERT_TRUE(limiter.hit("victim").allowed);
  for (int i = 0; i < 20000; ++i) {
    limiter.hit("new" + std::to_string(i));
    ASSERT_FALSE(limiter.hit("victim").allowed) << "forgotten after " << i << " new keys";
  }
  EXPECT_GT(store->stats().evictions, 18000);
}

// Expired entries make room before any live one goes, whichever shard holds them.
TEST(MemoryStore, ExpiredEntriesOfAnyShardGoFirst) {
  ManualClock clock;
  auto store = memory_store(clock, 1024);
  ASSERT_GT(store->shard_count(), 1u);
  Limiter long_lived("1/hour", store), short_lived("1/s", store);
  for (int i = 0; i < 512; ++i) long_lived.hit("old" + std::to_string(i));
  for (int i = 0; i < 512; ++i) short_lived.hit("tmp" + std::to_string(i));
  clock.advance(2 * kS);
  for (int i = 0; i < 512; ++i) ASSERT_TRUE(long_lived.hit("new" + std::to_string(i)).allowed);
  for (int i = 0; i < 512; ++i) EXPECT_FALSE(long_lived.hit("old" + std::to_string(i)).allowed) << i;
  EXPECT_EQ(store->stats().evictions, 0);
  EXPECT_EQ(store->stats().keys, 1024);
}

// Expiries that grow (GCRA's on every hit) are found where they are now, not where they were first placed.
TEST(MemoryStore, GrowingExpiriesAreNotMistakenForExpired) {
  ManualClock clock;
  auto store = memory_store(clock, 100);
  Limiter gcra("10/s", store, with_algorithm(Algorithm::gcra));
  for (int i = 0; i < 100; ++i) gcra.hit("g" + std::to_string(i));  // each full again after 100 ms
  for (int step = 0; step < 5; ++step) {
    clock.advance(90000);
    for (int i = 0; i < 100; ++i) gcra.hit("g" + std::to_string(i), 5);  // pushes each expiry 500 ms on
  }
  Limiter other("1/hour", store);
  other.hit("newcomer");  // nothing has expired: one live entry must go
  EXPECT_EQ(store->stats().evictions, 1);
  EXPECT_EQ(store->stats().keys, 100);
}

// A limiter hands the store its keys in parts (hit, peek) or whole (hit_many, reset): both name the same entries,
// short keys and keys whose last 8 bytes straddle the parts included.
TEST(MemoryStore, KeysInPartsAndWholeKeysAreTheSameEntries) {
  ManualClock clock;
  auto store = memory_store(clock);
  const Policy policy = make_policies(parse_rates("5/hour"), {})[0];
  auto call = [&](const std::string* whole, std::string_view head, std::string_view tag, const std::string* suffix) {
    StoreCall call;
    call.policies = &policy;
    call.keys = whole;
    call.count = 1;
    call.tag = tag;
    call.key_head = head;
    call.key_suffixes = suffix;
    return store->decide(call);
  };
  for (const char* tag : {"x", "user:42", "a-longer-user-key"}) {
    for (const std::string& suffix : {std::string("}"), std::string("}:s"), std::string("}:v3:fixed_window:5:3600000")}) {
      const std::string whole = std::string("p:{") + tag + suffix;
      EXPECT_EQ(call(nullptr, "p:{", tag, &suffix).remaining, 4) << whole;
      EXPECT_EQ(call(&whole, "", tag, nullptr).remaining, 3) << whole;
      EXPECT_EQ(call(nullptr, "p:{", tag, &suffix).remaining, 2) << whole;
      store->reset(&whole, 1, tag);
      EXPECT_EQ(call(nullptr, "p:{", tag, &suffix).remaining, 4) << whole;
    }
  }
  Limiter limiter("3/hour", store);
  limiter.hit("k");
  EXPECT_EQ(limiter.hit_many({"k"})[0].remaining, 1);
  EXPECT_EQ(limiter.peek("k").remaining, 1);
}

// Each limiter names its key parts with a form of its own, and an entry matched whole under a form compares only the
// key under it from then on (StoreCall::form). Limiters of one policy still share a key's state, whichever came
// first or is gone; a policy whose storage keys have the very same length never shares one.
TEST(MemoryStore, LimitersOfOnePolicyShareAStateAndOthersNever) {
  ManualClock clock;
  auto store = memory_store(clock);
  auto a = std::make_unique<Limiter>("5/hour", store);
  Limiter b("5/hour", store), c("6/hour", store);
  ASSERT_EQ(a->storage_key("k", 0).size(), c.storage_key("k", 0).size());
  EXPECT_EQ(a->hit("k").remaining, 4);
  EXPECT_EQ(b.hit("k").remaining, 3);
  EXPECT_EQ(c.hit("k").remaining, 5);
  EXPECT_EQ(a->hit("k").remaining, 2);
  EXPECT_EQ(c.hit("j").remaining, 5);  // another key of the same length
  EXPECT_EQ(a->hit("j").remaining, 4);
  EXPECT_EQ(b.hit("kk").remaining, 4);
  a.reset();
  Limiter d("5/hour", store);  // made after a is gone: a form never seen, the same state
  EXPECT_EQ(d.hit("k").remaining, 1);
  EXPECT_EQ(c.hit("k").remaining, 4);
  EXPECT_EQ(b.hit("k").remaining, 0);
  EXPECT_FALSE(d.hit("k").allowed);
  EXPECT_EQ(c.hit_many({"k"})[0].remaining, 3);  // whole keys find the same entries
  d.reset("k");
  EXPECT_EQ(b.hit("k").remaining, 4);
  EXPECT_EQ(c.peek("k").remaining, 3);
}

TEST(MemoryStore, AClockBeforeItsOriginStillWorks) {
  ManualClock clock(-5500000);  // an injected clock may start anywhere
  Limiter limiter("3/s", memory_store(clock), with_algorithm(Algorithm::sliding_window));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.hit("k").allowed);
  Decision denied = limiter.hit("k");
  EXPECT_FALSE(denied.allowed);
  clock.advance(denied.retry_after_us);
  EXPECT_TRUE(limiter.hit("k").allowed);
}

struct Hammer {
  Algorithm algorithm;
  const char* rate;
};

class ThreadsOnOneKey : public ::testing::TestWithParam<Hammer> {};

// Real clock, 8 threads: the exact algorithms admit exactly `limit` (the periods are too long to refill meanwhile).
TEST_P(ThreadsOnOneKey, AdmitExactlyTheLimit) {
  Limiter limiter(GetParam().rate, std::make_shared<MemoryStore>(), with_algorithm(GetParam().algorithm));
  std::atomic<int64_t> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i)
        if (limiter.hit("hot").allowed) allowed.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 1000);
}

INSTANTIATE_TEST_SUITE_P(Exact, ThreadsOnOneKey,
                         ::testing::Values(Hammer{Algorithm::fixed_window, "1000/hour"},
                                           Hammer{Algorithm::sliding_log, "1000/hour"},
                                           Hammer{Algorithm::token_bucket, "1000 per 1000 hours"},
                                           Hammer{Algorithm::gcra, "1000 per 1000 hours"}));

TEST(MemoryStore, ThreadsOnManyKeysStayConsistent) {
  auto store = std::make_shared<MemoryStore>(MemoryStoreOptions{5000, 16, {}});
  Limiter limiter("3/hour; 10/day", store, with_algorithm(Algorithm::sliding_window));
  std::vector<std::thread> threads;
  std::atomic<int64_t> allowed{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        if (limiter.hit("k" + std::to_string((i * 7 + t) % 500)).allowed) allowed.fetch_add(1);
        if (i % 100 == 0) store->sweep();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 500 * 3);
  EXPECT_LE(store->size(), 5000);
}

// Threads inserting, resetting and evicting at once at a small bound over several shards: the bound holds, every
// entry is counted once, and nothing waits forever (an insert that finds its shard empty takes from another).
TEST(MemoryStore, ThreadsAtTheBoundKeepItExactly) {
  auto store = std::make_shared<MemoryStore>(MemoryStoreOptions{256, 4, {}});
  ASSERT_EQ(store->shard_count(), 4u);
  Limiter limiter("1/hour", store);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        const std::string key = "t" + std::to_string(t) + ":" + std::to_string(i);
        limiter.hit(key);
        if (i % 7 == 0) limiter.reset(key);
      }
    });
  }
  for (auto& th : threads) th.join();
  const StoreStats stats = store->stats();
  EXPECT_LE(stats.keys, 256);
  EXPECT_GT(stats.evictions, 10000);
  EXPECT_EQ(stats.keys, store->size());
  for (int i = 0; i < 300; ++i) limiter.hit("after" + std::to_string(i));
  EXPECT_EQ(store->stats().keys, 256);
}

}  // namespace
}  // namespace ratewarden::testing
