// The core's figures (ratewarden/stats.hpp, metric_families.hpp) as Python objects: LimiterStats, StoreStats and the
// metric families, converted as they are. The names, types, help texts and labels of the series are the core's.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ratewarden/metric_families.hpp"
#include "ratewarden/stats.hpp"

namespace ratewarden::python {
namespace {

double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

constexpr CallOutcome kOutcomes[] = {CallOutcome::ok, CallOutcome::timeout, CallOutcome::unavailable,
                                     CallOutcome::error};
static_assert(std::size(kOutcomes) == kCallOutcomes);

// Each bucket's upper bound in seconds, +Inf last.
double bucket_bound(size_t i) {
  return i < kDurationBuckets.size() ? kDurationBuckets[i] : std::numeric_limits<double>::infinity();
}

bool same(const DurationHistogram& a, const DurationHistogram& b) {
  return a.buckets == b.buckets && a.count == b.count && a.sum_seconds == b.sum_seconds;
}

bool same(const StoreStats& a, const StoreStats& b) {
  for (int64_t StoreStats::*f :
       {&StoreStats::keys, &StoreStats::max_keys, &StoreStats::evictions, &StoreStats::expired_drops,
        &StoreStats::local_denials, &StoreStats::local_allows, &StoreStats::store_calls, &StoreStats::sync_batches,
        &StoreStats::sync_lag_us, &StoreStats::invalidations, &StoreStats::circuits_open,
        &StoreStats::circuit_openings, &StoreStats::connections_open, &StoreStats::pool_size, &StoreStats::sweeps})
    if (a.*f != b.*f) return false;
  for (size_t i = 0; i < kCallOutcomes; ++i)
    if (!same(a.durations[i], b.durations[i])) return false;
  return a.name == b.name && a.network == b.network && a.hybrid == b.hybrid && a.calls == b.calls;
}

py::dict calls_dict(const StoreStats& s) {
  py::dict d;
  for (CallOutcome o : kOutcomes) d[call_outcome_name(o)] = s.calls[static_cast<size_t>(o)];
  return d;
}

py::dict labels_dict(const Labels& labels) {
  py::dict d;
  for (const auto& [k, v] : labels) d[py::str(k)] = py::str(v);
  return d;
}

const char* type_name(MetricFamily::Type t) {
  switch (t) {
    case MetricFamily::Type::counter: return "counter";
    case MetricFamily::Type::gauge: return "gauge";
    case MetricFamily::Type::histogram: return "histogram";
  }
  return "gauge";
}

void bind_limiter_stats(py::module_& m) {
  py::class_<LimiterStats>(m, "LimiterStats",
                           "A limiter's decisions (Limiter.stats(), ratewarden.limiter_stats()): hits and "
                           "reservations, counted whether the store answered or on_store_error did.")
      .def_readonly("name", &LimiterStats::name, "What the figures are counted under: the limiter's name.")
      .def_readonly("allowed", &LimiterStats::allowed)
      .def_readonly("denied", &LimiterStats::denied)
      .def_readonly("cost", &LimiterStats::cost, "The cost the allowed decisions charged.")
      .def_readonly("fallbacks", &LimiterStats::fallbacks,
                    "Decisions on_store_error ('allow' or 'deny') gave because the store failed.")
      .def("__eq__",
           [](const LimiterStats& a, py::handle b) {
             if (!py::isinstance<LimiterStats>(b)) return false;
             const auto& o = b.cast<const LimiterStats&>();
             return a.name == o.name && a.allowed == o.allowed && a.denied == o.denied && a.cost == o.cost &&
                    a.fallbacks == o.fallbacks;
           })
      .def("__hash__",
           [](const LimiterStats& s) { return py::hash(py::make_tuple(s.name, s.allowed, s.denied, s.cost)); })
      .def("__repr__", [](const LimiterStats& s) {
        return py::str("LimiterStats(name={!r}, allowed={}, denied={}, cost={}, fallbacks={})")
            .format(s.name, s.allowed, s.denied, s.cost, s.fallbacks);
      });
}

void bind_store_stats(py::module_& m) {
  py::class_<DurationHistogram>(m, "DurationHistogram",
                                "Store calls of one outcome by duration (StoreStats.durations).")
      .def_property_readonly(
          "buckets",
          [](const DurationHistogram& h) {
            std::vector<std::pair<double, int64_t>> out;
            for (size_t i = 0; i < h.buckets.size(); ++i) out.emplace_back(bucket_bound(i), h.buckets[i]);
            return out;
          },
          "(upper bound in seconds, calls) per bucket, not cumulative; the last bound is inf.")
      .def_readonly("count", &DurationHistogram::count)
      .def_readonly("sum", &DurationHistogram::sum_seconds, "The calls' durations added up, in seconds.")
      .def("__repr__", [](const DurationHistogram& h) {
        return py::str("DurationHistogram(count={}, sum={})").format(h.count, h.sum_seconds);
      });

  py::class_<StoreStats>(m, "StoreStats",
                         "What a store can tell of itself at once, without a round trip (Store.stats(), "
                         "ratewarden.store_stats()): counters since it opened, gauges as they are now.")
      .def_readonly("name", &StoreStats::name, "The store's URL, password masked: what its figures count under.")
      .def_readonly("network", &StoreStats::network, "A store on a server (Redis, Redis Cluster, PostgreSQL).")
      .def_readonly("hybrid", &StoreStats::hybrid, "A hybrid mode (?mode=local_first / async).")
      .def_readonly("keys", &StoreStats::keys, "States held: one per key and policy (expired ones until dropped).")
      .def_readonly("max_keys", &StoreStats::max_keys, "The bound on states held; 0 for a store without one.")
      .def_readonly("evictions", &StoreStats::evictions,
                    "Live states dropped to stay within max_keys since the store opened: above 0, raise the bound.")
      .def_readonly("expired_drops", &StoreStats::expired_drops, "Expired states dropped to make room.")
      .def_readonly("local_denials", &StoreStats::local_denials,
                    "Hybrid modes: denials answered in-process from the store's last answer (no round trip).")
      .def_readonly("local_allows", &StoreStats::local_allows,
                    "mode=async: hits admitted in-process from a lease already charged to the store.")
      .def_readonly("store_calls", &StoreStats::store_calls, "Hybrid modes: calls that went to the store.")
      .def_readonly("sync_batches", &StoreStats::sync_batches,
                    "Hybrid modes: background exchanges with the store (reset-log reads, lease top-ups).")
      .def_property_readonly(
          "sync_lag", [](const StoreStats& s) { return s.sync_lag_us < 0 ? -1.0 : seconds(s.sync_lag_us); },
          "Hybrid modes: seconds since the reset log was last read (-1.0: never yet).")
      .def_readonly("invalidations", &StoreStats::invalidations,
                    "Hybrid modes: local knowledge dropped because a reset was logged.")
      .def_property_readonly(
          "calls",
          &calls_dict,
          "Network stores: calls by outcome, {'ok': n, 'timeout': n, 'unavailable': n, 'error': n} ('ok': every "
          "answer, denials included).")
      .def_property_readonly(
          "durations",
          [](const StoreStats& s) {
            py::dict d;
            for (CallOutcome o : kOutcomes) d[call_outcome_name(o)] = s.durations[static_cast<size_t>(o)];
            return d;
          },
          "Network stores: the calls' durations by outcome, a DurationHistogram each.")
      .def_readonly("circuits_open", &StoreStats::circuits_open, "Servers whose circuit breaker is open now.")
      .def_readonly("circuit_openings", &StoreStats::circuit_openings, "Times a circuit breaker opened.")
      .def_readonly("connections_open", &StoreStats::connections_open, "Connections open now.")
      .def_readonly("pool_size", &StoreStats::pool_size, "PostgreSQL: the connections it may open.")
      .def_readonly("sweeps", &StoreStats::sweeps, "PostgreSQL: passes of the sweep of expired rows.")
      .def("__eq__",
           [](const StoreStats& a, py::handle b) {
             return py::isinstance<StoreStats>(b) && same(a, b.cast<const StoreStats&>());
           })
      .def("__hash__",
           [](const StoreStats& s) { return py::hash(py::make_tuple(s.name, s.keys, s.max_keys, s.evictions)); })
      .def("__repr__", [](const StoreStats& s) {
        return py::str("StoreStats(name={!r}, keys={}, max_keys={}, evictions={}, expired_drops={}, "
                       "local_denials={}, local_allows={}, store_calls={}, sync_batches={}, invalidations={}, "
                       "calls={}, circuits_open={}, circuit_openings={}, connections_open={})")
            .format(s.name, s.keys, s.max_keys, s.evictions, s.expired_drops, s.local_denials, s.local_allows,
                    s.store_calls, s.sync_batches, s.invalidations,
                    calls_dict(s), s.circuits_open, s.circuit_openings, s.connections_open);
      });
}

void bind_families(py::module_& m) {
  py::class_<HistogramSample>(m, "HistogramSample", "One histogram series of a MetricFamily.")
      .def_property_readonly("labels", [](const HistogramSample& h) { return labels_dict(h.labels); })
      .def_readonly("buckets", &HistogramSample::buckets,
                    "(upper bound, cumulative count) per bucket, in order; the last bound is inf (+Inf).")
      .def_readonly("sum", &HistogramSample::sum)
      .def_readonly("count", &HistogramSample::count)
      .def("__repr__", [](const HistogramSample& h) {
        return py::str("HistogramSample(labels={!r}, count={}, sum={})").format(labels_dict(h.labels), h.count, h.sum);
      });

  py::class_<MetricFamily>(m, "MetricFamily",
                           "One metric of the process's figures, named and typed by the core for every exporter.")
      .def_readonly("name", &MetricFamily::name, "The metric's name; a counter's ends in _total.")
      .def_property_readonly("type", [](const MetricFamily& f) { return type_name(f.type); },
                             "'counter', 'gauge' or 'histogram'.")
      .def_readonly("help", &MetricFamily::help)
      .def_readonly("unit", &MetricFamily::unit,
                    "The unit, as OpenTelemetry writes it: 's', or what is counted in braces ('{decision}').")
      .def_property_readonly(
          "samples",
          [](const MetricFamily& f) {
            py::list out;
            for (const Sample& s : f.samples) out.append(py::make_tuple(labels_dict(s.labels), s.value));
            return out;
          },
          "A counter's or gauge's series: (labels, value) each.")
      .def_readonly("histograms", &MetricFamily::histograms, "A histogram's series: a HistogramSample each.")
      .def("__repr__", [](const MetricFamily& f) {
        return py::str("MetricFamily(name={!r}, type={!r}, {} series)")
            .format(f.name, type_name(f.type), f.samples.size() + f.histograms.size());
      });
}

}  // namespace

void bind_stats(py::module_& m) {
  bind_limiter_stats(m);
  bind_store_stats(m);
  bind_families(m);
  m.def("limiter_stats", &process_limiter_stats,
        "Every limiter name's figures in this process, in the order first seen: a LimiterStats each (limiters "
        "gone keep counting in their name's).");
  m.def("store_stats", &process_store_stats,
        "Every store name's figures in this process, in the order first seen: a StoreStats each.");
  m.def(
      "metric_families", [] { return metric_families(); },
      "The process's figures as metric families (the core's names, types, help texts and labels).");
  m.def("metric_catalog", &metric_catalog,
        "Every family metric_families() can give, each with one series whose labels name the family's labels (for "
        "exporters that declare their instruments before the figures exist: ratewarden.opentelemetry).");
  m.def(
      "prometheus_text", [] { return prometheus_text(metric_families()); },
      "The process's figures in the Prometheus text exposition format (0.0.4).");
  py::list bounds;
  for (double b : kDurationBuckets) bounds.append(b);
  m.attr("DURATION_BUCKETS") = py::tuple(bounds);
}

}  // namespace ratewarden::python
