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
#include "ratewarden/stats.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class DecisionCounts;

// What a call returns when the store fails: the error (raise), an allowed decision (fail open) or a denial
// (fail closed).
enum class OnStoreError { raise, allow, deny };
OnStoreError parse_on_store_error(std::string_view name);

inline constexpr size_t kMaxKeyBytes = 4096;

struct LimiterOptions {
  Algorithm algorithm = Algorithm::fixed_window;
  std::optional<int64_t> burst;
  std::optional<int64_t> buckets;  // checked by the core (bindings pass what they are given)
  std::optional<std::string> prefix;  // default: the store's key_prefix() ("rw")
  OnStoreError on_store_error = OnStoreError::raise;
  // What its figures are counted under (stats(), process_limiter_stats(), the exporters' `limiter` label): 1 to
  // 200 bytes; by default the policy string. Limiters of one name count together.
  std::optional<std::string> name;
};

// Where an asynchronous call's callback runs (docs/threading.md).
enum class Completion {
  // On the library's callback thread, never on the caller's thread nor before the call returns. The callback may
  // block and may call anything in the library, synchronous calls included. One thread serves every such callback
  // of the process, in order: a callback that blocks delays the others.
  library_thread,
  // Wherever the answer is ready: on the calling thread before the call returns (the memory store; a call that
  // fails at once), else on the I/O thread. Cheapest; for callbacks that only hand the answer over (to an event
  // loop's queue, a future): they must not block nor make synchronous calls to a network store.
  any_thread,
};

class Limiter {
 public:
  // Throws InvalidArgument for a bad policy string or option.
  Limiter(std::string_view policy, std::shared_ptr<Store> store, LimiterOptions options = {});

  // Consumes `cost` if every policy allows it. Throws InvalidArgument for a bad key or cost and StoreError
  // (with on_store_error = raise) when the store fails.
  Decision hit(std::string_view key, int64_t cost = 1) { return decide(key, cost, Mode::hit); }
  // What hit would decide, consuming nothing.
  Decision peek(std::string_view key, int64_t cost = 1) { return decide(key, cost, Mode::peek); }
  // hit / peek answered at once in-process when the store can (Store::decide_now): true and `out` set; false when
  // the call needs the store (nothing was done). Throws InvalidArgument for a bad key or cost.
  bool hit_now(std::string_view key, int64_t cost, Decision& out);
  bool peek_now(std::string_view key, int64_t cost, Decision& out);
  // Forgets the key (every policy).
  void reset(std::string_view key);
  // Gives back up to `cost` of what was charged most recently on the key, in every policy (docs/algorithms.md,
  // "Refunds": e.g. a login that succeeded, when only failures should count), atomically in the store; returns what
  // a peek of `cost` decides afterwards. An absent key has nothing to give back. Store failures as hit's.
  Decision refund(std::string_view key, int64_t cost = 1);

  // Reservations (gcra and token_bucket; docs/algorithms.md, "Reservations"): charges a hit at the earliest instant
  // no later than now + max_wait_us at which every policy allows it, atomically in the store, so that callers of
  // every process are served in arrival order. Allowed: the caller may act after decision.wait_us (0: now). Denied:
  // nothing was charged; retry_after_us is the wait the reservation would have needed. Throws InvalidArgument for
  // another algorithm or a negative max_wait_us. Store failures are answered as hit's (on_store_error).
  // A max_wait_us beyond kMaxReserveWaitUs waits that long at most.
  Decision reserve(std::string_view key, int64_t cost, int64_t max_wait_us);
  // 2^50 µs, about 35.7 years: slots reserved further ahead would take a state past the 2^53 µs that every store
  // computes exactly (docs/algorithms.md, "Limits on the values"), and then wrap it.
  static constexpr int64_t kMaxReserveWaitUs = int64_t{1} << 50;
  // Gives the slot of `reservation` (reserve's allowed decision for this key and cost) back: true when it was given
  // back, which it is when nothing was charged on the key after it; otherwise the slot stays spent (giving it back
  // would let a newcomer share a later caller's slot), as it does for a limiter of several policies. Throws
  // InvalidArgument for a window algorithm, as reserve. A store failure is thrown with on_store_error = raise, else
  // answered false.
  bool cancel(std::string_view key, int64_t cost, const Decision& reservation);
  // One hit per key, in one round trip where the store can. Keys the store failed on get on_store_error's answer;
  // with raise, the first failure is thrown (keys the store already decided stay charged).
  std::vector<Decision> hit_many(const std::vector<std::string_view>& keys, int64_t cost = 1);

  // The asynchronous forms: they return at once and call `done` exactly once (see Completion for where). Bad input
  // throws InvalidArgument here, before anything starts, and `done` is never called. Store failures reach `done`
  // as on_store_error says (with allow / deny, as a decision). The limiter may be destroyed while calls are in
  // flight; they still complete.
  void hit_async(std::string_view key, int64_t cost, DecisionCallback done,
                 Completion where = Completion::library_thread);
  void peek_async(std::string_view key, int64_t cost, DecisionCallback done,
                  Completion where = Completion::library_thread);
  void reset_async(std::string_view key, DoneCallback done, Completion where = Completion::library_thread);
  void refund_async(std::string_view key, int64_t cost, DecisionCallback done,
                    Completion where = Completion::library_thread);
  void reserve_async(std::string_view key, int64_t cost, int64_t max_wait_us, DecisionCallback done,
                     Completion where = Completion::library_thread);
  // `done`'s decision is allowed when the slot was given back (the rest of it is a peek's).
  void cancel_async(std::string_view key, int64_t cost, const Decision& reservation, DecisionCallback done,
                    Completion where = Completion::library_thread);
  // `done(decisions, error)`: one decision per key, or the error (with raise, the first store failure).
  using ManyCallback = std::function<void(const std::vector<Decision>* decisions, const Error* error)>;
  void hit_many_async(const std::vector<std::string_view>& keys, int64_t cost, ManyCallback done,
                      Completion where = Completion::library_thread);

