#include "metrics/decision_counts.hpp"

#include "metrics/registry.hpp"

namespace ratewarden {

DecisionCounts::DecisionCounts(const std::string& name, size_t stripes)
    : stripe_count_(stripes), stripes_(stripes > 0 ? new Cell[stripes] : nullptr) {
  name_ = register_counts(name, this);  // the registry reads totals() meanwhile, never the name
}

DecisionCounts::~DecisionCounts() { retire_counts(this); }

void DecisionCounts::add(bool allowed, int64_t cost, bool fallback) {
#ifndef RATEWARDEN_NO_METRICS
  (allowed ? shared_.allowed : shared_.denied).fetch_add(1, std::memory_order_relaxed);
  if (allowed) shared_.cost.fetch_add(cost, std::memory_order_relaxed);
  if (fallback) shared_.fallbacks.fetch_add(1, std::memory_order_relaxed);
#else
  (void)allowed, (void)cost, (void)fallback;
#endif
}

LimiterStats DecisionCounts::totals() const {
  LimiterStats s;
  auto add_cell = [&s](const Cell& c) {
    s.allowed += c.allowed.load(std::memory_order_relaxed);
    s.denied += c.denied.load(std::memory_order_relaxed);
    s.cost += c.cost.load(std::memory_order_relaxed);
    s.fallbacks += c.fallbacks.load(std::memory_order_relaxed);
  };
  for (size_t i = 0; i < stripe_count_; ++i) add_cell(stripes_[i]);
  add_cell(shared_);
  return s;
}

}  // namespace ratewarden
