// A network store's figures (internal): its calls by outcome and their durations, its circuits, its connections;
// and the events of its health (store_failed / store_recovered, circuit_opened / circuit_closed). Atomic: calls end
// on the I/O thread and on callers' threads at once, and a round trip dwarfs an atomic add.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ratewarden/errors.hpp"
#include "ratewarden/stats.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class CallMetrics : public std::enable_shared_from_this<CallMetrics> {
 public:
  explicit CallMetrics(std::string store_name) : store_name_(std::move(store_name)) {}

  // `done`, counting the call's outcome and duration from now to its answer. A decide_many's calls are counted
  // one by one, each with the batch's duration. The wrapped callback holds these figures alive.
  DecisionCallback timed(DecisionCallback done);
  DecisionsCallback timed(size_t n, DecisionsCallback done);
  DoneCallback timed(DoneCallback done);

  // A server's circuit breaker (net/circuit.hpp) opened or closed.
  void circuit_opened(const std::string& server, const std::string& why);
  void circuit_closed(const std::string& server);
  void circuit_left() { circuits_open_.fetch_sub(1, std::memory_order_relaxed); }  // an open one went with its client
  void connection_opened() { connections_open_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() { connections_open_.fetch_sub(1, std::memory_order_relaxed); }

  // Adds the figures to `s` (calls, durations, circuits, connections).
  void fill(StoreStats& s) const;

 private:
  struct Histogram {
    std::atomic<int64_t> buckets[kDurationBuckets.size() + 1] = {};
    std::atomic<int64_t> sum_ns{0};
  };
  void observe(const Error* error, int64_t since_ns);

  const std::string store_name_;
  std::atomic<int64_t> calls_[kCallOutcomes] = {};
  Histogram durations_[kCallOutcomes];
  std::atomic<int64_t> circuits_open_{0}, circuit_openings_{0}, connections_open_{0};
  std::atomic<bool> failing_{false};  // the last call that told anything of the store's health failed
};

// The outcome of a call that ended with `error` (null: ok).
CallOutcome outcome_of(const Error* error);

}  // namespace ratewarden
