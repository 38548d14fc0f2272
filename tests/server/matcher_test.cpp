// The matching rules of envoyproxy/ratelimit's config, table by table (server/src/matcher.hpp).
#include "matcher.hpp"

#include <gtest/gtest.h>

#include "ratewarden/memory_store.hpp"

namespace ratewarden::server {
namespace {

TEST(Wildcard, EachStarMatchesAnyRunInOrder) {
  EXPECT_TRUE(wildcard_match("/files/*", "/files/"));
  EXPECT_TRUE(wildcard_match("/files/*", "/files/a/b"));
  EXPECT_FALSE(wildcard_match("/files/*", "/file"));
  EXPECT_TRUE(wildcard_match("*.png", "a.png"));
  EXPECT_TRUE(wildcard_match("a*b*c", "abc"));
  EXPECT_TRUE(wildcard_match("a*b*c", "a-b-b-c"));
  EXPECT_FALSE(wildcard_match("a*b*c", "a-c-b"));
  EXPECT_FALSE(wildcard_match("ab*ba", "aba"));  // prefix and suffix may not overlap
  EXPECT_TRUE(wildcard_match("*", ""));
  EXPECT_TRUE(wildcard_match("exact", "exact"));
  EXPECT_FALSE(wildcard_match("exact", "exactly"));
}

TEST(Match, ExactThenFirstWildcardThenKeyOnlyAtTheRequestsDepth) {
  const Domain d = load_domain(R"(
domain: d
descriptors:
  - key: path
    value: /a/*
    rate_limit: {unit: second, requests_per_unit: 1, name: first}
  - key: path
    value: /a/b*
    rate_limit: {unit: second, requests_per_unit: 2, name: second}
  - key: path
    value: /a/bc
    rate_limit: {unit: second, requests_per_unit: 3, name: exact}
  - key: path
    rate_limit: {unit: second, requests_per_unit: 4, name: any}
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 5, name: nested}
)",
                               "d.yaml", std::make_shared<MemoryStore>());
  auto name = [&d](Entries e) {
    const Node* n = match(d, e);
    return n == nullptr || !n->rule ? std::string("none") : n->rule->name;
  };
  EXPECT_EQ(name({{"path", "/a/bc"}}), "exact");
  EXPECT_EQ(name({{"path", "/a/bd"}}), "first");  // the first wildcard in file order, not the longest
  EXPECT_EQ(name({{"path", "/z"}}), "any");
  EXPECT_EQ(name({{"path", "/z"}, {"user", "u"}}), "nested");
  EXPECT_EQ(name({{"path", "/a/bc"}, {"user", "u"}}), "none");  // the exact node has no children
  EXPECT_EQ(name({{"user", "u"}}), "none");
  EXPECT_EQ(name({}), "none");
}

TEST(Config, ErrorsNameTheFileAndLine) {
  auto store = std::make_shared<MemoryStore>();
  auto error = [&store](const std::string& text) {
    try {
      load_domain(text, "f.yaml", store);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_EQ(error("descriptors: []\n"), "f.yaml:1: config file cannot have empty domain");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - value: v\n"), "f.yaml:3: descriptor has empty key");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n  - key: k\n"),
            "f.yaml:4: duplicate descriptor composite key 'd.k'");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1.5}\n"),
            "f.yaml:4: 'requests_per_unit' must be a whole number from 0 to 1000000000, got '1.5'");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n"),
            "f.yaml:6: should not specify rate limit unit when unlimited");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {policy: 10/5m, algorithm: leaky}\n"),
            "f.yaml:4: unknown algorithm \"leaky\": expected one of fixed_window, sliding_log, sliding_window, "
            "token_bucket, gcra");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, replaces: [{name: x}]}\n"),
            "f.yaml: replaces names 'x', which no rate limit of domain 'd' is named");
  EXPECT_EQ(error("domain: [unclosed\n"), "f.yaml:2: error loading config file: end of sequence flow not found");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {policy: 5/minute, key: \"login:{user}\"}\n"),
            "f.yaml:4: 'key' names {user}, which is not a key of this descriptor or the ones above it");
  EXPECT_EQ(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {policy: 5/minute, key: \"a:{k\"}\n"),
            "f.yaml:4: 'key' has a '{' without its '}': \"a:{k\"");
  EXPECT_EQ(error("domain: d\non_store_error: allow\ndescriptors:\n  - key: k\n"
                  "    rate_limit: {policy: \"10/5m; 100/hour\", algorithm: gcra, burst: 5}\n"),
            "f.yaml:5: burst needs a single rate limit; got 2");
}

// What the peer's YAML 1.1 parser (gopkg.in/yaml.v2) reads and yaml-cpp (YAML 1.2) does not.
TEST(Config, Yaml11BooleansIntegersAndMergeKeys) {
  auto store = std::make_shared<MemoryStore>();
  auto first = [&store](const std::string& descriptor) {
    return load_domain("domain: d\ndescriptors:\n  - key: k\n" + descriptor, "f.yaml", store).descriptors.at(0);
  };
  for (const char* yes : {"yes", "Yes", "YES", "on", "On", "ON", "y", "Y", "true"})
    EXPECT_TRUE(first(std::string("    shadow_mode: ") + yes + "\n").shadow_mode) << yes;
  for (const char* no : {"no", "No", "NO", "off", "Off", "OFF", "n", "N", "false"})
    EXPECT_FALSE(first(std::string("    shadow_mode: ") + no + "\n").shadow_mode) << no;
  const std::pair<const char*, int64_t> integers[] = {{"0x10", 16}, {"1_000", 1000}, {"+5", 5},     {"0b101", 5},
                                                      {"0o17", 15}, {"017", 15},     {"0", 0},      {"7", 7}};
  const auto per_minute = [&first](const std::string& n) {
    return first("    rate_limit: {unit: minute, requests_per_unit: " + n + "}\n");
  };
  for (const auto& [text, value] : integers) EXPECT_EQ(per_minute(text).rule->requests_per_unit, value) << text;
  for (const char* bad : {"-5", "08", "0x", "1.5", "0xg", "1e3", "2_000_000_000"})
    EXPECT_THROW(per_minute(bad), InvalidArgument) << bad;
  EXPECT_THROW(first("    shadow_mode: maybe\n"), InvalidArgument);

  // Merge keys: a map, or a list of maps (the first's keys win); the map's own keys win over all.
  const Domain merged = load_domain(R"(domain: d
descriptors:
  - key: a
    rate_limit: &minute {unit: minute, requests_per_unit: 5}
  - key: b
    rate_limit:
      <<: *minute
      requests_per_unit: 7
  - key: c
    <<: {shadow_mode: yes}
    rate_limit:
      <<: [{unit: hour}, *minute]
)",
                                    "f.yaml", store);
  EXPECT_EQ(merged.descriptors.at(1).rule->unit, Unit::minute);
  EXPECT_EQ(merged.descriptors.at(1).rule->requests_per_unit, 7);
  EXPECT_TRUE(merged.descriptors.at(2).shadow_mode);
  EXPECT_EQ(merged.descriptors.at(2).rule->unit, Unit::hour);
  EXPECT_EQ(merged.descriptors.at(2).rule->requests_per_unit, 5);
  EXPECT_EQ(merged.descriptors.at(0).rule->requests_per_unit, 5);  // the anchor itself is unchanged
  EXPECT_THROW(first("    <<: [1]\n"), InvalidArgument);
}

}  // namespace
}  // namespace ratewarden::server
