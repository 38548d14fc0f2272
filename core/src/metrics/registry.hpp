// The process's figures by name (internal): what process_limiter_stats() and process_store_stats() read. Each
// source (a limiter's counts, a store opened by URL) is registered while it lives; when it goes, its counters are
// kept under its name (so that no counter ever goes back) and its gauges leave.
#pragma once

#include <memory>
#include <string>

#include "ratewarden/stats.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

class DecisionCounts;

// Registers a limiter's counts under `name`, or "other" once kMaxNames names are known: the name it is counted
// under. retire_counts keeps what they counted in that name.
std::string register_counts(const std::string& name, const DecisionCounts* counts);
void retire_counts(const DecisionCounts* counts);

// The store as open_store() returns it: the same store, registered under its describe() until the last holder
// lets it go.
std::shared_ptr<Store> registered_store(std::shared_ptr<Store> store);

}  // namespace ratewarden
