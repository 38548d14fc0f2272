// Keys that cannot collide or move (docs/key-format.md): adversarial user keys — braces, colons, spaces, NUL bytes,
// backslashes, invalid UTF-8, 4,096 bytes — never share a storage key or a limit on any store, and on a cluster no
// user key picks its slot through braces of its own: for every slot 0..16383 a key whose braces would choose it
// lands where the format says, as the real cluster computes it.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "redis/key_slot.hpp"
#include "redis_server.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

using namespace std::string_literals;

// The format's hash tag of a user key, from docs/key-format.md: the key as it is, or escaped when it holds '}'.
std::string tag_of(const std::string& key) {
  if (key.find('}') == std::string::npos) return key;
  std::string out;
  for (char c : key) out += c == '\\' ? "\\\\"s : c == '}' ? "\\)"s : std::string(1, c);
  return out;
}

// Every string of 1 to 3 bytes over the characters that mean something to the format or to a reader, then the
// crafted ones: keys that look like an escape, a suffix, a tag, and keys of 4,096 bytes.
std::vector<std::string> adversarial_keys() {
  const std::string alphabet = "a{}: \0\\)\xff"s;
  std::vector<std::string> keys;
  for (char a : alphabet) {
    keys.emplace_back(1, a);
    for (char b : alphabet) {
      keys.push_back(std::string{a, b});
      for (char c : alphabet) keys.push_back(std::string{a, b, c});
    }
  }
  for (const std::string& k :
       {"u}:v3:fixed_window:1:60000"s, "u}:v3e:fixed_window:1:60000"s, "u\\)"s, "u\\\\)"s, "u\\\\}"s, "{u}"s,
        "}u{"s, "ratewarden-resets"s, "ratewarden-resets}:log"s, "ratewarden-resets}:epoch"s, "\xc3\x28\xa0\xa1"s,
        "user\0a"s, "user\0b"s})
    keys.push_back(k);
  for (char c : "a}\\{\0"s) keys.emplace_back(kMaxKeyBytes, c);
  keys.push_back(std::string(kMaxKeyBytes - 1, 'a') + "}");
  keys.push_back("}" + std::string(kMaxKeyBytes - 1, '\\'));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

const char* kPolicy = "1/minute; 5/hour";  // two states per key: a script over two keys of one slot

std::set<std::string> storage_keys(const Limiter& limiter, const std::vector<std::string>& keys) {
  std::set<std::string> out;
  for (const std::string& k : keys)
    for (size_t i = 0; i < limiter.policies().size(); ++i) out.insert(limiter.storage_key(k, i));
  return out;
}

TEST(KeyFormat, DistinctUserKeysNeverShareAStorageKeyAndEachKeepsOneNonEmptyTag) {
  const std::vector<std::string> keys = adversarial_keys();
  ASSERT_GT(keys.size(), 800u);
  auto store = open_store("memory://");
  std::set<std::string> all;
  size_t built = 0;
  for (const char* prefix : {"rw", "rw:", "app"}) {
    LimiterOptions o;
    o.prefix = prefix;
    for (const Algorithm a : {Algorithm::fixed_window, Algorithm::gcra}) {
      o.algorithm = a;
      Limiter limiter(kPolicy, store, o);
      for (const std::string& k : keys) {
        const std::string tag = tag_of(k);
        for (size_t i = 0; i < limiter.policies().size(); ++i) {
          const std::string s = limiter.storage_key(k, i);
          all.insert(s);
          ++built;
          // The hash tag Redis reads is the format's, whole: from the head's '{' to the one '}' after it.
          ASSERT_EQ(s.substr(0, s.find('{') + 1), std::string(prefix) + ":{");
          ASSERT_EQ(s.find('}'), std::string(prefix).size() + 2 + tag.size()) << s;
          ASSERT_EQ(key_slot(s), key_slot(tag)) << s;
        }
      }
    }
  }
  EXPECT_EQ(all.size(), built) << "two distinct (prefix, key, policy) named one storage key";
}

TEST(KeyFormat, KeysWithoutAClosingBraceAreWrittenAsTheyAre) {
  Limiter limiter("5/minute", open_store("memory://"));
  EXPECT_EQ(limiter.storage_key("a{b :\\", 0), "rw:{a{b :\\}:v3:fixed_window:5:60000");
  EXPECT_EQ(limiter.storage_key("a}b\\", 0), "rw:{a\\)b\\\\}:v3e:fixed_window:5:60000");
  EXPECT_EQ(limiter.storage_key("}", 0), "rw:{\\)}:v3e:fixed_window:5:60000");
}

// One hit of every key, then one more: the first is allowed for every key (no key shares another's state), the
// second denied for every key (each has its own, and it counted). `hit_many` by 1,000 keys (one round trip per node
// each, within the timeout on a loaded machine).
void limits_stay_separate(const std::shared_ptr<Store>& store, const std::vector<std::string>& keys) {
  Limiter limiter(kPolicy, store);  // new keys: each test's servers are its own
  for (bool first : {true, false}) {
    for (size_t from = 0; from < keys.size(); from += 1000) {
      const size_t to = std::min(keys.size(), from + 1000);
      const std::vector<std::string_view> views(keys.begin() + from, keys.begin() + to);
      const std::vector<Decision> decisions = limiter.hit_many(views, 1);
      for (size_t i = from; i < to; ++i)
        ASSERT_EQ(decisions[i - from].allowed, first)
            << "key #" << i << " (" << keys[i].size() << " bytes) " << (first ? "shares a state" : "was not counted");
    }
  }
}

// Every key of a Redis node, binary safe (KEYS *: the node holds only this test's keys).
std::set<std::string> redis_keys(const RedisNode& node) {
  redisContext* c = redisConnect("127.0.0.1", node.port());
  EXPECT_TRUE(c != nullptr && c->err == 0);
  auto* r = static_cast<redisReply*>(redisCommand(c, "KEYS *"));
  std::set<std::string> out;
  EXPECT_TRUE(r != nullptr && r->type == REDIS_REPLY_ARRAY);
  for (size_t i = 0; r != nullptr && i < r->elements; ++i) out.emplace(r->element[i]->str, r->element[i]->len);
  freeReplyObject(r);
  redisFree(c);
  return out;
}

TEST(KeyFormat, LimitsStaySeparateOnTheMemoryStore) {
  auto store = open_store("memory://");
  limits_stay_separate(store, adversarial_keys());
  // One call at a time too: the memory store takes key parts for a key written as it is, whole keys for the others.
  LimiterOptions o;
  o.prefix = "one";
  Limiter limiter(kPolicy, store, o);
  for (bool first : {true, false})
    for (const std::string& k : adversarial_keys()) ASSERT_EQ(limiter.hit(k).allowed, first) << k.size() << " bytes";
}

TEST(KeyFormat, LimitsStaySeparateOnRedisUnderTheKeysTheFormatNames) {
  RedisServer redis;
  const std::vector<std::string> keys = adversarial_keys();
  auto store = open_store(redis.url() + "?timeout=10s");
  limits_stay_separate(store, keys);
  EXPECT_EQ(redis_keys(redis), storage_keys(Limiter(kPolicy, store), keys));
}

TEST(KeyFormat, LimitsStaySeparateOnPostgresUnderTheKeysTheFormatNames) {
  const std::vector<std::string> keys = adversarial_keys();
  auto store = open_store(shared_postgres_server().url("?timeout=10s&schema=keyformat"));
  limits_stay_separate(store, keys);
  std::set<std::string> hex;
  for (const std::string& k : storage_keys(Limiter(kPolicy, store), keys)) {
    std::string h;
    for (unsigned char c : k) h += "0123456789abcdef"[c >> 4], h += "0123456789abcdef"[c & 15];
    hex.insert(h);
  }
  std::string expected;
  for (const std::string& h : hex) expected += (expected.empty() ? "" : ",") + h;
  EXPECT_EQ(shared_postgres_server().sql(
                "SELECT string_agg(encode(key, 'hex'), ',' ORDER BY encode(key, 'hex')) FROM keyformat.limits"),
            expected);
}

// A key of every slot whose own braces would choose it ("<s>}x", <s> a '}'-free string of that slot), decided on
// a real cluster: each lands on the slot of the format's tag, as CLUSTER KEYSLOT says, and its limits are its own.
TEST(KeyFormat, OnAClusterNoKeyChoosesItsSlotThroughItsOwnBraces) {
  RedisCluster& cluster = shared_redis_cluster();
  std::vector<std::string> chosen(kClusterSlots);
  int found = 0;
  for (uint32_t n = 0; found < kClusterSlots; ++n) {
    const std::string s = "s" + std::to_string(n);
    std::string& slot = chosen[key_slot(s)];
    if (slot.empty()) slot = s, ++found;
  }
  std::vector<std::string> keys;
  for (const std::string& s : chosen) keys.push_back(s + "}x");
  auto store = open_store(cluster.url() + "?timeout=30s");
  Limiter limiter(kPolicy, store);
  int moved = 0;
  // CLUSTER KEYSLOT for every storage key, pipelined on one connection: the real cluster's slot, not ours.
  redisContext* c = redisConnect("127.0.0.1", cluster.node(0).port());
  ASSERT_TRUE(c != nullptr && c->err == 0);
  for (const std::string& k : keys) {
    const std::string s = limiter.storage_key(k, 0);
    redisAppendCommand(c, "CLUSTER KEYSLOT %b", s.data(), s.size());
  }
  for (int slot = 0; slot < kClusterSlots; ++slot) {
    void* reply = nullptr;
    ASSERT_EQ(redisGetReply(c, &reply), REDIS_OK);
    const long long real = static_cast<redisReply*>(reply)->integer;
    freeReplyObject(reply);
    const std::string& k = keys[slot];
    ASSERT_EQ(real, key_slot(tag_of(k))) << "slot " << slot;
    ASSERT_EQ(real, key_slot(limiter.storage_key(k, 1))) << "slot " << slot;
    moved += real != slot;
  }
  redisFree(c);
  EXPECT_GT(moved, kClusterSlots - 10) << "keys still land on the slot their braces choose";
  limits_stay_separate(store, keys);
  limits_stay_separate(store, adversarial_keys());
}

}  // namespace
}  // namespace ratewarden::testing
