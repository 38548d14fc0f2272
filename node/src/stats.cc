#include "stats.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "errors.hpp"
#include "ratewarden/metric_families.hpp"

namespace rwnode {
namespace {

using ratewarden::MetricFamily;

double num(int64_t v) { return static_cast<double>(v); }

const char* type_name(MetricFamily::Type type) {
  switch (type) {
    case MetricFamily::Type::counter: return "counter";
    case MetricFamily::Type::gauge: return "gauge";
    case MetricFamily::Type::histogram: return "histogram";
  }
  return "untyped";
}

Napi::Object labels_object(Napi::Env env, const ratewarden::Labels& labels) {
  Napi::Object out = Napi::Object::New(env);
  for (const auto& [name, value] : labels) out.Set(name, value);
  return out;
}

// { name, type, help, unit, samples: [{ labels, value }],
//   histograms: [{ labels, buckets: [[le, cumulative]], sum, count }] }
Napi::Object family_object(Napi::Env env, const MetricFamily& f) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", f.name);
  out.Set("type", type_name(f.type));
  out.Set("help", f.help);
  out.Set("unit", f.unit);
  Napi::Array samples = Napi::Array::New(env, f.samples.size());
  for (uint32_t i = 0; i < f.samples.size(); ++i) {
    Napi::Object s = Napi::Object::New(env);
    s.Set("labels", labels_object(env, f.samples[i].labels));
    s.Set("value", f.samples[i].value);
    samples.Set(i, s);
  }
  out.Set("samples", samples);
  Napi::Array histograms = Napi::Array::New(env, f.histograms.size());
  for (uint32_t i = 0; i < f.histograms.size(); ++i) {
    const ratewarden::HistogramSample& h = f.histograms[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("labels", labels_object(env, h.labels));
    Napi::Array buckets = Napi::Array::New(env, h.buckets.size());
    for (uint32_t b = 0; b < h.buckets.size(); ++b) {
      Napi::Array pair = Napi::Array::New(env, 2);
      pair.Set(0u, h.buckets[b].first);  // +Inf as Infinity
      pair.Set(1u, num(h.buckets[b].second));
      buckets.Set(b, pair);
    }
    o.Set("buckets", buckets);
    o.Set("sum", h.sum);
    o.Set("count", num(h.count));
    histograms.Set(i, o);
  }
  out.Set("histograms", histograms);
  return out;
}

std::vector<MetricFamily> families_now() { return ratewarden::metric_families(); }

Napi::Value limiter_stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<ratewarden::LimiterStats> all = guarded(env, [] { return ratewarden::process_limiter_stats(); });
  Napi::Array out = Napi::Array::New(env, all.size());
  for (uint32_t i = 0; i < all.size(); ++i) out.Set(i, limiter_stats_object(env, all[i]));
  return out;
}

Napi::Value store_stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<ratewarden::StoreStats> all = guarded(env, [] { return ratewarden::process_store_stats(); });
  Napi::Array out = Napi::Array::New(env, all.size());
  for (uint32_t i = 0; i < all.size(); ++i) out.Set(i, store_stats_object(env, all[i]));
  return out;
}

Napi::Value metric_families(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<MetricFamily> all = guarded(env, [] { return families_now(); });
  Napi::Array out = Napi::Array::New(env, all.size());
  for (uint32_t i = 0; i < all.size(); ++i) out.Set(i, family_object(env, all[i]));
  return out;
}

Napi::Value prometheus_text(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::String::New(env, guarded(env, [] { return ratewarden::prometheus_text(families_now()); }));
}

// metricCatalog(): every family the core can give — [{ name, type, help, unit, labelNames }] — for exporters that
// declare their series before the first scrape (node/lib/prometheus.js, node/lib/opentelemetry.js): the core's
// metric_catalog().
Napi::Value metric_catalog(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<MetricFamily> all = guarded(env, [] { return ratewarden::metric_catalog(); });
  Napi::Array out = Napi::Array::New(env, all.size());
  for (uint32_t i = 0; i < all.size(); ++i) {
    const MetricFamily& f = all[i];
    const ratewarden::Labels& labels = !f.samples.empty() ? f.samples[0].labels
                                       : !f.histograms.empty() ? f.histograms[0].labels
                                                               : ratewarden::Labels{};
    Napi::Array names = Napi::Array::New(env, labels.size());
    for (uint32_t j = 0; j < labels.size(); ++j) names.Set(j, labels[j].first);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", f.name);
    o.Set("type", type_name(f.type));
    o.Set("help", f.help);
    o.Set("unit", f.unit);
    o.Set("labelNames", names);
    out.Set(i, o);
  }
  return out;
}

}  // namespace

Napi::Object limiter_stats_object(Napi::Env env, const ratewarden::LimiterStats& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", s.name);
  out.Set("allowed", num(s.allowed));
  out.Set("denied", num(s.denied));
  out.Set("cost", num(s.cost));
  out.Set("fallbacks", num(s.fallbacks));
  return out;
}

Napi::Object store_stats_object(Napi::Env env, const ratewarden::StoreStats& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", s.name);
  out.Set("network", s.network);
  out.Set("hybrid", s.hybrid);
  out.Set("keys", num(s.keys));
  out.Set("maxKeys", num(s.max_keys));
  out.Set("evictions", num(s.evictions));
  out.Set("expiredDrops", num(s.expired_drops));
  out.Set("localDenials", num(s.local_denials));
  out.Set("localAllows", num(s.local_allows));
  out.Set("storeCalls", num(s.store_calls));
  out.Set("syncBatches", num(s.sync_batches));
  out.Set("syncLagMs", s.sync_lag_us < 0 ? -1.0 : static_cast<double>(s.sync_lag_us) / 1000.0);
  out.Set("invalidations", num(s.invalidations));
  Napi::Object calls = Napi::Object::New(env);
  for (size_t o = 0; o < ratewarden::kCallOutcomes; ++o)
    calls.Set(ratewarden::call_outcome_name(static_cast<ratewarden::CallOutcome>(o)), num(s.calls[o]));
  out.Set("calls", calls);
  out.Set("circuitsOpen", num(s.circuits_open));
  out.Set("circuitOpenings", num(s.circuit_openings));
  out.Set("connectionsOpen", num(s.connections_open));
  out.Set("poolSize", num(s.pool_size));
  out.Set("sweeps", num(s.sweeps));
  return out;
}

void define_stats_functions(Napi::Env env, Napi::Object exports) {
  exports.Set("limiterStats", Napi::Function::New(env, limiter_stats, "limiterStats"));
  exports.Set("storeStats", Napi::Function::New(env, store_stats, "storeStats"));
  exports.Set("metricFamilies", Napi::Function::New(env, metric_families, "metricFamilies"));
  exports.Set("prometheusText", Napi::Function::New(env, prometheus_text, "prometheusText"));
  exports.Set("metricCatalog", Napi::Function::New(env, metric_catalog, "metricCatalog"));
}

}  // namespace rwnode
