// The algorithms as functions of (state, now, policy, cost, mode), exactly as docs/algorithms.md defines them, one
// per row of algorithm_table.hpp, and the multi-policy driver that every store runs them through.
//
// Each function first normalises the state at `now` (drops what has expired), then decides. For an allowed hit it
// consumes `cost`; a denied hit and a peek leave the state as normalised. A refund gives back up to `cost` of what
// was charged most recently (never more than the state holds) and then decides as a peek. The caller validated `cost` (1 ..
// policy.capacity()) and owns the clock. The decision is written to `decision` (in place: on the hot path it is the
// caller's own return value, never a copy); the function returns the state's expiry, the instant after which the
// state no longer affects any decision: a store may drop it then (a state already expired equals an absent key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

#include "ratewarden/decision.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {

struct FixedWindowState {
  int64_t count = 0;
  int64_t start_us = 0;
};
int64_t fixed_window(FixedWindowState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                Decision& decision);

// The allowed hits, oldest first, as a queue that reuses its storage, and the running total of their costs: a call
// costs O(1) amortised whatever the limit (each entry is dropped once; a denial reads only the entries its
// retry_after needs).
struct SlidingLogState {
  struct Entry {
    int64_t at_us;
    int64_t cost;
  };
  std::vector<Entry> entries;
  size_t head = 0;  // entries before head have expired
  int64_t sum = 0;  // the costs of entries[head..]
};
int64_t sliding_log(SlidingLogState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                Decision& decision);

// Counts of the last buckets + 1 clock-aligned buckets, newest last; bucket index of the newest.
struct SlidingWindowState {
  std::vector<int64_t> counts;
  int64_t newest = 0;
};
int64_t sliding_window(SlidingWindowState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                Decision& decision);

// A new key starts full: `fresh` marks a state that was never charged.
struct TokenBucketState {
  int64_t credit_us = 0;
  int64_t last_us = 0;
  bool fresh = true;
};
int64_t token_bucket(TokenBucketState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                Decision& decision);

struct GcraState {
  int64_t tat_us = 0;
};
int64_t gcra(GcraState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                Decision& decision);

namespace detail {
template <class Void, class... States>
using VariantOf = std::variant<States...>;
}  // namespace detail

// The state of any algorithm: one alternative per row of algorithm_table.hpp, in table order (the leading void
// absorbs the first comma of the expansion).
#define RATEWARDEN_STATE(name, State, option, fast) , State
using AlgorithmState = detail::VariantOf<void RATEWARDEN_ALGORITHMS(RATEWARDEN_STATE)>;
#undef RATEWARDEN_STATE

// The state of an absent key of `algorithm`.
AlgorithmState fresh_state(Algorithm algorithm);
// Runs policy.algorithm's function on `state`, which holds that algorithm's alternative (the storage key names the
// algorithm; std::bad_variant_access for a caller that broke that). Inline: it is on every hit's path.
inline int64_t evaluate(AlgorithmState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode,
                        Decision& decision) {
  switch (policy.algorithm) {
#define RATEWARDEN_EVALUATE(name, State, option, fast) \
  case Algorithm::name: return name(std::get<State>(state), now_us, policy, cost, mode, decision);
    RATEWARDEN_ALGORITHMS(RATEWARDEN_EVALUATE)
#undef RATEWARDEN_EVALUATE
  }
  __builtin_unreachable();  // every Algorithm has its row
}

// Several policies on one key: the reported decision (docs/algorithms.md, "Several policies on one key"), with its
// policy_index. `decisions` holds one decision per policy, all from the same mode.
Decision combine_decisions(const std::vector<Decision>& decisions);

// One call on every policy of one key, as every store decides it (the twin of decide_all.lua, which the Redis
// scripts run): evaluate every policy; a hit charges them all only if every one allows it. `states[i]` holds the
// state of `policies[i]` (fresh_state() for an absent key) and is updated in place; `expires_at_us[i]` receives its
// expiry. Returns combine_decisions() of the policies' decisions: a hit charged the states exactly when it is allowed.
// Mode::reserve and Mode::cancel (gcra and token_bucket) take `mode_arg`: max_wait_us, or the reservation's ticket
// (cancel takes one policy); they too changed the states exactly when the decision is allowed.
Decision decide_all(const Policy* policies, AlgorithmState* const* states, size_t count, int64_t now_us, int64_t cost,
                    Mode mode, int64_t* expires_at_us, int64_t mode_arg = 0);

}  // namespace ratewarden
