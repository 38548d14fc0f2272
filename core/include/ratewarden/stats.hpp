// What the limiter did, always counted and cheap to read (docs/observability.md): a limiter's decisions, a store's
// calls, their durations and failures, its circuits, its keys. Every binding reads these same figures, and the
// Prometheus and OpenTelemetry exporters turn them into series, one per limiter name and store name: their number
// is bounded by the program's configuration, never by the keys it sees.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ratewarden {

// A limiter's decisions (hits and reservations: peeks, refunds and cancels are not decisions). Counted whether the
// store answered or on_store_error did (`fallbacks` says how many of them it did).
struct LimiterStats {
  std::string name;
  int64_t allowed = 0;
  int64_t denied = 0;
  int64_t cost = 0;       // the cost the allowed ones charged
  int64_t fallbacks = 0;  // decisions on_store_error = allow / deny gave because the store failed

  LimiterStats& operator+=(const LimiterStats& other);
};

// The outcome of a call to a network store. `ok` includes every answer the store gave, denials included.
enum class CallOutcome { ok, timeout, unavailable, error };
inline constexpr size_t kCallOutcomes = 4;
const char* call_outcome_name(CallOutcome outcome);  // "ok", "timeout", "unavailable", "error"

// The upper bounds (seconds) of the store call duration histogram's buckets, Prometheus' convention (the last
// bucket, +Inf, is implied): from 100 µs, a round trip on a local network, to 2.5 s, beyond any sane timeout.
inline constexpr std::array<double, 14> kDurationBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025,  0.05,    0.1,    0.25,  0.5,   1.0,   2.5};

struct DurationHistogram {
  std::array<int64_t, kDurationBuckets.size() + 1> buckets{};  // per bucket (not cumulative); the last is +Inf
  int64_t count = 0;
  double sum_seconds = 0;
};

// What a store can tell about itself at once, without a round trip. Counters count since the store opened (or, in
// process_store_stats(), since the process first opened a store of that name); gauges say what holds now.
struct StoreStats {
  std::string name;  // describe(): the URL, password masked
  bool network = false;  // a store on a server (Redis, Redis Cluster, PostgreSQL; a hybrid mode's)
  bool hybrid = false;   // ?mode=local_first / async
  // In-process states (the memory store; a hybrid mode's local knowledge). Network stores report zeros.
  int64_t keys = 0;       // gauge: states held now (one per key and policy; expired ones until they are dropped)
  int64_t max_keys = 0;   // gauge: the bound on states held; 0 when the store has none
  int64_t evictions = 0;  // live states dropped to stay within max_keys (size it up if > 0)
  int64_t expired_drops = 0;  // expired states dropped to make room
  // The hybrid modes (?mode=local_first / async, docs/hybrid.md); zeros for every other store.
  int64_t local_denials = 0;   // denials answered from what the store last said, with no round trip
  int64_t local_allows = 0;    // async: hits admitted from a lease already charged to the store
  int64_t store_calls = 0;     // calls that went to the store on the caller's behalf
  int64_t sync_batches = 0;    // background exchanges with the store (reset-log reads, lease top-ups)
  // gauge: age of the last successful read of the reset log; -1 while none has been made, which is what every
  // store but a hybrid mode's reports (it reads none) and a hybrid mode's until its first read.
  int64_t sync_lag_us = -1;
  int64_t invalidations = 0;   // local knowledge dropped because a reset was logged
  // Network stores (a hybrid mode: its shared store's): calls by outcome and their durations, from the call to
  // its answer. The memory store's calls are not timed (a clock read would cost as much as the call).
  std::array<int64_t, kCallOutcomes> calls{};
  std::array<DurationHistogram, kCallOutcomes> durations{};
  int64_t circuits_open = 0;      // gauge: servers whose circuit is open now
  int64_t circuit_openings = 0;   // times a circuit opened
  int64_t connections_open = 0;   // gauge
  // PostgreSQL: connections it may open, and sweeps of expired rows done.
  int64_t pool_size = 0;  // gauge
  int64_t sweeps = 0;

  // Adds `other`'s figures: counters and gauges summed, sync_lag_us the larger (-1 only when both are); what it
  // is, or-ed.
  StoreStats& operator+=(const StoreStats& other);
};

// Every limiter name's and store name's figures in this process, by name in the order first seen: limiters
// destroyed and stores closed keep counting in their name's counters (so that counters never go back); their
// gauges leave. At most kMaxNames names of each kind: later ones are counted under the name "other".
inline constexpr size_t kMaxNames = 1000;
std::vector<LimiterStats> process_limiter_stats();
std::vector<StoreStats> process_store_stats();

}  // namespace ratewarden
