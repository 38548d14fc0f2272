// open_shared_store: one Store per shared store URL in this process, held weakly.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "io/fork_guard.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

std::shared_ptr<Store> open_shared_store(std::string_view url) {
  // Never destroyed: stores may be opened during static destruction. In a forked child the map is the parent's
  // copy, which is as good: each store remakes its client in the child (net/client_holder.hpp).
  static auto* mu = new ForkSafeMutex;
  static auto* stores = new std::map<std::string, std::weak_ptr<Store>, std::less<>>;
  {
    std::lock_guard<ForkSafeMutex> lock(*mu);
    auto it = stores->find(url);
    if (it != stores->end()) {
      if (std::shared_ptr<Store> store = it->second.lock()) return store;
    }
  }
  // Opened outside the lock: opening may take a while (a PostgreSQL store loads libpq), and must not hold up the
  // callers of other URLs.
  std::shared_ptr<Store> store = open_store(url);
  if (!store->traits().shared) return store;
  std::lock_guard<ForkSafeMutex> lock(*mu);
  std::weak_ptr<Store>& slot = (*stores)[std::string(url)];
  if (std::shared_ptr<Store> first = slot.lock()) return first;  // another thread opened it meanwhile
  slot = store;
  // Bounded by the URLs in use: the entries of stores that are gone are dropped as others come.
  for (auto i = stores->begin(); i != stores->end();) i = i->second.expired() ? stores->erase(i) : std::next(i);
  return store;
}

}  // namespace ratewarden
