// What a process in a hybrid mode knows of the shared store's keys (internal; docs/hybrid.md): for each call (the
// storage keys of one limiter's policies on one user key) the store's last denial and, in async mode, the lease the
// process holds. A bounded cache: losing an entry only costs a round trip.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <atomic>
#include <unordered_map>
#include <vector>

#include "util/fast_clock.hpp"
#include "util/lock.hpp"
#include "util/siphash.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/policy.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden::hybrid {

struct Entry {
  std::string tag;                // the user key
  std::vector<std::string> keys;  // the call's storage keys: which limiter's policies this is
  std::vector<Policy> policies;   // async: what a lease top-up asks the store for

  // The store's last denial proves that a call of cost >= deny_cost is denied until deny_until (local time,
  // counted from when the call was sent, so never later than the store's own answer implies).
  int64_t deny_until = 0;
  int64_t deny_cost = 0;
  int64_t denied_at = 0;  // when the denial arrived: a local denial's retry_after is aged from here (never early)
  int64_t deny_sent = 0;  // when the call that was denied left: only an answer to a later call clears the denial
  Decision denial;

  // async: cost already charged to the store and not yet admitted here, usable until lease_until; and the next
  // lease, topped up before this one runs out, used once this one is spent or expired.
  int64_t lease = 0;
  int64_t lease_until = 0;
  int64_t spare = 0;
  int64_t spare_until = 0;
  int64_t granted_at = 0;
  Decision granted;          // the store's answer to the last charge
  int64_t demand = 0;        // cost asked of this entry since the last top-up round
  bool topping_up = false;   // a top-up is in flight

  int64_t expires = 0;  // nothing in it is of use after this
};

// A call's identity in the cache: its user key (the tag) and its storage keys.
struct CallRef {
  std::string_view tag;
  const std::string* keys;
  size_t count;
};

class Knowledge {
 public:
  Knowledge(int64_t max_entries, int shards);

  // Entries under the keyed hash of their user key: the entries of every limiter that used a key (usually one), and
  // of any other key with the same 64-bit hash (which clients cannot aim at without the process's random key).
  using Table = std::unordered_map<uint64_t, std::vector<Entry>>;
  struct Shard {
    util::Lock mu;  // locked and unlocked inline: on every local answer's path
    Table by_hash;
    int64_t entries = 0;
    int64_t capacity = 0;  // this shard's share of max_entries
    // Counted under the lock already held (no shared counter for threads to bounce between cores).
    int64_t local_denials = 0;
    int64_t local_allows = 0;
    util::FastClock clock;  // read under the lock: the monotonic time, cheaper than steady_clock
  };

  // The epoch of the store's data as the last read of its reset log found it: the I/O thread's alone. Here, not
  // beside the log's cursor, because a forked child must start from an empty one without writing to the parent's
  // copy, which the parent's I/O thread may have been assigning at the fork.
  std::string log_epoch;

  uint64_t hash(std::string_view tag) const { return util::siphash13(hash_key_, tag); }
  Shard& shard_of(uint64_t hash) { return *shards_[(hash >> 32) & shard_mask_]; }
  // With the shard locked: the call's entry, or null.
  static Entry* find(Shard& shard, uint64_t hash, const CallRef& call);
  // With the shard locked: the call's entry, made (evicting another when the shard is full) if absent.
  Entry& find_or_add(Shard& shard, uint64_t hash, const CallRef& call, int64_t now);
  // Forgets what is known of a user key (every limiter's entry); returns how many entries went.
  int64_t forget(std::string_view tag);
  // Forgets everything; returns how many entries went.
  int64_t forget_all();
  // Drops the entries of one shard (the next, in turn) that are of no use any more; returns the cost their leases
  // still held (charged to the store, never admitted here: async mode's under-admission).
  int64_t sweep_next(int64_t now);
  int64_t size();
  // The shards' local_denials and local_allows, summed.
  std::pair<int64_t, int64_t> local_answers();
  int64_t max_entries() const { return max_entries_; }
  int64_t evictions() const { return evictions_; }

  // Calls `f(entry)` for entries with demand, with their shard locked (async top-ups).
  template <typename F>
  void for_each_in_demand(F&& f) {
    for (auto& shard : shards_) {
      std::lock_guard<util::Lock> lock(shard->mu);
      for (auto& [hash, entries] : shard->by_hash)
        for (Entry& e : entries)
          if (e.demand > 0) f(e);
    }
  }

 private:
  const int64_t max_entries_;
  const util::SipKey hash_key_;
  std::vector<std::unique_ptr<Shard>> shards_;  // a power of two of them
  const size_t shard_mask_;
  std::atomic<int64_t> evictions_{0};
  std::atomic<size_t> next_sweep_{0};
};

}  // namespace ratewarden::hybrid
