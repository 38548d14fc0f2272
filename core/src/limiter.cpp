#include "ratewarden/limiter.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "io/callback_thread.hpp"
#include "metrics/decision_counts.hpp"
#include "ratewarden/errors.hpp"
#include "ratewarden/version.hpp"

namespace ratewarden {
namespace {

// The tail of a storage key after the user key (docs/key-format.md): the key format's version ("e" after it for a
// key written escaped), then the policy.
std::string key_suffix(const Policy& p, bool escaped) {
  return "}:v" + std::to_string(RATEWARDEN_KEY_FORMAT_VERSION) + (escaped ? "e:" : ":") + storage_name(p);
}

// A user key holding '}' would end the cluster hash tag early (its slot chosen by the part before it, or the whole
// storage key's when the key starts with '}'): such a key is written with '\' as "\\" and '}' as "\)".
bool needs_escape(std::string_view key) { return std::memchr(key.data(), '}', key.size()) != nullptr; }

size_t escaped_size(std::string_view key) {
  size_t n = key.size();
  for (char c : key) n += c == '\\' || c == '}';
  return n;
}

char* write_escaped(char* p, std::string_view key) {
  for (char c : key) {
    if (c == '\\' || c == '}') {
      *p++ = '\\';
      *p++ = c == '}' ? ')' : '\\';
    } else {
      *p++ = c;
    }
  }
  return p;
}

// Fail-closed denials ask the client to come back soon: the store may be back by then.
constexpr int64_t kFailClosedRetryUs = 1000000;
constexpr size_t kMaxNameBytes = 200;

// The calls whose decisions are counted (LimiterStats): those that may charge.
bool counted(Mode mode) { return mode == Mode::hit || mode == Mode::reserve; }

std::string name_of(const std::optional<std::string>& name, std::string_view policy) {
  if (!name) {
    const size_t first = policy.find_first_not_of(" \t");
    const size_t last = policy.find_last_not_of(" \t");
    return std::string(policy.substr(first, std::min(last - first + 1, kMaxNameBytes)));
  }
  if (name->empty() || name->size() > kMaxNameBytes)
    throw InvalidArgument("a limiter's name is 1 to 200 bytes, got " + std::to_string(name->size()));
  return *name;
}

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
  store_takes_key_parts_ = store_->traits().key_parts;
  if (!options_.prefix) options_.prefix = store_->key_prefix();
  validate_key_prefix(*options_.prefix);
  key_head_ = *options_.prefix + ":{";
  policies_ = make_policies(parse_rates(policy), PolicyOptions{options_.algorithm, options_.burst, options_.buckets});
  max_cost_ = policies_[0].capacity();
  for (const Policy& p : policies_) {
    std::string suffix = key_suffix(p, false);
    // The same rate twice would name one state twice: one hit would charge it twice.
    if (std::find(key_suffixes_.begin(), key_suffixes_.end(), suffix) != key_suffixes_.end())
      throw InvalidArgument("the rate " + describe(p) + " appears twice in \"" + std::string(policy.substr(0, 200)) +
                            "\"");
    key_suffixes_.push_back(std::move(suffix));
    escaped_suffixes_.push_back(key_suffix(p, true));
    max_cost_ = std::min(max_cost_, p.capacity());
  }
  // A new form per limiter, one number per policy: never reused, so an entry matched under it stays matched.
  static std::atomic<uint64_t> next_form{1};
  form_ = next_form.fetch_add(policies_.size(), std::memory_order_relaxed);
  store_counts_ = store_->decision_stripes() > 0;
  counts_ = std::make_shared<DecisionCounts>(name_of(options_.name, policy), store_->decision_stripes());
  on_failure_.limit = policies_[0].capacity();
  if (options_.on_store_error == OnStoreError::allow) {
    // The store could not tell: report the full quota.
    on_failure_.allowed = true;
    on_failure_.remaining = on_failure_.limit;
  } else {
    on_failure_.used = on_failure_.limit;
    on_failure_.retry_after_us = on_failure_.reset_after_us = std::min(policies_[0].period_us, kFailClosedRetryUs);
  }
}

void Limiter::validate(std::string_view key, int64_t cost) const {
  // One test on every call's path; the messages are built out of it.
  if (__builtin_expect(key.empty() || key.size() > kMaxKeyBytes || cost < 1 || cost > max_cost_, 0))
    refuse(key, cost);
}

__attribute__((cold, noinline)) void Limiter::refuse(std::string_view key, int64_t cost) const {
  if (key.empty()) throw InvalidArgument("the key is empty; a key is 1 to 4096 bytes");
  if (key.size() > kMaxKeyBytes)
    throw InvalidArgument("the key is " + std::to_string(key.size()) + " bytes; a key is 1 to 4096 bytes");
  throw InvalidArgument("cost must be between 1 and " + std::to_string(max_cost_) + " (the capacity of " +
                          describe(policies_[0]) + (policies_.size() > 1 ? " and the other rates" : "") +
                          "), got " + std::to_string(cost));
}

std::string Limiter::storage_key(std::string_view key, size_t index) const {
  std::string out;
  assign_key(out, key, index, true);
  return out;
}

// Reuses the string's storage: after the first call on a thread, building keys allocates nothing.
void Limiter::assign_key(std::string& out, std::string_view key, size_t index, bool escape) const {
  const bool escaped = escape && needs_escape(key);
  const std::string& suffix = escaped ? escaped_suffixes_[index] : key_suffixes_[index];
  // One resize and three copies: a few ns less than assign + append + append on the hot path.
  out.resize(key_head_.size() + (escaped ? escaped_size(key) : key.size()) + suffix.size());
  char* p = &out[0];
  std::memcpy(p, key_head_.data(), key_head_.size());
  p += key_head_.size();
  if (escaped) {
    p = write_escaped(p, key);
  } else {
    std::memcpy(p, key.data(), key.size());
    p += key.size();
  }
  std::memcpy(p, suffix.data(), suffix.size());
}

void Limiter::fill_keys(std::string_view key, std::vector<std::string>& keys) const {
  keys.resize(policies_.size());
  // A store that takes key parts is given them unescaped, and its whole keys are built the same way.
  for (size_t i = 0; i < policies_.size(); ++i) assign_key(keys[i], key, i, !store_takes_key_parts_);
}

namespace {

bool is_store_failure(const Error& e) {
  return e.code() == ErrorCode::store_unavailable || e.code() == ErrorCode::store_timeout ||
         e.code() == ErrorCode::store_error;
}

// A callback that runs where `where` says. Its arguments are copied when it has to move to the callback thread.
DecisionCallback deliver(DecisionCallback done, Completion where) {
  if (where == Completion::any_thread) return done;
  return [done = std::move(done)](const Decision* d, const Error* e) {
    if (d != nullptr) {
      run_on_callback_thread([done, d = *d] { done(&d, nullptr); });
    } else {
      run_on_callback_thread([done, code = e->code(), message = std::string(e->what())] {
        const Error error(code, message);
        done(nullptr, &error);
      });
    }
  };
}

}  // namespace

StoreCall Limiter::call_for(std::string_view key, int64_t cost, Mode mode, std::vector<std::string>* keys,
                            int64_t mode_arg) const {
  if (keys != nullptr) fill_keys(key, *keys);
  // Every field named at once: "StoreCall call; call.x = ..." zeroes the whole struct first, which g++ does with a
  // `rep stos` that costs more on the hot path than the rest of building the call (issue 39).
  return StoreCall{policies_.data(),
                   keys != nullptr ? keys->data() : nullptr,
                   policies_.size(),
                   key,
                   cost,
                   mode,
                   key_head_,
                   key_suffixes_.data(),
                   form_,
                   mode == Mode::cancel ? 0 : mode_arg,
                   mode == Mode::cancel ? mode_arg : 0,
                   store_counts_ ? counts_.get() : nullptr};
}

Decision Limiter::decide(std::string_view key, int64_t cost, Mode mode, int64_t mode_arg) {
  validate(key, cost);
  // The memory store's hit, in a frame of its own: the path with whole keys and counting here has a larger one.
  if (!store_takes_key_parts_ || !store_counts_) return decide_with_keys(key, cost, mode, mode_arg);
  try {
    return store_->decide(call_for(key, cost, mode, nullptr, mode_arg));
  } catch (const StoreError&) {  // an in-process store does not fail, but one that did is handled all the same
    return failed(mode, cost);
  }
}

__attribute__((noinline)) Decision Limiter::decide_with_keys(std::string_view key, int64_t cost, Mode mode,
                                                             int64_t mode_arg) {
  try {
    // Kept per thread, and touched only here: a thread_local costs a call per use in a shared library.
    thread_local std::vector<std::string> keys;
    const Decision d = store_->decide(call_for(key, cost, mode, store_takes_key_parts_ ? nullptr : &keys, mode_arg));
    if (!store_counts_) count(mode, d, cost, false);
    return d;
  } catch (const StoreError&) {
    return failed(mode, cost);
  }
}

// Called in a handler of StoreError only: rethrows it, or counts and returns the fallback decision.
Decision Limiter::failed(Mode mode, int64_t cost) const {
  if (options_.on_store_error == OnStoreError::raise) throw;
  count(mode, fallback(mode), cost, true);
  return fallback(mode);
}

void Limiter::count(Mode mode, const Decision& d, int64_t cost, bool fallback) const {
  if (counted(mode)) counts_->add(d.allowed, cost, fallback);
}

void Limiter::count_fallback(bool allowed, int64_t cost) const { counts_->add(allowed, cost, true); }

LimiterStats Limiter::stats() const {
  LimiterStats s = counts_->totals();
  s.name = counts_->name();
  return s;
}

const std::string& Limiter::name() const { return counts_->name(); }

const Decision& Limiter::fallback(Mode mode) const {
  static const Decision not_given;  // a cancel that failed gave nothing back, whatever on_store_error says
  return mode == Mode::cancel ? not_given : on_failure_;
}

void Limiter::validate_reservations(const char* call) const {
  const Algorithm a = policies_[0].algorithm;
  if (a != Algorithm::gcra && a != Algorithm::token_bucket)
    throw InvalidArgument(std::string(call) + " needs the gcra or token_bucket algorithm, not " +
                          std::string(algorithm_name(a)) + ": a window algorithm cannot hold a slot in a later window "
                          "(docs/algorithms.md, \"Reservations\")");
}

void Limiter::validate_reserve(int64_t max_wait_us) const {
  validate_reservations("reserve");
  if (max_wait_us < 0) throw InvalidArgument("max_wait must be >= 0, got " + std::to_string(max_wait_us) + " µs");
}

Decision Limiter::refund(std::string_view key, int64_t cost) { return decide(key, cost, Mode::refund); }

Decision Limiter::reserve(std::string_view key, int64_t cost, int64_t max_wait_us) {
  validate_reserve(max_wait_us);
  return decide(key, cost, Mode::reserve, std::min(max_wait_us, kMaxReserveWaitUs));
}

bool Limiter::cancellable(const Decision& reservation) const {
  return reservation.allowed && reservation.ticket != 0 && policies_.size() == 1;
}

bool Limiter::cancel(std::string_view key, int64_t cost, const Decision& reservation) {
  validate(key, cost);
  validate_reservations("cancel");
  if (!cancellable(reservation)) return false;
  return decide(key, cost, Mode::cancel, reservation.ticket).allowed;
}

namespace {

// The storage keys of decide_now's calls, kept per thread (see Limiter::decide).
std::vector<std::string>& now_keys() {
  thread_local std::vector<std::string> keys;
  return keys;
}

}  // namespace

bool Limiter::hit_now(std::string_view key, int64_t cost, Decision& out) {
  validate(key, cost);
  std::vector<std::string>& keys = now_keys();
  if (!store_->decide_now(call_for(key, cost, Mode::hit, store_takes_key_parts_ ? nullptr : &keys), out))
    return false;
  if (!store_counts_) count(Mode::hit, out, cost, false);
  return true;
}

bool Limiter::peek_now(std::string_view key, int64_t cost, Decision& out) {
  validate(key, cost);
  std::vector<std::string>& keys = now_keys();
  return store_->decide_now(call_for(key, cost, Mode::peek, store_takes_key_parts_ ? nullptr : &keys), out);
}

void Limiter::reset(std::string_view key) {
  validate(key, 1);
  std::vector<std::string> keys;
  fill_keys(key, keys);
  store_->reset(keys.data(), keys.size(), key);
}

std::vector<StoreCall> Limiter::many_calls(const std::vector<std::string_view>& keys, int64_t cost,
                                           std::vector<std::vector<std::string>>& storage) const {
  for (std::string_view key : keys) validate(key, cost);
  storage.resize(keys.size());
  std::vector<StoreCall> calls(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    fill_keys(keys[i], storage[i]);
    StoreCall& call = calls[i];
    call.policies = policies_.data();
    call.keys = storage[i].data();
    call.count = storage[i].size();
    call.tag = keys[i];
    call.cost = cost;
    call.key_head = key_head_;
    call.key_suffixes = key_suffixes_.data();
    if (store_counts_) call.counts = counts_.get();
  }
  return calls;
}

std::vector<Decision> Limiter::hit_many(const std::vector<std::string_view>& keys, int64_t cost) {
  std::vector<std::vector<std::string>> storage;
  const std::vector<StoreCall> calls = many_calls(keys, cost, storage);
  std::vector<Decision> out(keys.size());
  std::vector<std::optional<StoreError>> errors(keys.size());
  store_->decide_many(calls.data(), calls.size(), out.data(), errors.data());
  // Only the calls that failed get on_store_error's answer; the others keep the store's.
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!errors[i]) {
      if (!store_counts_) count(Mode::hit, out[i], cost, false);
      continue;
    }
    if (options_.on_store_error == OnStoreError::raise) throw *errors[i];
    out[i] = on_failure_;
    count(Mode::hit, out[i], cost, true);
  }
  return out;
}

