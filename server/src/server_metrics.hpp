// The service's own figures (internal), served on /metrics after the core's (ratewarden/metric_families.hpp):
// requests by outcome and their durations, requests in flight, configuration and TLS file loads. Decisions by rule
// are the core's ratewarden_decisions_total: each rule's limiter is named "<domain>.<key>[_<value>]..." (bounded by
// the config).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "ratewarden/metric_families.hpp"

namespace ratewarden::server {

class ServerMetrics {
 public:
  enum Outcome { ok, over_limit, error, kOutcomes };
  void request(Outcome outcome, int64_t duration_ns);
  void config_load(bool ok) { (ok ? loads_ok_ : loads_failed_).fetch_add(1, std::memory_order_relaxed); }
  void tls_load(bool ok) { (ok ? tls_ok_ : tls_failed_).fetch_add(1, std::memory_order_relaxed); }
  // A request being decided: counted by enter() unless `max` are already (false then), until its leave().
  bool enter(int64_t max);
  void leave() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  std::vector<MetricFamily> families() const;

 private:
  std::atomic<int64_t> buckets_[kOutcomes][kDurationBuckets.size() + 1] = {};
  std::atomic<int64_t> sum_ns_[kOutcomes] = {};
  std::atomic<int64_t> loads_ok_{0}, loads_failed_{0};
  std::atomic<int64_t> tls_ok_{0}, tls_failed_{0};
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace ratewarden::server
