// The process's figures as metric families (docs/observability.md): the names, types, help texts and labels of
// every series, decided here once for every exporter — Python's and Node's Prometheus collectors and OpenTelemetry
// instruments, the rate limit service's /metrics. Their number is bounded by the limiter and store names
// (kMaxNames each), never by keys.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ratewarden/stats.hpp"

namespace ratewarden {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  double value = 0;
};

struct HistogramSample {
  Labels labels;
  std::vector<std::pair<double, int64_t>> buckets;  // (upper bound, cumulative count), +Inf last
  double sum = 0;
  int64_t count = 0;
};

struct MetricFamily {
  enum class Type { counter, gauge, histogram };
  std::string name;  // counters end in _total; a name that ends in _seconds has the unit "s"
  std::string help;
  Type type = Type::gauge;
  std::vector<Sample> samples;                // counters and gauges
  std::vector<HistogramSample> histograms;    // histograms
  // The unit, in UCUM as OpenTelemetry writes it: "s", or an annotation of what is counted ("{decision}").
  // Prometheus' text (0.0.4) has no place for it: the OpenTelemetry instruments of the bindings carry it.
  std::string unit;
};

// The families of these figures (process_limiter_stats(), process_store_stats() by default). A family of no
// sample is left out; a store's series appear only for what it is (memory, network, hybrid, PostgreSQL).
std::vector<MetricFamily> metric_families(const std::vector<LimiterStats>& limiters,
                                          const std::vector<StoreStats>& stores);
std::vector<MetricFamily> metric_families();

// Every family metric_families() can give, each with one sample (or histogram series) whose labels name the
// family's labels: for exporters that declare their series before the figures exist (OpenTelemetry's instruments,
// prom-client's metrics). The families of one limiter and of two stores that are everything a store can be
// (in-process; network, hybrid and PostgreSQL at once), in metric_families()' order.
std::vector<MetricFamily> metric_catalog();

// The Prometheus text exposition format (version 0.0.4) of `families`.
std::string prometheus_text(const std::vector<MetricFamily>& families);

}  // namespace ratewarden
