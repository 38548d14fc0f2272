#include <algorithm>

#include "ratewarden/stats.hpp"

namespace ratewarden {

LimiterStats& LimiterStats::operator+=(const LimiterStats& o) {
  allowed += o.allowed;
  denied += o.denied;
  cost += o.cost;
  fallbacks += o.fallbacks;
  return *this;
}

StoreStats& StoreStats::operator+=(const StoreStats& o) {
  for (int64_t StoreStats::*field :
       {&StoreStats::keys, &StoreStats::max_keys, &StoreStats::evictions, &StoreStats::expired_drops,
        &StoreStats::local_denials, &StoreStats::local_allows, &StoreStats::store_calls, &StoreStats::sync_batches,
        &StoreStats::invalidations, &StoreStats::circuits_open, &StoreStats::circuit_openings,
        &StoreStats::connections_open, &StoreStats::pool_size, &StoreStats::sweeps})
    this->*field += o.*field;
  sync_lag_us = std::max(sync_lag_us, o.sync_lag_us);
  network = network || o.network;
  hybrid = hybrid || o.hybrid;
  for (size_t i = 0; i < kCallOutcomes; ++i) {
    calls[i] += o.calls[i];
    DurationHistogram& h = durations[i];
    for (size_t b = 0; b < h.buckets.size(); ++b) h.buckets[b] += o.durations[i].buckets[b];
    h.count += o.durations[i].count;
    h.sum_seconds += o.durations[i].sum_seconds;
  }
  return *this;
}

const char* call_outcome_name(CallOutcome outcome) {
  switch (outcome) {
    case CallOutcome::ok: return "ok";
    case CallOutcome::timeout: return "timeout";
    case CallOutcome::unavailable: return "unavailable";
    case CallOutcome::error: return "error";
  }
  return "error";
}

}  // namespace ratewarden
