#include "ratewarden/cluster_store.hpp"

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "cluster_topology.hpp"
#include "commands.hpp"
#include "executor.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {
namespace {

constexpr int kMaxRedirections = 8;

struct Redirection {
  enum Kind { none, moved, ask, try_again } kind = none;
  std::string host;
  int port = 0;
};

// "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "TRYAGAIN ...".
Redirection redirection_of(const RedisRequest& req) {
  Redirection r;
  const redisReply* reply = req.reply.get();
  if (!req.error_message.empty() || reply == nullptr || reply->type != REDIS_REPLY_ERROR) return r;
  const std::string text(reply->str, reply->len);
  if (text.rfind("TRYAGAIN", 0) == 0) {
    r.kind = Redirection::try_again;
    return r;
  }
  const bool moved = text.rfind("MOVED ", 0) == 0;
  if (!moved && text.rfind("ASK ", 0) != 0) return r;
  const size_t space = text.find(' ', moved ? 6 : 4);
  const size_t colon = text.rfind(':');
  if (space == std::string::npos || colon == std::string::npos || colon < space) return r;
  r.kind = moved ? Redirection::moved : Redirection::ask;
  r.host = text.substr(space + 1, colon - space - 1);
  r.port = std::atoi(text.c_str() + colon + 1);
  return r;
}

StoreError no_node(const std::string& name, int slot) {
  return StoreError(ErrorCode::store_unavailable, name + ": no reachable node serves slot " + std::to_string(slot));
}

// Waits for tasks handed to the library's pool.
class Countdown {
 public:
  explicit Countdown(size_t n) : left_(n) {}
  void done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t left_;
};

}  // namespace

ClusterStore::ClusterStore(ClusterStoreOptions options) : options_(std::move(options)) {
  validate_client_options(options_);
  if (options_.seeds.empty()) throw InvalidArgument("a cluster store needs at least one host:port");
  for (const auto& seed : options_.seeds)
    if (seed.second < 1 || seed.second > 65535) throw InvalidArgument("port must be between 1 and 65535");
  topology_ = std::make_unique<ClusterTopology>(options_, options_.seeds);
}

ClusterStore::~ClusterStore() = default;

void ClusterStore::run(int slot, RedisRequest& req) {
  RedisNode* asking = nullptr;
  for (int attempt = 0;; ++attempt) {
    RedisNode* node = asking != nullptr ? asking : topology_->node_for_slot(slot);
    if (node == nullptr) throw no_node(describe(), slot);
    if (asking != nullptr) {
      // ASK: this one command goes to the importing node, announced by ASKING on the same connection.
      RedisRequest ask;
      ask.command = "*1\r\n$6\r\nASKING\r\n";
      req.send_body = req.script != nullptr;
      RedisRequest* batch[2] = {&ask, &req};
      node->execute(batch, 2);
      req.send_body = false;
    } else {
      node->execute(req);
    }
    asking = nullptr;
    if (!req.error_message.empty()) {
      topology_->mark_stale();  // the node may have failed over: read the map before the next call
      return;
    }
    const Redirection r = redirection_of(req);
    if (r.kind == Redirection::none || attempt == kMaxRedirections) return;
    if (r.kind == Redirection::moved) topology_->moved(slot, topology_->node_at(r.host, r.port));
    if (r.kind == Redirection::ask) asking = &topology_->node_at(r.host, r.port);
    // TRYAGAIN: a multi-key call during a slot migration, its keys split between two nodes for a moment.
    if (r.kind == Redirection::try_again) std::this_thread::sleep_for(std::chrono::milliseconds(1 << std::min(attempt, 5)));
    req.clear_result();
  }
}

Decision ClusterStore::decide(const StoreCall& call) {
  RedisRequest req;
  build_script_call(req, call, script_now(options_.clock));
  run(key_slot(call.keys[0]), req);
  return to_decision(req, describe());
}

void ClusterStore::decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) {
  if (n == 0) return;
  const std::string now = script_now(options_.clock);
  std::vector<RedisRequest> reqs(n);
  std::vector<int> slots(n);
  std::map<RedisNode*, std::vector<RedisRequest*>> groups;
  for (size_t i = 0; i < n; ++i) {
    build_script_call(reqs[i], calls[i], now);
    slots[i] = key_slot(calls[i].keys[0]);
    if (RedisNode* node = topology_->node_for_slot(slots[i]))
      groups[node].push_back(&reqs[i]);
    else
      errors[i] = no_node(describe(), slots[i]);
  }
  // Every node's pipeline at the same time: the pool takes all groups but one, this thread the last.
  Countdown countdown(groups.size());
  for (auto& [node, group] : groups) {
    auto send = [node = node, &group = group, &countdown] {
      try {
        node->execute(group.data(), group.size());
      } catch (const std::exception& e) {
        for (RedisRequest* r : group) r->error_message = node->name() + ": " + e.what();
      }
      countdown.done();
    };
    if (node == groups.rbegin()->first)
      send();
    else
      run_on_pool(send);
  }
  countdown.wait();
  for (size_t i = 0; i < n; ++i) {
    if (errors[i]) continue;
    try {
      if (redirection_of(reqs[i]).kind != Redirection::none) {  // moved meanwhile: this call on its own
        reqs[i].clear_result();
        run(slots[i], reqs[i]);
      } else if (!reqs[i].error_message.empty()) {
        topology_->mark_stale();
      }
      out[i] = to_decision(reqs[i], describe());
    } catch (const StoreError& e) {
      errors[i] = e;
    }
  }
}

void ClusterStore::reset(const std::string* keys, size_t count, std::string_view) {
  RedisRequest req;
  build_delete(req, keys, count);
  run(key_slot(keys[0]), req);
  expect_reply(req, REDIS_REPLY_INTEGER, describe());
}

std::string ClusterStore::describe() const {
  std::string hosts;
  for (const auto& [host, port] : options_.seeds) hosts += (hosts.empty() ? "" : ",") + describe_host(host, port);
  return "redis+cluster://" + describe_auth(options_) + hosts + describe_query(options_);
}

}  // namespace ratewarden
