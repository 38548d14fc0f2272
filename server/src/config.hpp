// The service's configuration (docs/server.md): envoyproxy/ratelimit's YAML files, loaded unchanged, with
// ratewarden's additions. A directory of files, one domain each; a tree of descriptors per domain.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ratewarden/limiter.hpp"

namespace ratewarden::server {

// RateLimitResponse.RateLimit.Unit's values (WEEK = 7 comes after YEAR on the wire).
enum class Unit { unknown = 0, second = 1, minute = 2, hour = 3, day = 4, month = 5, year = 6, week = 7 };
int64_t unit_seconds(Unit unit);  // MONTH = 30 days, YEAR = 365 days, as envoyproxy/ratelimit counts them

// A descriptor's limit: `rate_limit` in a file.
struct Rule {
  std::string name;  // rate_limit.name: what `replaces` names
  bool unlimited = false;
  std::vector<std::string> replaces;
  // The peer's form (unit + requests_per_unit): a fixed window aligned to the Unix epoch, as it counts.
  Unit unit = Unit::unknown;
  int64_t requests_per_unit = 0;
  bool epoch_window = false;  // the peer's form with the fixed window: the window's start is part of the key
  // `key` (ours): the limiter's key is this template, "{<entry key>}" replaced by the request's value of that entry
  // — a library limiter's key on the same store, policy and prefix counts the same limit. Empty: the key is the
  // descriptor's domain and entries.
  std::vector<std::pair<bool, std::string>> key_template;  // (placeholder?, text or entry key), in order
  // The limiter of the rule (null when unlimited or when requests_per_unit is 0), its policy string and what the
  // metrics call it ("<domain>.<key>[_<value>]...").
  std::shared_ptr<Limiter> limiter;
  std::string policy;
  std::string metric_name;
};

struct Node {
  std::string key;
  std::optional<std::string> value;  // none: matches any value of the key
  bool wildcard = false;             // value has '*'s: each matches any run of characters
  std::optional<Rule> rule;
  bool shadow_mode = false;
  bool quota_mode = false;  // over its limit, it refuses the call only when all its quota descriptors are over
  bool detailed_metric = false;
  std::vector<Node> children;  // in file order
};

struct Domain {
  std::string name;
  std::string file;  // where it was loaded from
  std::vector<Node> descriptors;
  OnStoreError on_store_error = OnStoreError::raise;  // raise: the call fails UNAVAILABLE
};

struct Config {
  std::map<std::string, Domain> domains;
};

// Loads every file of `dir` (recursively; names starting with '.' skipped, as Kubernetes' ConfigMap `..data`), one
// domain per file, building each rule's limiter on `store`. Throws InvalidArgument naming the file and line of the
// first error; nothing of a bad directory is used.
std::shared_ptr<const Config> load_config(const std::string& dir, const std::shared_ptr<Store>& store);
// One file's text, for tests: `file` names it in errors.
Domain load_domain(const std::string& text, const std::string& file, const std::shared_ptr<Store>& store);

}  // namespace ratewarden::server
