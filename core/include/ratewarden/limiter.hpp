// The Limiter: a policy (one or several rates) applied to keys through a store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ratewarden/decision.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

// What a call returns when the store fails: the error (raise), an allowed decision (fail open) or a denial
// (fail closed).
enum class OnStoreError { raise, allow, deny };
OnStoreError parse_on_store_error(std::string_view name);

inline constexpr size_t kMaxKeyBytes = 4096;

struct LimiterOptions {
  Algorithm algorithm = Algorithm::fixed_window;
  std::optional<int64_t> burst;
  std::optional<int32_t> buckets;
  std::optional<std::string> prefix;  // default: the store's key_prefix() ("rw")
  OnStoreError on_store_error = OnStoreError::raise;
};

class Limiter {
 public:
  // Throws InvalidArgument for a bad policy string or option.
  Limiter(std::string_view policy, std::shared_ptr<Store> store, LimiterOptions options = {});

  // Consumes `cost` if every policy allows it. Throws InvalidArgument for a bad key or cost and StoreError
  // (with on_store_error = raise) when the store fails.
  Decision hit(std::string_view key, int64_t cost = 1);
  // What hit would decide, consuming nothing.
  Decision peek(std::string_view key, int64_t cost = 1);
  // Forgets the key (every policy).
  void reset(std::string_view key);
  // One hit per key, in one round trip where the store can. Keys the store failed on get on_store_error's answer;
  // with raise, the first failure is thrown (keys the store already decided stay charged).
  std::vector<Decision> hit_many(const std::vector<std::string_view>& keys, int64_t cost = 1);

  const std::vector<Policy>& policies() const { return policies_; }
  const LimiterOptions& options() const { return options_; }
  const std::shared_ptr<Store>& store() const { return store_; }
  // The largest cost a call may ask for: the smallest capacity of the policies.
  int64_t max_cost() const { return max_cost_; }
  // The storage key of `key` under policy `index` (docs/key-format.md).
  std::string storage_key(std::string_view key, size_t index) const;
  // Throws InvalidArgument for a key or cost that no call accepts.
  void validate(std::string_view key, int64_t cost) const;

 private:
  Decision decide(std::string_view key, int64_t cost, Mode mode);
  Decision on_failure() const;
  void assign_key(std::string& out, std::string_view key, size_t index) const;
  void fill_keys(std::string_view key, std::vector<std::string>& keys) const;

  std::vector<Policy> policies_;
  LimiterOptions options_;
  std::shared_ptr<Store> store_;
  std::string key_head_;                   // "<prefix>:{"
  std::vector<std::string> key_suffixes_;  // "}:<algorithm>:<limit>:<period_ms>[:<extra>]" per policy
  int64_t max_cost_ = 0;
};

// Receives exactly one of: the decision, or the error (a StoreError, or internal). Both are valid only during the call.
using DecisionCallback = std::function<void(const Decision* decision, const Error* error)>;

// Runs limiter->hit(key, cost) on the library's thread pool and calls `done` there; returns at once. Bad input throws
// InvalidArgument here, before anything starts (and `done` is never called). The limiter stays alive until `done`
// has run.
void hit_async(std::shared_ptr<Limiter> limiter, std::string key, int64_t cost, DecisionCallback done);

}  // namespace ratewarden
