// memory:// — the embedded store: sharded, thread-safe, every entry expires, and at most max_keys entries.
#pragma once

#include <cstdint>
#include <memory>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

struct MemoryStoreOptions {
  // Bound on stored entries (one per key and policy). When full, expired entries go first, then the least
  // recently charged.
  int64_t max_keys = 1000000;
  // Lock stripes (rounded up to a power of two); 0 picks a default.
  int32_t shards = 0;
  Clock clock;  // defaults to monotonic_now_us
};

class MemoryStore final : public InProcessStore {
 public:
  explicit MemoryStore(MemoryStoreOptions options = {});
  ~MemoryStore() override;

  Decision decide(const StoreCall& call) override;
  void reset(const std::string* keys, size_t count, std::string_view tag) override;
  std::string describe() const override;
  StoreStats stats() const override;

  // Entries currently held (expired ones included until they are swept).
  int64_t size() const;
  // Drops every expired entry now (stores also do this by themselves when they need room).
  void sweep();

 private:
  struct Shard;
  Shard& shard_for(std::string_view tag);

  MemoryStoreOptions options_;
  std::unique_ptr<Shard[]> shards_;
  size_t shard_mask_;
};

}  // namespace ratewarden
