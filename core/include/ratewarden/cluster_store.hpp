// redis+cluster://host:port[,host:port...][?timeout=..&connect_timeout=..&pool=..] — Redis Cluster.
//
// The same scripts as the single-node store, routed by the CRC16 slot of the key's {hash tag}: every policy of one
// key lands in one slot, so one script still decides atomically. The slot map comes from CLUSTER SLOTS; MOVED and
// ASK redirections are followed, and the map is read again when a node stops answering.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ratewarden/redis_store.hpp"

namespace ratewarden {

struct RedisRequest;
class ClusterTopology;

struct ClusterStoreOptions : RedisClientOptions {
  // Where to read the slot map first; the others are discovered.
  std::vector<std::pair<std::string, int>> seeds;
};

class ClusterStore final : public Store {
 public:
  explicit ClusterStore(ClusterStoreOptions options);
  ~ClusterStore() override;

  Decision decide(const StoreCall& call) override;
  // Groups the calls by node and sends every group, as one pipeline, to its node at the same time.
  void decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) override;
  void reset(const std::string* keys, size_t count, std::string_view tag) override;
  std::string describe() const override;

 private:
  // Sends the request to the slot's node, following MOVED, ASK and TRYAGAIN.
  void run(int slot, RedisRequest& req);

  ClusterStoreOptions options_;
  std::unique_ptr<ClusterTopology> topology_;
};

}  // namespace ratewarden
