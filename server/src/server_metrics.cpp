#include "server_metrics.hpp"

#include <cmath>

namespace ratewarden::server {

void ServerMetrics::request(Outcome outcome, int64_t duration_ns) {
  const double seconds = static_cast<double>(duration_ns) * 1e-9;
  size_t b = 0;
  while (b < kDurationBuckets.size() && seconds > kDurationBuckets[b]) ++b;
  buckets_[outcome][b].fetch_add(1, std::memory_order_relaxed);
  sum_ns_[outcome].fetch_add(duration_ns, std::memory_order_relaxed);
}

bool ServerMetrics::enter(int64_t max) {
  if (in_flight_.fetch_add(1, std::memory_order_relaxed) < max) return true;
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

std::vector<MetricFamily> ServerMetrics::families() const {
  static const char* const names[] = {"ok", "over_limit", "error"};
  MetricFamily requests{"ratewarden_server_request_duration_seconds",
                        "ShouldRateLimit calls (gRPC and /json) by outcome, from the request to its answer",
                        MetricFamily::Type::histogram, {}, {}, "s"};
  for (int o = 0; o < kOutcomes; ++o) {
    HistogramSample h{{{"outcome", names[o]}}, {}, 0, 0};
    for (size_t b = 0; b <= kDurationBuckets.size(); ++b) {
      h.count += buckets_[o][b].load(std::memory_order_relaxed);
      h.buckets.emplace_back(b < kDurationBuckets.size() ? kDurationBuckets[b] : INFINITY, h.count);
    }
    h.sum = static_cast<double>(sum_ns_[o].load(std::memory_order_relaxed)) * 1e-9;
    requests.histograms.push_back(std::move(h));
  }
  MetricFamily loads{"ratewarden_server_config_loads_total", "Configuration loads (at start, SIGHUP, file changes)",
                     MetricFamily::Type::counter, {}, {}, "{load}"};
  loads.samples.push_back(Sample{{{"result", "success"}}, static_cast<double>(loads_ok_.load())});
  loads.samples.push_back(Sample{{{"result", "error"}}, static_cast<double>(loads_failed_.load())});
  MetricFamily in_flight{"ratewarden_server_requests_in_flight",
                         "ShouldRateLimit calls (gRPC and /json) being decided (bounded by --max-in-flight)",
                         MetricFamily::Type::gauge, {}, {}, "{request}"};
  in_flight.samples.push_back(Sample{{}, static_cast<double>(in_flight_.load(std::memory_order_relaxed))});
  std::vector<MetricFamily> out;
  out.push_back(std::move(requests));
  out.push_back(std::move(in_flight));
  out.push_back(std::move(loads));
  const int64_t tls_ok = tls_ok_.load(), tls_failed = tls_failed_.load();
  if (tls_ok + tls_failed > 0) {  // TLS is on
    MetricFamily tls{"ratewarden_server_tls_loads_total",
                     "Loads of the HTTP listener's TLS files (at start, on a change, at a config reload)",
                     MetricFamily::Type::counter, {}, {}, "{load}"};
    tls.samples.push_back(Sample{{{"result", "success"}}, static_cast<double>(tls_ok)});
    tls.samples.push_back(Sample{{{"result", "error"}}, static_cast<double>(tls_failed)});
    out.push_back(std::move(tls));
  }
  return out;
}

}  // namespace ratewarden::server
