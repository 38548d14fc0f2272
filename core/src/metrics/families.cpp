#include <cmath>
#include <cstdio>
#include <deque>
#include <iterator>

#include "ratewarden/metric_families.hpp"

namespace ratewarden {
namespace {

using Type = MetricFamily::Type;

class Builder {
 public:
  MetricFamily& family(const char* name, Type type, const char* unit, const char* help) {
    for (MetricFamily& f : out_)
      if (f.name == name) return f;
    out_.push_back(MetricFamily{name, help, type, {}, {}, unit});
    return out_.back();
  }
  void add(const char* name, Type type, const char* unit, const char* help, Labels labels, double value) {
    family(name, type, unit, help).samples.push_back(Sample{std::move(labels), value});
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
  }

 private:
  std::deque<MetricFamily> out_;  // a deque: family() returns a reference that later additions must not move
};

constexpr const char* kErrorKinds[] = {nullptr, "timeout", "unavailable", "error"};  // by CallOutcome

void add_limiter(Builder& b, const LimiterStats& s) {
  const char* decisions = "Decisions (hits and reservations) by outcome, per limiter name";
  b.add("ratewarden_decisions_total", Type::counter, "{decision}", decisions,
        {{"limiter", s.name}, {"outcome", "allowed"}}, static_cast<double>(s.allowed));
  b.add("ratewarden_decisions_total", Type::counter, "{decision}", decisions,
        {{"limiter", s.name}, {"outcome", "denied"}}, static_cast<double>(s.denied));
  b.add("ratewarden_decision_cost_total", Type::counter, "{cost}", "The cost the allowed decisions charged",
        {{"limiter", s.name}}, static_cast<double>(s.cost));
  b.add("ratewarden_fallback_decisions_total", Type::counter, "{decision}",
        "Decisions on_store_error gave (allow or deny) because the store failed", {{"limiter", s.name}},
        static_cast<double>(s.fallbacks));
}

void add_memory(Builder& b, const StoreStats& s) {
  const Labels store = {{"store", s.name}};
  b.add("ratewarden_memory_keys", Type::gauge, "{state}", "States the memory store holds (one per key and policy)",
        store, static_cast<double>(s.keys));
  b.add("ratewarden_memory_max_keys", Type::gauge, "{state}", "The memory store's bound on states held", store,
        static_cast<double>(s.max_keys));
  const char* evictions = "States the memory store dropped to make room: expired ones, and live ones (size it up)";
  b.add("ratewarden_memory_evictions_total", Type::counter, "{state}", evictions,
        {{"store", s.name}, {"reason", "expired"}}, static_cast<double>(s.expired_drops));
  b.add("ratewarden_memory_evictions_total", Type::counter, "{state}", evictions,
        {{"store", s.name}, {"reason", "live"}}, static_cast<double>(s.evictions));
}

void add_network(Builder& b, const StoreStats& s) {
  const Labels store = {{"store", s.name}};
  MetricFamily& durations = b.family("ratewarden_store_call_duration_seconds", Type::histogram, "s",
                                     "Store calls by outcome, from the call to its answer");
  for (size_t o = 0; o < kCallOutcomes; ++o) {
    const DurationHistogram& h = s.durations[o];
    HistogramSample sample{{{"store", s.name}, {"outcome", call_outcome_name(static_cast<CallOutcome>(o))}}, {}, 0,
                           0};
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.buckets.size(); ++i) {
      cumulative += h.buckets[i];
      sample.buckets.emplace_back(i < kDurationBuckets.size() ? kDurationBuckets[i] : INFINITY, cumulative);
    }
    sample.sum = h.sum_seconds;
    sample.count = h.count;
    durations.histograms.push_back(std::move(sample));
    if (o == static_cast<size_t>(CallOutcome::ok)) continue;
    b.add("ratewarden_store_errors_total", Type::counter, "{call}",
          "Store calls that failed: timeout, unavailable (refused, cut, circuit open) or error (an error reply)",
          {{"store", s.name}, {"kind", kErrorKinds[o]}}, static_cast<double>(s.calls[o]));
  }
  b.add("ratewarden_circuit_open", Type::gauge, "{server}", "Servers of the store whose circuit breaker is open now",
        store, static_cast<double>(s.circuits_open));
  b.add("ratewarden_circuit_openings_total", Type::counter, "{opening}", "Times a circuit breaker of the store opened",
        store, static_cast<double>(s.circuit_openings));
  b.add("ratewarden_store_connections", Type::gauge, "{connection}", "Connections to the store open now", store,
        static_cast<double>(s.connections_open));
  if (s.pool_size == 0) return;
  b.add("ratewarden_postgres_pool_size", Type::gauge, "{connection}", "Connections the PostgreSQL store may open",
        store, static_cast<double>(s.pool_size));
  b.add("ratewarden_postgres_sweeps_total", Type::counter, "{sweep}", "Passes of the sweep of expired rows", store,
        static_cast<double>(s.sweeps));
}

void add_hybrid(Builder& b, const StoreStats& s) {
  const Labels store = {{"store", s.name}};
  const char* local = "Decisions a hybrid mode answered in-process, with no round trip";
  b.add("ratewarden_hybrid_local_decisions_total", Type::counter, "{decision}", local,
        {{"store", s.name}, {"answer", "denied"}}, static_cast<double>(s.local_denials));
  b.add("ratewarden_hybrid_local_decisions_total", Type::counter, "{decision}", local,
        {{"store", s.name}, {"answer", "allowed"}}, static_cast<double>(s.local_allows));
  b.add("ratewarden_hybrid_store_calls_total", Type::counter, "{call}", "Calls a hybrid mode sent to the store", store,
        static_cast<double>(s.store_calls));
  b.add("ratewarden_hybrid_sync_rounds_total", Type::counter, "{round}",
        "Background exchanges of a hybrid mode with the store (reset-log reads, lease top-ups)", store,
        static_cast<double>(s.sync_batches));
  b.add("ratewarden_hybrid_sync_lag_seconds", Type::gauge, "s",
        "Age of the last successful read of the reset log (-1: none yet)", store,
        s.sync_lag_us < 0 ? -1.0 : static_cast<double>(s.sync_lag_us) * 1e-6);
  b.add("ratewarden_hybrid_invalidations_total", Type::counter, "{invalidation}",
        "Local knowledge dropped because a reset was logged", store, static_cast<double>(s.invalidations));
  b.add("ratewarden_hybrid_local_keys", Type::gauge, "{key}", "Keys a hybrid mode knows of in-process", store,
        static_cast<double>(s.keys));
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string labels_text(const Labels& labels, const char* extra_name = nullptr, const std::string& extra = {}) {
  if (labels.empty() && extra_name == nullptr) return "";
  std::string out = "{";
  for (const auto& [k, v] : labels) out += (out.size() > 1 ? "," : "") + k + "=\"" + escape_label(v) + "\"";
  if (extra_name != nullptr) out += (out.size() > 1 ? "," : "") + std::string(extra_name) + "=\"" + extra + "\"";
  return out + "}";
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::vector<MetricFamily> metric_families(const std::vector<LimiterStats>& limiters,
                                          const std::vector<StoreStats>& stores) {
  Builder b;
  for (const LimiterStats& s : limiters) add_limiter(b, s);
  for (const StoreStats& s : stores) {
    if (!s.network && !s.hybrid) add_memory(b, s);
    if (s.network) add_network(b, s);
    if (s.hybrid) add_hybrid(b, s);
  }
  return b.take();
}

std::vector<MetricFamily> metric_families() {
  return metric_families(process_limiter_stats(), process_store_stats());
}

std::vector<MetricFamily> metric_catalog() {
  LimiterStats limiter;
  limiter.name = "catalog";
  StoreStats in_process, network;
  in_process.name = "catalog-memory";
  network.name = "catalog-network";
  network.network = network.hybrid = true;
  network.pool_size = 1;  // a PostgreSQL store's families too
  return metric_families({limiter}, {in_process, network});
}

std::string prometheus_text(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& f : families) {
    out += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + " " + type_name(f.type) + "\n";
    for (const Sample& s : f.samples) out += f.name + labels_text(s.labels) + " " + number(s.value) + "\n";
    for (const HistogramSample& h : f.histograms) {
      for (const auto& [le, n] : h.buckets)
        out += f.name + "_bucket" + labels_text(h.labels, "le", number(le)) + " " + number(n) + "\n";
      out += f.name + "_sum" + labels_text(h.labels) + " " + number(h.sum) + "\n";
      out += f.name + "_count" + labels_text(h.labels) + " " + number(h.count) + "\n";
    }
  }
  return out;
}

}  // namespace ratewarden
