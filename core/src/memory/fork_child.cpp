// The memory store across fork(): a thread of the parent may be inside a call at the instant another thread forks,
// holding a shard's lock with the shard half changed. The child inherits that lock held by a thread it does not
// have, and would wait on it forever at its first call on that shard. So, in the child and before any code of its
// own runs, every shard whose lock is held is replaced with an empty one, and the store's entry count and expiry
// hint are taken again from its shards. The child forgets the keys of those shards (their limits restart there);
// it never waits for a lock nobody will let go. A shard whose lock is free was left whole: its last unlock came
// after its last change, and stores reach memory in order.
//
// The half-changed shards are not destroyed (their pointers may be torn) but abandoned, as a child's per-process
// objects are: one shard's memory per shard in use at the fork, once per fork.
//
// Waiting in a prepare handler for every call to finish (taking every lock before the fork) was tried and dropped:
// against threads that hammer one shard on a loaded machine it could not bound its wait, and a fork that went on
// without the locks after its deadline left the child to hang as before.
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "io/fork_guard.hpp"
#include "io/per_process.hpp"
#include "memory/shard.hpp"
#include "ratewarden/memory_store.hpp"

namespace ratewarden {

using memory::Shard;

namespace {

// The live stores. Its lock is held across fork() (before_fork to in_parent), so the child never finds the list
// half changed; fork_guard gives the child a fresh one.
struct LiveStores {
  ForkSafeMutex mu;
  std::vector<MemoryStore*> stores;
};

LiveStores& live() {
  static LiveStores* stores = new LiveStores();  // never destroyed: a fork may come during exit
  return *stores;
}

}  // namespace

void MemoryStore::enroll() {
  static const bool registered = (live(), pthread_atfork(&before_fork, &in_parent, &in_child), true);
  (void)registered;
  std::lock_guard<ForkSafeMutex> lock(live().mu);
  live().stores.push_back(this);
}

void MemoryStore::leave() {
  std::lock_guard<ForkSafeMutex> lock(live().mu);
  auto& stores = live().stores;
  stores.erase(std::find(stores.begin(), stores.end(), this));
}

void MemoryStore::before_fork() { live().mu.lock(); }

void MemoryStore::in_parent() { live().mu.unlock(); }

// The child's only thread is the one that forked, which was inside no call: a lock held now is an orphan. (The
// list's lock is fork_guard's to replace.)
void MemoryStore::in_child() noexcept {
  for (MemoryStore* store : live().stores) store->recover_in_child();
}

void MemoryStore::recover_in_child() {
  int64_t entries = 0;
  int64_t earliest = Shard::kNever;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    if (shards_[i].mu.held()) {
      void* inherited = ::operator new(sizeof(Shard));
      std::memcpy(inherited, static_cast<void*>(&shards_[i]), sizeof(Shard));
      abandon(inherited);
      new (&shards_[i]) Shard();
    }
    entries += static_cast<int64_t>(shards_[i].size());
    earliest = std::min(earliest, shards_[i].earliest_expiry_hint());
  }
  // Both may have been half updated by a caller (a reservation in make_room, a lowered hint): each is under a
  // shard's lock when it changes, so the shards say what they are.
  entries_.store(entries, std::memory_order_relaxed);
  new (&hint_mu_) std::mutex();  // a caller lowering the hint held it under its shard's lock
  earliest_expiry_hint_.store(earliest, std::memory_order_relaxed);
}

}  // namespace ratewarden
