// The memory store across fork(): a thread of the parent may be inside a call at the instant another forks, holding
// a shard's lock with the shard half changed. The child would inherit that lock held by a thread it does not have,
// and wait on it forever at its first call on that shard. So a pthread_atfork handler takes every lock of every live
// store before the fork (no call is then half done) and lets them go after it, in the parent and in the child.
//
// The locks are taken one at a time in order, each within a deadline: no thread holds one shard's lock while it
// waits for another's (eviction only tries others), but a thread that holds one may wait for something the forking
// thread holds (a Python callback under a lock, waiting for the GIL). Past the deadline every lock taken is let go
// and the fork goes on unguarded, as it did before this handler: a stuck fork would be worse.
#include <pthread.h>
#include <time.h>

#include <mutex>
#include <thread>
#include <vector>

#include "memory/shard.hpp"
#include "ratewarden/memory_store.hpp"

namespace ratewarden {
namespace {

constexpr int64_t kForkWaitNs = 200000000;  // 0.2 s for all the locks of all the stores

struct LiveStores {
  std::mutex mu;  // held from before_fork to after_fork
  std::vector<MemoryStore*> stores;
  bool locked = false;  // every store's locks are held (before_fork got them all)
};

LiveStores& live() {
  static LiveStores* stores = new LiveStores();  // never destroyed: a fork may come during exit
  return *stores;
}

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

template <class Lockable>
bool lock_by(Lockable& mu, int64_t deadline_ns) {
  while (!mu.try_lock()) {
    if (now_ns() > deadline_ns) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

void MemoryStore::enroll() {
  static const bool registered = (pthread_atfork(&before_fork, &after_fork, &after_fork), true);
  (void)registered;
  std::lock_guard<std::mutex> lock(live().mu);
  live().stores.push_back(this);
}

void MemoryStore::leave() {
  std::lock_guard<std::mutex> lock(live().mu);
  auto& stores = live().stores;
  for (size_t i = 0; i < stores.size(); ++i) {
    if (stores[i] == this) {
      stores[i] = stores.back();
      stores.pop_back();
      return;
    }
  }
}

bool MemoryStore::lock_all(int64_t deadline_ns) {
  if (!lock_by(hint_mu_, deadline_ns)) return false;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    if (!lock_by(shards_[i].mu, deadline_ns)) {
      while (i-- > 0) shards_[i].mu.unlock();
      hint_mu_.unlock();
      return false;
    }
  }
  return true;
}

void MemoryStore::unlock_all() {
  for (size_t i = 0; i <= shard_mask_; ++i) shards_[i].mu.unlock();
  hint_mu_.unlock();
}

void MemoryStore::before_fork() {
  LiveStores& l = live();
  l.mu.lock();
  const int64_t deadline = now_ns() + kForkWaitNs;
  size_t locked = 0;
  while (locked < l.stores.size() && l.stores[locked]->lock_all(deadline)) ++locked;
  l.locked = locked == l.stores.size();
  if (!l.locked)
    while (locked-- > 0) l.stores[locked]->unlock_all();
}

// In the parent and in the child alike: the child's copies of the locks were taken by the thread that forked, which
// is the child's only thread.
void MemoryStore::after_fork() {
  LiveStores& l = live();
  if (l.locked)
    for (MemoryStore* store : l.stores) store->unlock_all();
  l.locked = false;
  l.mu.unlock();
}

}  // namespace ratewarden