  // This limiter's decisions so far (LimiterStats: its name's are in process_limiter_stats()).
  LimiterStats stats() const;
  // What its figures are counted under: LimiterOptions::name, the policy string, or "other" (kMaxNames).
  const std::string& name() const;

  const std::vector<Policy>& policies() const { return policies_; }
  const LimiterOptions& options() const { return options_; }
  const std::shared_ptr<Store>& store() const { return store_; }
  // The largest cost a call may ask for: the smallest capacity of the policies.
  int64_t max_cost() const { return max_cost_; }
  // The storage key of `key` under policy `index`, as a store shared between processes writes it (docs/key-format.md).
  std::string storage_key(std::string_view key, size_t index) const;
  // Throws InvalidArgument for a key or cost that no call accepts.
  void validate(std::string_view key, int64_t cost) const;
  // Counts, in this limiter's figures, a decision made without the store by a layer that applies on_store_error
  // itself (the HTTP adapters: they must know the store failed, to say so), as the limiter counts its own.
  void count_fallback(bool allowed, int64_t cost) const;

 private:
  [[noreturn]] void refuse(std::string_view key, int64_t cost) const;  // validate's throw, off the hot path
  // `mode_arg`: StoreCall::max_wait_us for reserve, StoreCall::ticket for cancel.
  Decision decide(std::string_view key, int64_t cost, Mode mode, int64_t mode_arg = 0);
  Decision decide_with_keys(std::string_view key, int64_t cost, Mode mode, int64_t mode_arg);
  Decision failed(Mode mode, int64_t cost) const;
  void decide_async(std::string_view key, int64_t cost, Mode mode, DecisionCallback done, Completion where,
                    int64_t mode_arg = 0);
  // The call for one key, with the whole storage keys built in `keys` unless it is null (the store takes parts).
  StoreCall call_for(std::string_view key, int64_t cost, Mode mode, std::vector<std::string>* keys,
                     int64_t mode_arg = 0) const;
  // Whether `reservation` has a slot this limiter can try to give back (an allowed one with a ticket, one policy).
  bool cancellable(const Decision& reservation) const;
  // Throws InvalidArgument, naming `call`, unless the policies can take reservations (a window algorithm has none
  // to give back either: its store scripts would read a cancel as a peek).
  void validate_reservations(const char* call) const;
  // ... and unless max_wait_us >= 0.
  void validate_reserve(int64_t max_wait_us) const;
  // What a call of `mode` answers when the store fails and on_store_error is not raise.
  const Decision& fallback(Mode mode) const;
  // Counts a decision the store did not count: `fallback` when on_store_error gave it.
  void count(Mode mode, const Decision& d, int64_t cost, bool fallback) const;
  std::vector<StoreCall> many_calls(const std::vector<std::string_view>& keys, int64_t cost,
                                    std::vector<std::vector<std::string>>& storage) const;
  // escape: a key holding '}' written escaped (docs/key-format.md), as every store shared between processes needs.
  void assign_key(std::string& out, std::string_view key, size_t index, bool escape) const;
  void fill_keys(std::string_view key, std::vector<std::string>& keys) const;

  std::vector<Policy> policies_;
  LimiterOptions options_;
  std::shared_ptr<Store> store_;
  std::string key_head_;                   // "<prefix>:{"
  std::vector<std::string> key_suffixes_;  // "}:v<version>:<algorithm>:<limit>:<period_ms>[:<extra>]" per policy
  std::vector<std::string> escaped_suffixes_;  // "}:v<version>e:..." per policy: for keys written escaped
  int64_t max_cost_ = 0;
  // The store is given key parts (StoreCall::key_head...), never escaped: in one process, "<prefix>:{" + key +
  // "}:v3:..." names one state without escaping, for the prefix holds no brace, the suffix one, at its start.
  bool store_takes_key_parts_ = false;
  uint64_t form_ = 0;  // StoreCall::form of key_head_ + key_suffixes_[i]: form_ + i
  // Counts this limiter's decisions; shared with its calls in flight. The store counts them itself (under its
  // locks) when it has stripes for them; else the limiter does, as they are answered.
  std::shared_ptr<DecisionCounts> counts_;
  bool store_counts_ = false;
  Decision on_failure_;  // the decision on_store_error = allow / deny gives
};

// For a binding that settles a batch of answers at once and whose callers make their next calls in the same turn
// (Node's completions): the asynchronous calls this thread starts between hold_io_wakeups() and
// release_io_wakeups() leave together, after one wake-up of the library's I/O thread at the release, instead of the
// first one waking it at once and the rest trickling after. Fewer, larger writes, when the store is the bottleneck.
// Nothing is lost while held (any turn of the I/O thread takes the calls), but the release must follow on the same
// thread: until it, the calls may wait.
void hold_io_wakeups();
void release_io_wakeups();

}  // namespace ratewarden
