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

}  // namespace
}  // namespace ratewarden::server
