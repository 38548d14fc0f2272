// The memory store across fork(): a thread of the parent may be inside a call at the instant another forks, holding
// a shard's lock with the shard half changed. The child would inherit that lock held by a thread it does not have,
// and wait on it forever at its first call on that shard. So a pthread_atfork handler takes every lock of every live
// store before the fork (no call is then half done) and lets them go after it, in the parent and in the child.
//
// A caller holds its shard's lock while it takes hint_mu_ (lower_hint) or tries other shards' (eviction, which
// retries until it gets one when its own shard is empty): so the handler takes a store's shards first and hint_mu_
// last, and when a lock stays held for kSliceNs it lets go of every lock it took and starts over, so that such a
// caller gets what it waits for and ends its call. A thread may also hold a lock while it waits for something the
// forking thread holds that is not ours (a clock callback that waits for Python's GIL): past the deadline every lock
// taken is let go and the fork goes on unguarded, as it did before this handler: a stuck fork would be worse.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "io/fork_guard.hpp"
#include "memory/shard.hpp"
#include "ratewarden/memory_store.hpp"

namespace ratewarden {
namespace {

constexpr int64_t kForkWaitNs = 200000000;  // 0.2 s for all the locks of all the stores
constexpr int64_t kSliceNs = 1000000;       // a lock held this long: let go of all and start over

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

// Takes `mu` unless it stays held for kSliceNs or past the deadline.
template <class Lockable>
bool lock_by(Lockable& mu, int64_t deadline_ns) {
  int64_t give_up = 0;
  while (!mu.try_lock()) {
    const int64_t now = now_ns();
    if (give_up == 0) give_up = std::min(deadline_ns, now + kSliceNs);
    if (now > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

void MemoryStore::enroll() {
  // fork_guard's handlers first: prepare handlers run in the reverse order, child handlers in this order. So ours
  // takes the shards before fork_guard's takes its list's lock (which a caller holding a shard may wait for: an
  // event's first I/O loop registers its descriptors), and in the child the fork generation has moved on before ours
  // unlocks: a sleepers' count the parent's waiters left is then dropped, not woken (util/lock.hpp).
  watch_forks();
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

// The shards, then hint_mu_: the order callers take them in.
bool MemoryStore::lock_all(int64_t deadline_ns) {
  size_t i = 0;
  while (i <= shard_mask_ && lock_by(shards_[i].mu, deadline_ns)) ++i;
  if (i > shard_mask_ && lock_by(hint_mu_, deadline_ns)) return true;
  while (i-- > 0) shards_[i].mu.unlock();
  return false;
}

void MemoryStore::unlock_all() {
  for (size_t i = 0; i <= shard_mask_; ++i) shards_[i].mu.unlock();
  hint_mu_.unlock();
}

void MemoryStore::before_fork() {
  LiveStores& l = live();
  l.mu.lock();
  const int64_t deadline = now_ns() + kForkWaitNs;
  for (;;) {
    size_t locked = 0;
    while (locked < l.stores.size() && l.stores[locked]->lock_all(deadline)) ++locked;
    l.locked = locked == l.stores.size();
    if (l.locked) return;
    while (locked-- > 0) l.stores[locked]->unlock_all();
    if (now_ns() > deadline) return;
    std::this_thread::yield();
  }
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
