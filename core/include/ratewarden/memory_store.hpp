// memory:// — the embedded store: sharded, thread-safe, every entry expires, and at most max_keys entries.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ratewarden/algorithms.hpp"
#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

namespace memory {
class Shard;
struct KeyRef;
}  // namespace memory
namespace util {
struct SipKey;
}  // namespace util

struct MemoryStoreOptions {
  // Bound on stored entries (one per key and policy), for the whole store: no live entry is evicted while fewer
  // are held. When full, an expired entry goes first (from any shard), else the least recently used entry of the
  // new key's shard, as CLOCK approximates it (docs/memory-store.md).
  int64_t max_keys = 1000000;
  // Lock stripes (rounded up to a power of two); 0 picks a default.
  int32_t shards = 0;
  Clock clock;  // defaults to a fast monotonic clock (microseconds, never going back)
};

class MemoryStore final : public InProcessStore {
 public:
  static constexpr int64_t kMaxKeysLimit = (int64_t{1} << 32) - 1;

  explicit MemoryStore(MemoryStoreOptions options = {});
  ~MemoryStore() override;

  Decision decide(const StoreCall& call) override;
  void reset(const std::string* keys, size_t count, std::string_view tag) override;
  std::string describe() const override;
  StoreStats stats() const override;
  size_t decision_stripes() const override { return shard_count(); }

  // Entries currently held (expired ones included until they are dropped).
  int64_t size() const;
  // Drops every expired entry now (the store also drops them by itself when it needs room).
  void sweep();
  // The shard a user key's entries fall in, 0 .. shards - 1 (for tests and diagnostics: it depends on the
  // store's random hash key, so it differs from store to store).
  size_t shard_of(std::string_view user_key) const;
  size_t shard_count() const { return shard_mask_ + 1; }

 private:
  memory::Shard& shard_for(uint64_t tag_hash) const;
  // The index of the shard of a user key of this hash: its decisions' stripe (decision_stripes()).
  size_t stripe_of(uint64_t tag_hash) const { return (tag_hash >> 40) & shard_mask_; }
  Decision decide_one(memory::Shard& shard, uint64_t tag_hash, int64_t now, const StoreCall& call);
  Decision decide_several(memory::Shard& shard, uint64_t tag_hash, int64_t now, const StoreCall& call);
  int64_t now_in(memory::Shard& shard) const;
  // Room for one more entry in `own` (locked by the caller): nothing when under the bound, else an expired entry
  // dropped from any shard, else own's least recently used.
  void make_room(memory::Shard& own, int64_t now_us);
  bool drop_expired_elsewhere(const memory::Shard& own, int64_t now_us);
  void evicted(int64_t now_us);  // a live entry was dropped to make room
  void expired_dropped() { expired_drops_.fetch_add(1, std::memory_order_relaxed); }
  void lower_hint(int64_t at_us);
  void insert(memory::Shard& shard, uint64_t hash, const memory::KeyRef& key, AlgorithmState&& state,
              int64_t expires_at_us, int64_t now_us);
  // fork(): live stores are listed, and in a forked child every shard a thread of the parent was inside at the fork
  // is replaced with an empty one (memory/fork_child.cpp).
  void enroll();
  void leave();
  static void before_fork();
  static void in_parent();
  static void in_child() noexcept;
  void recover_in_child();

  MemoryStoreOptions options_;
  bool own_clock_;
  std::unique_ptr<util::SipKey> sip_key_;
  std::unique_ptr<memory::Shard[]> shards_;
  size_t shard_mask_;
  std::atomic<int64_t> entries_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> expired_drops_{0};
  // Live evictions come with every insert under a flood of new keys: their event is tried once a second at most.
  std::atomic<int64_t> next_eviction_event_us_{0};
  std::atomic<int64_t> evictions_told_{0};  // evictions_ when the last event was tried
  // No entry of any shard expires before this (a lower bound: it only rises when a scan finds every shard later).
  std::mutex hint_mu_;
  std::atomic<int64_t> earliest_expiry_hint_;
};

}  // namespace ratewarden