void Limiter::decide_async(std::string_view key, int64_t cost, Mode mode, DecisionCallback done, Completion where,
                           int64_t mode_arg) {
  validate(key, cost);
  std::vector<std::string> keys;
  const StoreCall call = call_for(key, cost, mode, store_takes_key_parts_ ? nullptr : &keys, mode_arg);
  DecisionCallback answer = deliver(std::move(done), where);
  // The store stays alive until the call completes, even if this limiter does not.
  // The counts go with the call: the limiter may be gone when it is answered.
  std::shared_ptr<DecisionCounts> counts = counted(mode) ? counts_ : nullptr;
  store_->decide_async(call, [answer = std::move(answer), raise = options_.on_store_error == OnStoreError::raise,
                              fallback = fallback(mode), store = store_, counts = std::move(counts),
                              by_store = store_counts_, cost](const Decision* d, const Error* e) {
    const bool failed = e != nullptr && !raise && is_store_failure(*e);
    if (failed) d = &fallback, e = nullptr;
    if (counts != nullptr && d != nullptr && (failed || !by_store)) counts->add(d->allowed, cost, failed);
    answer(d, e);
  });
}

void Limiter::hit_async(std::string_view key, int64_t cost, DecisionCallback done, Completion where) {
  decide_async(key, cost, Mode::hit, std::move(done), where);
}

