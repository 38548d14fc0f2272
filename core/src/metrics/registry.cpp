#include "metrics/registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "io/fork_guard.hpp"
#include "metrics/decision_counts.hpp"

namespace ratewarden {
namespace {

// One name's sources: those alive, and what the gone ones counted.
template <typename Source, typename Stats>
struct Named {
  Stats retired;
  std::vector<const Source*> live;
};

template <typename Source, typename Stats>
class ByName {
 public:
  std::string slot(const std::string& name) const {
    return by_name_.count(name) != 0 || by_name_.size() < kMaxNames ? name : "other";
  }
  void add(const std::string& name, const Source* source) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      order_.push_back(name);
      it = by_name_.emplace(name, Named<Source, Stats>{}).first;
      it->second.retired.name = name;
    }
    it->second.live.push_back(source);
  }
  void retire(const std::string& name, const Source* source, const Stats& last) {
    Named<Source, Stats>& n = by_name_.at(name);
    n.live.erase(std::find(n.live.begin(), n.live.end(), source));
    n.retired += last;
  }
  template <typename Read>
  std::vector<Stats> read(Read read_live) const {
    std::vector<Stats> out;
    for (const std::string& name : order_) {
      const Named<Source, Stats>& n = by_name_.at(name);
      Stats s = n.retired;
      for (const Source* source : n.live) s += read_live(*source);
      s.name = name;
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, Named<Source, Stats>> by_name_;
};

struct Registry {
  ForkSafeMutex mu;  // a child forked while another thread held it gets it unlocked
  ByName<DecisionCounts, LimiterStats> limiters;
  ByName<Store, StoreStats> stores;
};

Registry& registry() {
  static auto* r = new Registry;  // never destroyed: limiters may outlive static destruction
  return *r;
}

// What a store that is going leaves in its name: its counters.
StoreStats counters_of(StoreStats s) {
  s.keys = s.max_keys = s.circuits_open = s.connections_open = s.pool_size = 0;
  s.sync_lag_us = -1;  // a store gone reads no log
  return s;
}

}  // namespace

std::string register_counts(const std::string& name, const DecisionCounts* counts) {
  Registry& r = registry();
  std::lock_guard<ForkSafeMutex> lock(r.mu);
  std::string slot = r.limiters.slot(name);
  r.limiters.add(slot, counts);
  return slot;
}

void retire_counts(const DecisionCounts* counts) {
  Registry& r = registry();
  const LimiterStats last = counts->totals();
  std::lock_guard<ForkSafeMutex> lock(r.mu);
  r.limiters.retire(counts->name(), counts, last);
}

std::shared_ptr<Store> registered_store(std::shared_ptr<Store> store) {
  Registry& r = registry();
  std::string name;
  {
    std::lock_guard<ForkSafeMutex> lock(r.mu);
    name = r.stores.slot(store->describe());
    r.stores.add(name, store.get());
  }
  Store* raw = store.get();
  // The caller's handle: when the last copy goes, the store leaves the live ones, its counters kept.
  return std::shared_ptr<Store>(raw, [store = std::move(store), name](Store*) mutable {
    Registry& reg = registry();
    const StoreStats last = counters_of(store->stats());
    {
      std::lock_guard<ForkSafeMutex> lock(reg.mu);
      reg.stores.retire(name, store.get(), last);
    }
    store.reset();
  });
}

std::vector<LimiterStats> process_limiter_stats() {
  Registry& r = registry();
  std::lock_guard<ForkSafeMutex> lock(r.mu);
  return r.limiters.read([](const DecisionCounts& c) { return c.totals(); });
}

std::vector<StoreStats> process_store_stats() {
  Registry& r = registry();
  std::lock_guard<ForkSafeMutex> lock(r.mu);
  return r.stores.read([](const Store& s) { return s.stats(); });
}

}  // namespace ratewarden
