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

class ClusterStore final : public RedisCallsStore {
 public:
  explicit ClusterStore(ClusterStoreOptions options);
};

}  // namespace ratewarden
