// A limiter's decision counters (internal): always on, so they cost next to nothing on the memory store's hot path.
//
// The memory store counts a call's decision itself, under the lock of the shard it decided in, in that shard's own
// cell: plain loads and stores, no atomic read-modify-write (which would cost more than the 2% budget of a hot
// key's hit). Every other store's decisions are counted by the limiter when they are answered, with atomic adds:
// they come from any thread, and a network round trip dwarfs the add.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ratewarden/stats.hpp"

namespace ratewarden {

class DecisionCounts {
 public:
  // `stripes`: the cells of callers that count under their own locks (Store::decision_stripes()). Registered in
  // the process's figures under `name` (or "other" past kMaxNames names) until destroyed; its counts then stay
  // in the name's.
  DecisionCounts(const std::string& name, size_t stripes);
  ~DecisionCounts();
  DecisionCounts(const DecisionCounts&) = delete;
  DecisionCounts& operator=(const DecisionCounts&) = delete;

  // Under the lock that owns `stripe`: only one thread at a time writes a stripe.
  void add_locked(size_t stripe, bool allowed, int64_t cost) {
#ifndef RATEWARDEN_NO_METRICS
    Cell& c = stripes_[stripe];
    bump(allowed ? c.allowed : c.denied, 1);
    if (allowed) bump(c.cost, cost);
#else
    (void)stripe, (void)allowed, (void)cost;
#endif
  }
  // From any thread. `fallback`: on_store_error gave the decision.
  void add(bool allowed, int64_t cost, bool fallback);

  LimiterStats totals() const;  // without the name
  const std::string& name() const { return name_; }

 private:
  struct Cell {
    std::atomic<int64_t> allowed{0}, denied{0}, cost{0}, fallbacks{0};
  };
  static void bump(std::atomic<int64_t>& v, int64_t n) {
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::string name_;
  size_t stripe_count_;
  std::unique_ptr<Cell[]> stripes_;
  Cell shared_;  // atomic adds
};

}  // namespace ratewarden
