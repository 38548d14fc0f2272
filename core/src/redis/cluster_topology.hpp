// Which node serves which slot of a Redis Cluster, and one RedisNode per node (internal).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "key_slot.hpp"
#include "node.hpp"

namespace ratewarden {

class ClusterTopology {
 public:
  ClusterTopology(const RedisClientOptions& options, std::vector<std::pair<std::string, int>> seeds);

  // The node serving `slot`, reading the slot map first when it is unknown or stale; null when no node serves it.
  RedisNode* node_for_slot(int slot);
  // The node at host:port, connected on first use. Nodes live as long as the topology.
  RedisNode& node_at(const std::string& host, int port);
  // MOVED: the slot now lives on `node`.
  void moved(int slot, RedisNode& node) { slots_[slot].store(&node, std::memory_order_release); }
  // A node stopped answering (failover, shutdown): read the map again before routing, at most every 100 ms.
  void mark_stale() { stale_.store(true, std::memory_order_release); }

 private:
  bool refresh();
  bool install_slots(const redisReply* reply, const std::string& asked_host);

  const RedisClientOptions& options_;
  const std::vector<std::pair<std::string, int>> seeds_;
  std::mutex nodes_mu_;
  std::map<std::pair<std::string, int>, std::unique_ptr<RedisNode>> nodes_;
  std::unique_ptr<std::atomic<RedisNode*>[]> slots_;
  std::atomic<bool> stale_{true};
  std::mutex refresh_mu_;
  std::chrono::steady_clock::time_point last_refresh_{};
};

}  // namespace ratewarden
