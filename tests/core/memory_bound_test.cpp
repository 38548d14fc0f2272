// The memory store's bound under floods and chosen keys: no live key is forgotten while the store holds fewer than
// max_keys entries, whatever the keys; memory stays flat when the flood is larger than the bound. (Heavy: not in
// the ThreadSanitizer subset, whose filter matches "MemoryStore".)
#include <time.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

int64_t allowed_count(Limiter& limiter, const std::vector<std::string>& keys) {
  int64_t allowed = 0;
  for (const std::string& key : keys) allowed += limiter.hit(key).allowed ? 1 : 0;
  return allowed;
}

std::vector<std::string> numbered_keys(const char* prefix, int64_t n) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

TEST(MemoryBound, TheDefaultBoundRemembersAMillionKeys) {
  auto store = open_store("memory://");
  Limiter limiter("1/hour", store);
  const std::vector<std::string> keys = numbered_keys("user:", 1000000);
  EXPECT_EQ(allowed_count(limiter, keys), 1000000);
  EXPECT_EQ(allowed_count(limiter, keys), 0) << "a key was forgotten below the bound";
  const StoreStats stats = store->stats();
  EXPECT_EQ(stats.keys, 1000000);
  EXPECT_EQ(stats.max_keys, 1000000);
  EXPECT_EQ(stats.evictions, 0);
}

// Keys aimed at one shard, as an attacker who knew the store's hash key would pick them: 90% of the bound in one
// of 256 shards is remembered, and so is the rest of the bound spread elsewhere.
TEST(MemoryBound, KeysPiledIntoOneShardAreRemembered) {
  auto store = std::make_shared<MemoryStore>(MemoryStoreOptions{20000, 256, {}});
  ASSERT_EQ(store->shard_count(), 256u);
  Limiter limiter("1/hour", store);
  std::vector<std::string> piled, spread;
  for (int64_t i = 0; piled.size() < 18000 || spread.size() < 2000; ++i) {
    std::string key = "k" + std::to_string(i);
    if (store->shard_of(key) == 0) {
      if (piled.size() < 18000) piled.push_back(std::move(key));
    } else if (spread.size() < 2000) {
      spread.push_back(std::move(key));
    }
  }
  EXPECT_EQ(allowed_count(limiter, piled), 18000);
  EXPECT_EQ(allowed_count(limiter, piled), 0);
  EXPECT_EQ(allowed_count(limiter, spread), 2000);
  EXPECT_EQ(allowed_count(limiter, spread), 0);
  EXPECT_EQ(allowed_count(limiter, piled), 0);
  EXPECT_EQ(store->stats().keys, 20000);
  EXPECT_EQ(store->stats().evictions, 0);
}

// AddressSanitizer keeps freed memory in quarantine, so RSS says nothing there, and every call costs ~10x: under it
// these tests check the same answers on a smaller flood and leave the measures (memory, time) to the plain build.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMeasures = false;
#else
constexpr bool kMeasures = true;
#endif

TEST(MemoryBound, AFloodOfDistinctKeysStaysWithinTheBound) {
  auto store = open_store("memory://?max_keys=100000");
  Limiter limiter("1/hour", store);
  const int64_t flood = kMeasures ? 5000000 : 1000000;
  int64_t resident_at_1m = 0;
  for (int64_t i = 0; i < flood; ++i) {
    ASSERT_TRUE(limiter.hit("flood:" + std::to_string(i)).allowed);
    if ((i + 1) % 500000 == 0) {
      ASSERT_LE(store->stats().keys, 100000) << i;
    }
    if (i + 1 == 1000000) resident_at_1m = resident_kib();
  }
  const StoreStats stats = store->stats();
  EXPECT_EQ(stats.keys, 100000);
  EXPECT_EQ(stats.evictions, flood - 100000);
  if (kMeasures) {
    EXPECT_LE(resident_kib() - resident_at_1m, 16 * 1024) << "memory grew with the flood";
  }
  // The most recent keys are the ones kept.
  EXPECT_FALSE(limiter.hit("flood:" + std::to_string(flood - 1)).allowed);
  EXPECT_TRUE(limiter.hit("flood:0").allowed);
}

// Keys that all fall in one shard of the store as it was before keyed hashing (std::hash, 256 shards): today they
// cost what random keys cost, and none is forgotten at the bound.
TEST(MemoryBound, KeysChosenAgainstTheOldHashCostWhatRandomKeysCost) {
  std::vector<std::string> chosen;
  for (uint64_t i = 0; chosen.size() < 100000; ++i) {
    std::string key = "login:" + std::to_string(i);
    const size_t h = std::hash<std::string_view>{}(key);
    if (((h ^ (h >> 29)) & 255) == 0) chosen.push_back(std::move(key));
  }
  std::mt19937_64 rng(7);
  std::vector<std::string> random;
  for (int i = 0; i < 100000; ++i) random.push_back("login:" + std::to_string(rng()));

  auto seconds_for = [](const std::vector<std::string>& keys) {
    auto store = open_store("memory://?max_keys=100000");
    Limiter limiter("1/hour", store);
    const double start = thread_cpu_seconds();
    EXPECT_EQ(allowed_count(limiter, keys), 100000);
    EXPECT_EQ(allowed_count(limiter, keys), 0) << "a key was forgotten at the bound";
    EXPECT_EQ(store->stats().evictions, 0);
    return thread_cpu_seconds() - start;
  };
  double best_chosen = 1e9, best_random = 1e9;
  for (int round = 0; round < (kMeasures ? 3 : 1); ++round) {
    best_chosen = std::min(best_chosen, seconds_for(chosen));
    best_random = std::min(best_random, seconds_for(random));
  }
  if (kMeasures) {
    EXPECT_LE(best_chosen, 2 * best_random) << best_chosen << " s against " << best_random << " s";
  }
}

}  // namespace
}  // namespace ratewarden::testing
