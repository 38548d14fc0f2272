// The store interface: where the state of every key lives, and who runs the algorithms on it atomically.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/clock.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {

// One decision to make: every policy of one limiter on one user key. `keys[i]` is the storage key of
// `policies[i]` (docs/key-format.md); `tag` is the user key, the part every storage key shares (shard / slot).
struct StoreCall {
  const Policy* policies = nullptr;
  const std::string* keys = nullptr;
  size_t count = 0;
  std::string_view tag;
  int64_t cost = 1;
  Mode mode = Mode::hit;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs the algorithm of every policy of the call atomically. Throws StoreError when the store fails.
  virtual Decision decide(const StoreCall& call) = 0;
  // Independent calls, in one round trip where the store can. For each call, writes its decision to out[i], or its
  // failure to errors[i] (which is left empty on success): one call failing does not hide the others' answers.
  virtual void decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors);
  // Forgets the given storage keys.
  virtual void reset(const std::string* keys, size_t count, std::string_view tag) = 0;
  // The store's URL with any password masked: safe to log.
  virtual std::string describe() const = 0;

  // The key prefix of limiters that do not set their own (default "rw"; "?prefix=" in the store URL).
  const std::string& key_prefix() const { return key_prefix_; }
  // Throws InvalidArgument for a prefix the key format cannot hold (docs/key-format.md).
  void set_key_prefix(std::string prefix);

 private:
  std::string key_prefix_ = "rw";
};

// Throws InvalidArgument unless `prefix` is 1 to 256 bytes without '{' or '}'.
void validate_key_prefix(const std::string& prefix);

// Opens a store from its URL (throws InvalidArgument for a bad one):
//   memory://[?max_keys=N&shards=N]
//   redis://[user[:password]@]host[:port][/db][?timeout=1s&connect_timeout=1s&pool=4]
//   redis+cluster://[user[:password]@]host:port[,host:port...][?timeout=1s&connect_timeout=1s&pool=4]
// Every scheme also takes ?prefix=P, the store's key_prefix.
std::shared_ptr<Store> open_store(std::string_view url);
// For tests: the same, with time from `clock` (µs) — the memory store's clock, or the "now" the Redis scripts get
// instead of reading the server's TIME. An empty clock means the usual one.
std::shared_ptr<Store> open_store(std::string_view url, Clock clock);

}  // namespace ratewarden