void Limiter::peek_async(std::string_view key, int64_t cost, DecisionCallback done, Completion where) {
  decide_async(key, cost, Mode::peek, std::move(done), where);
}

void Limiter::refund_async(std::string_view key, int64_t cost, DecisionCallback done, Completion where) {
  decide_async(key, cost, Mode::refund, std::move(done), where);
}

void Limiter::reserve_async(std::string_view key, int64_t cost, int64_t max_wait_us, DecisionCallback done,
                            Completion where) {
  validate_reserve(max_wait_us);
  decide_async(key, cost, Mode::reserve, std::move(done), where, std::min(max_wait_us, kMaxReserveWaitUs));
}

void Limiter::cancel_async(std::string_view key, int64_t cost, const Decision& reservation, DecisionCallback done,
                           Completion where) {
  validate(key, cost);
  validate_reservations("cancel");
  if (!cancellable(reservation)) {
    static const Decision not_given;
    return deliver(std::move(done), where)(&not_given, nullptr);
  }
  decide_async(key, cost, Mode::cancel, std::move(done), where, reservation.ticket);
}

void Limiter::reset_async(std::string_view key, DoneCallback done, Completion where) {
  validate(key, 1);
  std::vector<std::string> keys;
  fill_keys(key, keys);
  DecisionCallback answer = deliver([done = std::move(done)](const Decision*, const Error* e) { done(e); }, where);
  static const Decision none;
  store_->reset_async(keys.data(), keys.size(), key, [answer = std::move(answer), store = store_](const Error* e) {
    answer(e == nullptr ? &none : nullptr, e);
  });
}

