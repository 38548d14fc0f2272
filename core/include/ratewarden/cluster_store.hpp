// redis+cluster://host:port[,host:port...][?options], rediss+cluster:// (TLS) and
// redis+cluster+unix:///path/a.sock,/path/b.sock,... (every master's Unix socket) — Redis Cluster.
//
// The same scripts as the single-node store, routed by the CRC16 slot of the key's {hash tag}: every policy of one
// key lands in one slot, so one script still decides atomically. The slot map comes from CLUSTER SLOTS; MOVED and
// ASK redirections are followed, and the map is read again when a node stops answering. Routing happens on the
// library's I/O thread: a batch goes to every node at once and no thread waits for another.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ratewarden/redis_store.hpp"

namespace ratewarden {

struct ClusterStoreOptions : RedisClientOptions {
  // Where to read the slot map first; the others are discovered.
  std::vector<std::pair<std::string, int>> seeds;
  // Instead of seeds: the Unix socket of every master. Nodes announce TCP addresses, so each socket is matched to
  // its node by CLUSTER MYID; a master whose socket is not listed cannot be reached.
  std::vector<std::string> unix_paths;
};

class ClusterStore final : public Store {
 public:
  explicit ClusterStore(ClusterStoreOptions options);
  ~ClusterStore() override;

  void decide_async(const StoreCall& call, DecisionCallback done) override;
  void decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) override;
  void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) override;
  void read_resets_async(int64_t cursor, ResetLogCallback done) override;
  void check_async(DoneCallback done) override;
  void close() override;
  StoreTraits traits() const override { return StoreTraits{true, true, true, false, true}; }
  std::string describe() const override;

 private:
  ClusterStoreOptions options_;
  std::string name_;
  std::unique_ptr<RedisCalls> calls_;
};

}  // namespace ratewarden
