#include "metrics/call_metrics.hpp"

#include <chrono>
#include <memory>

#include "metrics/emit.hpp"

namespace ratewarden {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

size_t bucket_of(double seconds) {
  size_t b = 0;
  while (b < kDurationBuckets.size() && seconds > kDurationBuckets[b]) ++b;
  return b;
}

}  // namespace

CallOutcome outcome_of(const Error* error) {
  if (error == nullptr) return CallOutcome::ok;
  switch (error->code()) {
    case ErrorCode::store_timeout: return CallOutcome::timeout;
    case ErrorCode::store_unavailable: return CallOutcome::unavailable;
    default: return CallOutcome::error;
  }
}

void CallMetrics::observe(const Error* error, int64_t since_ns) {
  const CallOutcome outcome = outcome_of(error);
  const size_t o = static_cast<size_t>(outcome);
  const int64_t took_ns = now_ns() - since_ns;
  calls_[o].fetch_add(1, std::memory_order_relaxed);
  durations_[o].buckets[bucket_of(static_cast<double>(took_ns) * 1e-9)].fetch_add(1, std::memory_order_relaxed);
  durations_[o].sum_ns.fetch_add(took_ns, std::memory_order_relaxed);
  // An error reply says the store is there: only a missing store changes its health.
  if (outcome == CallOutcome::error) return;
  const bool failed = outcome != CallOutcome::ok;
  if (failing_.load(std::memory_order_relaxed) == failed || failing_.exchange(failed) == failed) return;
  if (failed)
    emit_event(EventKind::store_failed, store_name_, std::string("calls fail: ") + error->what());
  else
    emit_event(EventKind::store_recovered, store_name_, "the store answers again");
}

DecisionCallback CallMetrics::timed(DecisionCallback done) {
  return [self = shared_from_this(), done = std::move(done), since = now_ns()](const Decision* d, const Error* e) {
    self->observe(e, since);
    done(d, e);
  };
}

DecisionsCallback CallMetrics::timed(size_t n, DecisionsCallback done) {
  return [self = shared_from_this(), n, done = std::move(done), since = now_ns()](const Decision* d,
                                                               const std::optional<StoreError>* errors) {
    for (size_t i = 0; i < n && d != nullptr; ++i) self->observe(errors[i] ? &*errors[i] : nullptr, since);
    done(d, errors);
  };
}

DoneCallback CallMetrics::timed(DoneCallback done) {
  return [self = shared_from_this(), done = std::move(done), since = now_ns()](const Error* e) {
    self->observe(e, since);
    done(e);
  };
}

void CallMetrics::circuit_opened(const std::string& server, const std::string& why) {
  circuits_open_.fetch_add(1, std::memory_order_relaxed);
  circuit_openings_.fetch_add(1, std::memory_order_relaxed);
  emit_event(EventKind::circuit_opened, store_name_, server + ": circuit opened: " + why, server);
}

void CallMetrics::circuit_closed(const std::string& server) {
  circuits_open_.fetch_sub(1, std::memory_order_relaxed);
  emit_event(EventKind::circuit_closed, store_name_, server + ": circuit closed: the server answered", server);
}

void CallMetrics::fill(StoreStats& s) const {
  for (size_t o = 0; o < kCallOutcomes; ++o) {
    s.calls[o] += calls_[o].load(std::memory_order_relaxed);
    DurationHistogram& h = s.durations[o];
    for (size_t b = 0; b < h.buckets.size(); ++b) {
      const int64_t n = durations_[o].buckets[b].load(std::memory_order_relaxed);
      h.buckets[b] += n;
      h.count += n;
    }
    h.sum_seconds += static_cast<double>(durations_[o].sum_ns.load(std::memory_order_relaxed)) * 1e-9;
  }
  s.circuits_open += circuits_open_.load(std::memory_order_relaxed);
  s.circuit_openings += circuit_openings_.load(std::memory_order_relaxed);
  s.connections_open += connections_open_.load(std::memory_order_relaxed);
}

}  // namespace ratewarden