void Limiter::hit_many_async(const std::vector<std::string_view>& keys, int64_t cost, ManyCallback done,
                             Completion where) {
  std::vector<std::vector<std::string>> storage;
  const std::vector<StoreCall> calls = many_calls(keys, cost, storage);
  const size_t n = calls.size();
  // The whole answer travels as one value to wherever `where` says.
  auto result = std::make_shared<std::vector<Decision>>(n);
  DecisionCallback answer = deliver(
      [done = std::move(done), result](const Decision* d, const Error* e) { done(d != nullptr ? result.get() : nullptr, e); },
      where);
  static const Decision ready;
  if (n == 0) {
    answer(&ready, nullptr);
    return;
  }
  store_->decide_many_async(
      calls.data(), n,
      [answer = std::move(answer), result, raise = options_.on_store_error == OnStoreError::raise,
       fallback = on_failure_, store = store_, counts = counts_, by_store = store_counts_,
       cost](const Decision* decisions, const std::optional<StoreError>* errors) {
        for (size_t i = 0; i < result->size(); ++i) {
          if (!errors[i]) {
            (*result)[i] = decisions[i];
            if (!by_store) counts->add(decisions[i].allowed, cost, false);
          } else if (raise) {
            answer(nullptr, &*errors[i]);
            return;
          } else {
            (*result)[i] = fallback;
            counts->add(fallback.allowed, cost, true);
          }
        }
        answer(&ready, nullptr);
      });
}

}  // namespace ratewarden
