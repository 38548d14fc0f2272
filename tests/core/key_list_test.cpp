// KeyList: what every binding's KeyList is (docs/key-lists.md): entries, their duration, names and policies.
#include <string>

#include <gtest/gtest.h>

#include "ratewarden/key_list.hpp"
#include "test_support.hpp"

namespace ratewarden::testing {
namespace {

constexpr int64_t kS = 1000000;

TEST(KeyList, EntriesLastTheirDurationFromTheLastAdd) {
  ManualClock clock;
  const auto store = memory_store(clock);
  KeyList blocked("blocked", store, 900 * kS);
  const std::string key("203.0.113.7\0x", 13);
  EXPECT_FALSE(blocked.contains(key));
  EXPECT_EQ(blocked.expires_in_us(key), 0);
  blocked.add(key);
  EXPECT_TRUE(blocked.contains(key));
  EXPECT_FALSE(blocked.contains("203.0.113.7"));  // another key: the NUL byte and what follows count
  clock.advance(600 * kS);
  EXPECT_EQ(blocked.expires_in_us(key), 300 * kS);
  blocked.add(key);  // again from now
  EXPECT_EQ(blocked.expires_in_us(key), 900 * kS);
  clock.advance(900 * kS);
  EXPECT_FALSE(blocked.contains(key));
  blocked.add(key);
  blocked.remove(key);
  EXPECT_FALSE(blocked.contains(key));
}

// Another runtime sees an entry through a limiter of the list's policy and prefix on the key itself (what Python's
// and Node's asynchronous forms call), and a list of another duration is another list.
TEST(KeyList, AnEntryIsAOneHitWindowUnderTheListsPrefix) {
  ManualClock clock;
  const auto store = memory_store(clock);
  KeyList list("partners.v2", store, 60 * kS);
  list.add("acme");
  EXPECT_EQ(list.prefix(), "rw:list:partners.v2");
  LimiterOptions o;
  o.prefix = list.prefix();
  Limiter seen(list.policy(), store, o);
  EXPECT_FALSE(seen.peek("acme").allowed);
  EXPECT_FALSE(KeyList("partners.v2", store, 61 * kS).contains("acme"));
  EXPECT_TRUE(KeyList("partners.v2", store, 60 * kS).contains("acme"));
}

// A limiter's key is often the client's to choose (an address, a user name): no key of a limiter under the store's
// prefix, of any policy, reaches a list's entry, to add one (an allow list) or to remove one (a deny list).
TEST(KeyList, NoLimiterKeyNamesAnEntry) {
  ManualClock clock;
  const auto store = memory_store(clock);
  KeyList allow("allow", store, 900 * kS);
  KeyList deny("deny", store, 900 * kS);
  deny.add("203.0.113.9");
  LimiterOptions o;
  o.algorithm = Algorithm::fixed_window;
  Limiter limiter("1/900s", store, o);  // the lists' policy and algorithm
  for (const std::string key : {"list:allow:203.0.113.7", "allow:203.0.113.7", "203.0.113.7"}) limiter.hit(key);
  for (const std::string key : {"list:deny:203.0.113.9", "deny:203.0.113.9", "203.0.113.9"}) limiter.reset(key);
  EXPECT_FALSE(allow.contains("203.0.113.7"));
  EXPECT_TRUE(deny.contains("203.0.113.9"));
}

// A list's keys are a limiter's: 1 to 4096 bytes, the list's name and prefix not counted.
TEST(KeyList, KeysAreOneTo4096Bytes) {
  const auto store = open_store("memory://");
  KeyList list(std::string(64, 'n'), store);
  const std::string longest(4096, 'k');
  list.add(longest);
  EXPECT_TRUE(list.contains(longest));
  EXPECT_THROW(list.add(""), InvalidArgument);
  EXPECT_THROW(list.contains(std::string(4097, 'k')), InvalidArgument);
}

TEST(KeyList, PolicyInWholeMillisecondsOrSeconds) {
  const auto store = open_store("memory://");
  EXPECT_EQ(KeyList("l", store, 1000).policy(), "1/1ms");
  EXPECT_EQ(KeyList("l", store, 1001).policy(), "1/2ms");
  EXPECT_EQ(KeyList("l", store, 900 * kS).policy(), "1/900000ms");
  EXPECT_EQ(KeyList("l", store, 1000000 * kS).policy(), "1/1000000000ms");
  EXPECT_EQ(KeyList("l", store, 1000000 * kS + 1).policy(), "1/1000001s");
  EXPECT_EQ(KeyList("l", store).policy(), "1/315360000s");
  EXPECT_EQ(KeyList("l", store).duration_us(), KeyList::kMaxDurationUs);
}

TEST(KeyList, RejectsBadNamesAndDurations) {
  const auto store = open_store("memory://");
  const std::string bad[] = {"", "a b", "a:b", "a/b", "caf\xc3\xa9", std::string(65, 'n'), std::string("a\0b", 3)};
  for (const std::string& name : bad) EXPECT_THROW(KeyList(name, store), InvalidArgument) << name;
  EXPECT_NO_THROW(KeyList(std::string(64, 'n'), store));
  EXPECT_NO_THROW(KeyList("A-z_0.9", store));
  EXPECT_THROW(KeyList("l", store, 999), InvalidArgument);
  EXPECT_THROW(KeyList("l", store, 0), InvalidArgument);
  EXPECT_THROW(KeyList("l", store, KeyList::kMaxDurationUs + 1), InvalidArgument);
  EXPECT_THROW(KeyList("l", nullptr), InvalidArgument);
  // "<store's prefix>:list:<name>" is at most 256 bytes, as every prefix.
  const auto long_prefix = open_store("memory://?prefix=" + std::string(180, 'p'));
  EXPECT_NO_THROW(KeyList(std::string(64, 'n'), long_prefix));
  EXPECT_THROW(KeyList(std::string(64, 'n'), open_store("memory://?prefix=" + std::string(187, 'p'))),
               InvalidArgument);
}

}  // namespace
}  // namespace ratewarden::testing
