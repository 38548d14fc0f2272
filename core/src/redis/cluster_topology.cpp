#include "cluster_topology.hpp"

#include "resp.hpp"

namespace ratewarden {
namespace {

constexpr auto kRefreshInterval = std::chrono::milliseconds(100);

}  // namespace

ClusterTopology::ClusterTopology(const RedisClientOptions& options, std::vector<std::pair<std::string, int>> seeds)
    : options_(options), seeds_(std::move(seeds)), slots_(new std::atomic<RedisNode*>[kClusterSlots]) {
  for (int i = 0; i < kClusterSlots; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

RedisNode& ClusterTopology::node_at(const std::string& host, int port) {
  std::lock_guard<std::mutex> lock(nodes_mu_);
  auto& node = nodes_[{host, port}];
  if (!node) node = std::make_unique<RedisNode>(options_, host, port, 0, "redis+cluster node " + describe_host(host, port));
  return *node;
}

RedisNode* ClusterTopology::node_for_slot(int slot) {
  RedisNode* node = slots_[slot].load(std::memory_order_acquire);
  if (node == nullptr || stale_.load(std::memory_order_acquire)) {
    if (refresh()) node = slots_[slot].load(std::memory_order_acquire);
  }
  return node;
}

// One refresh at a time, and not more often than every 100 ms while a node is down. Asks the known nodes, then the
// seeds, until one answers CLUSTER SLOTS. Returns whether the map was read.
bool ClusterTopology::refresh() {
  std::lock_guard<std::mutex> guard(refresh_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!stale_.load()) return true;  // read while we waited (stale_ clears only once a map is in place)
  if (now - last_refresh_ < kRefreshInterval) return false;
  last_refresh_ = now;

  std::vector<std::pair<std::string, int>> candidates;
  {
    std::lock_guard<std::mutex> lock(nodes_mu_);
    for (const auto& entry : nodes_) candidates.push_back(entry.first);
  }
  candidates.insert(candidates.end(), seeds_.begin(), seeds_.end());
  for (const auto& [host, port] : candidates) {
    RedisRequest req;
    RespWriter(req.command, 2).arg("CLUSTER").arg("SLOTS");
    node_at(host, port).execute(req);
    if (req.error_message.empty() && install_slots(req.reply.get(), host)) {
      stale_.store(false, std::memory_order_release);
      return true;
    }
  }
  return false;
}

// CLUSTER SLOTS: [[start, end, [host, port, id...], replicas...], ...]. Slots no entry covers map to nothing.
bool ClusterTopology::install_slots(const redisReply* reply, const std::string& asked_host) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) return false;
  std::vector<RedisNode*> map(kClusterSlots, nullptr);
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* range = reply->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return false;
    const redisReply* master = range->element[2];
    if (range->element[0]->type != REDIS_REPLY_INTEGER || range->element[1]->type != REDIS_REPLY_INTEGER ||
        master->type != REDIS_REPLY_ARRAY || master->elements < 2 || master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER)
      return false;
    // An empty host means "the node you asked".
    const std::string host = master->element[0]->len == 0 ? asked_host : master->element[0]->str;
    RedisNode& node = node_at(host, static_cast<int>(master->element[1]->integer));
    const long long first = range->element[0]->integer, last = range->element[1]->integer;
    if (first < 0 || last >= kClusterSlots || first > last) return false;
    for (long long slot = first; slot <= last; ++slot) map[static_cast<size_t>(slot)] = &node;
  }
  for (int slot = 0; slot < kClusterSlots; ++slot) slots_[slot].store(map[slot], std::memory_order_release);
  return true;
}

}  // namespace ratewarden
