// The I/O-thread side of a cluster store: the slot map, a node per server, and the redirections (internal).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "client.hpp"
#include "endpoint.hpp"
#include "node.hpp"
#include "ratewarden/cluster_store.hpp"

namespace ratewarden {

class ClusterClient final : public RedisClient, public RequestOwner, public Deadlines {
 public:
  ClusterClient(IoLoop& loop, const ClusterStoreOptions& options, std::shared_ptr<TlsContext> tls, std::string name,
                std::shared_ptr<CallMetrics> metrics);
  ~ClusterClient() override;

  // The request's owner is told once it has an answer, after MOVED, ASK and TRYAGAIN have been followed.
  void route(RedisRequest* request) override;
  void close() override;

  void on_done(RedisRequest& request) override;  // from a node
  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;

 private:
  class SlotsReader;
  class IdsReader;

  void dispatch(RedisRequest* request);
  void retry_later(RedisRequest* request, int attempt);
  void complete(RedisRequest* request);
  // The node at host:port (a Unix socket's path and 0 for a Unix cluster), made on first use.
  RedisNode& node_at(const std::string& host, int port);
  // The node a server announces (in CLUSTER SLOTS, MOVED, ASK); null when it cannot be reached (Unix: no socket).
  RedisNode* announced(const std::string& host, int port);
  // Reads the slot map again (asking the known nodes, then the seeds), at most every 100 ms.
  void want_map();
  void read_map(std::vector<std::pair<std::string, int>> candidates, size_t next);
  bool install_map(const redisReply* reply, const std::string& asked_host);
  void map_read(bool ok);

  IoLoop& loop_;
  const RedisClientOptions options_;
  const bool unix_;
  const std::vector<std::pair<std::string, int>> seeds_;
  std::map<std::string, std::string> socket_of_id_, socket_of_address_;  // Unix: node id / "host:port" -> path
  const std::shared_ptr<TlsContext> tls_;
  const std::string name_;
  const std::shared_ptr<CallMetrics> metrics_;  // the store's: its nodes' circuits count there
  std::map<std::pair<std::string, int>, std::unique_ptr<RedisNode>> nodes_;
  std::vector<RedisNode*> slots_;
  bool stale_ = true;  // read the map before trusting it
  bool reading_map_ = false;
  bool map_read_scheduled_ = false;
  int64_t last_map_read_us_ = INT64_MIN / 2;
  std::vector<RedisRequest*> waiting_for_map_;
  std::set<RedisRequest*> delayed_;  // TRYAGAIN: sent again after a pause
  bool closing_ = false;
  bool watched_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ratewarden
