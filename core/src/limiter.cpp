#include "ratewarden/limiter.hpp"

#include <algorithm>

#include "executor.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

// The tail of a storage key after the user key (docs/key-format.md).
std::string key_suffix(const Policy& p) { return "}:" + storage_name(p); }

// Fail-closed denials ask the client to come back soon: the store may be back by then.
constexpr int64_t kFailClosedRetryUs = 1000000;

}  // namespace

OnStoreError parse_on_store_error(std::string_view name) {
  if (name == "raise") return OnStoreError::raise;
  if (name == "allow") return OnStoreError::allow;
  if (name == "deny") return OnStoreError::deny;
  throw InvalidArgument("on_store_error must be \"raise\", \"allow\" or \"deny\", got \"" +
                        std::string(name.substr(0, 100)) + "\"");
}

Limiter::Limiter(std::string_view policy, std::shared_ptr<Store> store, LimiterOptions options)
    : options_(std::move(options)), store_(std::move(store)) {
  if (!store_) throw InvalidArgument("a limiter needs a store");
  if (!options_.prefix) options_.prefix = store_->key_prefix();
  validate_key_prefix(*options_.prefix);
  key_head_ = *options_.prefix + ":{";
  policies_ = make_policies(parse_rates(policy), PolicyOptions{options_.algorithm, options_.burst, options_.buckets});
  max_cost_ = policies_[0].capacity();
  for (const Policy& p : policies_) {
    std::string suffix = key_suffix(p);
    // The same rate twice would name one state twice: one hit would charge it twice.
    if (std::find(key_suffixes_.begin(), key_suffixes_.end(), suffix) != key_suffixes_.end())
      throw InvalidArgument("the rate " + describe(p) + " appears twice in \"" + std::string(policy.substr(0, 200)) +
                            "\"");
    key_suffixes_.push_back(std::move(suffix));
    max_cost_ = std::min(max_cost_, p.capacity());
  }
}

void Limiter::validate(std::string_view key, int64_t cost) const {
  if (key.empty()) throw InvalidArgument("the key is empty; a key is 1 to 4096 bytes");
  if (key.size() > kMaxKeyBytes)
    throw InvalidArgument("the key is " + std::to_string(key.size()) + " bytes; a key is 1 to 4096 bytes");
  if (cost < 1 || cost > max_cost_)
    throw InvalidArgument("cost must be between 1 and " + std::to_string(max_cost_) + " (the capacity of " +
                          describe(policies_[0]) + (policies_.size() > 1 ? " and the other rates" : "") +
                          "), got " + std::to_string(cost));
}

std::string Limiter::storage_key(std::string_view key, size_t index) const {
  std::string out;
  assign_key(out, key, index);
  return out;
}

// Reuses the string's storage: after the first call on a thread, building keys allocates nothing.
void Limiter::assign_key(std::string& out, std::string_view key, size_t index) const {
  out.assign(key_head_);
  out.append(key.data(), key.size());
  out.append(key_suffixes_[index]);
}

void Limiter::fill_keys(std::string_view key, std::vector<std::string>& keys) const {
  keys.resize(policies_.size());
  for (size_t i = 0; i < policies_.size(); ++i) assign_key(keys[i], key, i);
}

Decision Limiter::on_failure() const {
  const Policy& p = policies_[0];
  Decision d;
  d.limit = p.capacity();
  if (options_.on_store_error == OnStoreError::allow) {
    // The store could not tell: report the full quota.
    d.allowed = true;
    d.remaining = d.limit;
  } else {
    d.allowed = false;
    d.used = d.limit;
    d.retry_after_us = d.reset_after_us = std::min(p.period_us, kFailClosedRetryUs);
  }
  return d;
}

Decision Limiter::decide(std::string_view key, int64_t cost, Mode mode) {
  validate(key, cost);
  thread_local std::vector<std::string> keys;
  fill_keys(key, keys);
  StoreCall call{policies_.data(), keys.data(), keys.size(), key, cost, mode};
  try {
    return store_->decide(call);
  } catch (const StoreError&) {
    if (options_.on_store_error == OnStoreError::raise) throw;
    return on_failure();
  }
}

Decision Limiter::hit(std::string_view key, int64_t cost) { return decide(key, cost, Mode::hit); }

Decision Limiter::peek(std::string_view key, int64_t cost) { return decide(key, cost, Mode::peek); }

void Limiter::reset(std::string_view key) {
  validate(key, 1);
  std::vector<std::string> keys;
  fill_keys(key, keys);
  store_->reset(keys.data(), keys.size(), key);
}

std::vector<Decision> Limiter::hit_many(const std::vector<std::string_view>& keys, int64_t cost) {
  for (std::string_view key : keys) validate(key, cost);
  std::vector<std::vector<std::string>> storage(keys.size());
  std::vector<StoreCall> calls(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    fill_keys(keys[i], storage[i]);
    calls[i] = StoreCall{policies_.data(), storage[i].data(), storage[i].size(), keys[i], cost, Mode::hit};
  }
  std::vector<Decision> out(keys.size());
  std::vector<std::optional<StoreError>> errors(keys.size());
  store_->decide_many(calls.data(), calls.size(), out.data(), errors.data());
  // Only the calls that failed get on_store_error's answer; the others keep the store's.
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!errors[i]) continue;
    if (options_.on_store_error == OnStoreError::raise) throw *errors[i];
    out[i] = on_failure();
  }
  return out;
}

void hit_async(std::shared_ptr<Limiter> limiter, std::string key, int64_t cost, DecisionCallback done) {
  if (!limiter) throw InvalidArgument("hit_async needs a limiter");
  limiter->validate(key, cost);
  run_on_pool([limiter = std::move(limiter), key = std::move(key), cost, done = std::move(done)] {
    Decision decision;
    try {
      decision = limiter->hit(key, cost);
    } catch (const Error& e) {
      done(nullptr, &e);
      return;
    } catch (const std::exception& e) {
      const Error error(ErrorCode::internal, e.what());
      done(nullptr, &error);
      return;
    }
    done(&decision, nullptr);
  });
}

}  // namespace ratewarden
