// The store interface: where the state of every key lives, and who runs the algorithms on it atomically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/decision.hpp"
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
  // Independent calls, in one round trip where the store can. Writes one decision per call to `out`.
  virtual void decide_many(const StoreCall* calls, size_t n, Decision* out);
  // Forgets the given storage keys.
  virtual void reset(const std::string* keys, size_t count, std::string_view tag) = 0;
  // The store's URL with any password masked: safe to log.
  virtual std::string describe() const = 0;
};

// Opens a store from its URL: "memory://[?max_keys=N&shards=N]". Throws InvalidArgument for a bad URL.
std::shared_ptr<Store> open_store(std::string_view url);

}  // namespace ratewarden
