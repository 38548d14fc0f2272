// The five algorithms as functions of (state, now, policy, cost, mode), exactly as docs/algorithms.md defines them.
//
// Each function first normalises the state at `now` (drops what has expired), then decides. For an allowed hit it
// consumes `cost`; a denied hit and a peek leave the state as normalised. The caller validated `cost` (1 ..
// policy.capacity()) and owns the clock. The returned expiry is the instant after which the state no longer
// affects any decision; a store may drop it then (a state that is already expired equals an absent key).
#pragma once

#include <cstdint>
#include <vector>

#include "ratewarden/decision.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {

struct Outcome {
  Decision decision;
  int64_t expires_at_us = 0;
};

struct FixedWindowState {
  int64_t count = 0;
  int64_t start_us = 0;
};
Outcome fixed_window(FixedWindowState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode);

// The allowed hits, oldest first, as a queue that reuses its storage.
struct SlidingLogState {
  struct Entry {
    int64_t at_us;
    int64_t cost;
  };
  std::vector<Entry> entries;
  size_t head = 0;  // entries before head have expired
};
Outcome sliding_log(SlidingLogState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode);

// Counts of the last buckets + 1 clock-aligned buckets, newest last; bucket index of the newest.
struct SlidingWindowState {
  std::vector<int64_t> counts;
  int64_t newest = 0;
};
Outcome sliding_window(SlidingWindowState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode);

// A new key starts full: `fresh` marks a state that was never charged.
struct TokenBucketState {
  int64_t credit_us = 0;
  int64_t last_us = 0;
  bool fresh = true;
};
Outcome token_bucket(TokenBucketState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode);

struct GcraState {
  int64_t tat_us = 0;
};
Outcome gcra(GcraState& state, int64_t now_us, const Policy& policy, int64_t cost, Mode mode);

// Several policies on one key: the reported decision (docs/algorithms.md, "Several policies on one key").
// `decisions` holds one decision per policy, all from the same mode; `allowed` is whether every policy allowed.
Decision combine_decisions(const std::vector<Decision>& decisions);

}  // namespace ratewarden
