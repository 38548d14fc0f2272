#include "cluster_client.hpp"

#include <algorithm>
#include <cstdlib>

#include "client_options.hpp"
#include "key_slot.hpp"
#include "resp.hpp"

namespace ratewarden {
namespace {

constexpr int kMaxRedirections = 8;
constexpr int64_t kMapReadIntervalUs = 100000;

struct Redirection {
  enum Kind { none, moved, ask, try_again } kind = none;
  std::string host;
  int port = 0;
};

// "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "TRYAGAIN ...".
Redirection redirection_of(const RedisRequest& req) {
  Redirection r;
  const redisReply* reply = req.reply.get();
  if (req.failed() || reply == nullptr || reply->type != REDIS_REPLY_ERROR) return r;
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

}  // namespace

// One CLUSTER SLOTS on its way; tells the client how it went, unless the client closed meanwhile.
class ClusterClient::SlotsReader final : public RequestOwner {
 public:
  SlotsReader(ClusterClient& client, std::vector<std::pair<std::string, int>> candidates, size_t index)
      : client_(client), alive_(client.alive_), candidates_(std::move(candidates)), index_(index) {
    RespWriter(request_.command, 2).arg("CLUSTER").arg("SLOTS");
    request_.owner = this;
    request_.deadline_us = client.loop_.now_us() + client.options_.timeout_us;
  }
  void send() { client_.node_at(candidates_[index_].first, candidates_[index_].second).send(&request_); }

  void on_done(RedisRequest& request) override {
    std::unique_ptr<SlotsReader> self(this);
    if (!*alive_ || client_.closing_) return;
    if (!request.failed() && client_.install_map(request.reply.get(), candidates_[index_].first)) {
      client_.map_read(true);
      return;
    }
    client_.read_map(std::move(candidates_), index_ + 1);
  }

 private:
  ClusterClient& client_;
  std::shared_ptr<bool> alive_;
  std::vector<std::pair<std::string, int>> candidates_;
  size_t index_;
  RedisRequest request_;
};

// Unix: CLUSTER MYID on every listed socket, then the map.
class ClusterClient::IdsReader final : public RequestOwner {
 public:
  IdsReader(ClusterClient& client, const std::vector<std::pair<std::string, int>>& sockets)
      : client_(client), alive_(client.alive_), requests_(sockets.size()), left_(sockets.size()) {
    for (size_t i = 0; i < sockets.size(); ++i) {
      RespWriter(requests_[i].command, 2).arg("CLUSTER").arg("MYID");
      requests_[i].owner = this;
      requests_[i].deadline_us = client.loop_.now_us() + client.options_.timeout_us;
      paths_.push_back(sockets[i].first);
    }
  }
  void send() {
    for (size_t i = 0; i < requests_.size(); ++i) client_.node_at(paths_[i], 0).send(&requests_[i]);
  }

  void on_done(RedisRequest&) override {
    if (--left_ > 0) return;
    std::unique_ptr<IdsReader> self(this);
    if (!*alive_ || client_.closing_) return;
    for (size_t i = 0; i < requests_.size(); ++i) {
      const redisReply* r = requests_[i].reply.get();
      if (!requests_[i].failed() && r != nullptr && r->type == REDIS_REPLY_STRING)
        client_.socket_of_id_[std::string(r->str, r->len)] = paths_[i];
    }
    std::vector<std::pair<std::string, int>> candidates;
    for (const std::string& path : paths_) candidates.emplace_back(path, 0);
    client_.read_map(std::move(candidates), 0);
  }

 private:
  ClusterClient& client_;
  std::shared_ptr<bool> alive_;
  std::vector<RedisRequest> requests_;
  std::vector<std::string> paths_;
  size_t left_;
};

namespace {

std::vector<std::pair<std::string, int>> seeds_of(const ClusterStoreOptions& options) {
  if (options.unix_paths.empty()) return options.seeds;
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& path : options.unix_paths) out.emplace_back(path, 0);
  return out;
}

}  // namespace

ClusterClient::ClusterClient(IoLoop& loop, const ClusterStoreOptions& options, std::shared_ptr<TlsContext> tls,
                             std::string name, std::shared_ptr<CallMetrics> metrics)
    : loop_(loop),
      options_(options),
      unix_(!options.unix_paths.empty()),
      seeds_(seeds_of(options)),
      tls_(std::move(tls)),
      name_(std::move(name)),
      metrics_(std::move(metrics)),
      slots_(kClusterSlots, nullptr) {}

ClusterClient::~ClusterClient() {
  *alive_ = false;
  if (watched_) loop_.remove_deadlines(this);
}

RedisNode& ClusterClient::node_at(const std::string& host, int port) {
  auto& node = nodes_[{host, port}];
  if (!node) {
    const std::string where = unix_ ? host : describe_host(host, port);
    RedisEndpoint endpoint = make_endpoint(options_, tls_, unix_ ? "" : host, port, "redis+cluster node " + where);
    if (unix_) endpoint.unix_path = host;
    endpoint.metrics = metrics_;
    const std::string server = endpoint.name;
    node = std::make_unique<RedisNode>(loop_, std::move(endpoint), options_.pool,
                                       circuit_of(options_, metrics_, server));
  }
  return *node;
}

RedisNode* ClusterClient::announced(const std::string& host, int port) {
  if (!unix_) return &node_at(host, port);
  auto it = socket_of_address_.find(describe_host(host, port));
  return it == socket_of_address_.end() ? nullptr : &node_at(it->second, 0);
}

void ClusterClient::route(RedisRequest* request) {
  if (!watched_) {
    watched_ = true;
    loop_.add_deadlines(this);
  }
  request->next_owner = request->owner;
  request->owner = this;
  dispatch(request);
}

// To the slot's node on the map we have (a stale map is still mostly right, and MOVED corrects the rest); a slot no
// node is known for waits for the map.
void ClusterClient::dispatch(RedisRequest* request) {
  if (closing_) {
    request->fail(ErrorCode::store_unavailable, name_ + ": the store was closed");
    complete(request);
    return;
  }
  if (request->deadline_us <= loop_.now_us()) {
    request->fail(ErrorCode::store_timeout, name_ + ": no reply within the timeout");
    complete(request);
    return;
  }
  RedisNode* node = slots_[static_cast<size_t>(request->slot)];
  if (stale_) want_map();
  if (node == nullptr && !stale_ && !reading_map_ && !map_read_scheduled_) {  // a fresh map says: nobody
    request->fail(ErrorCode::store_unavailable,
                  name_ + ": no reachable node serves slot " + std::to_string(request->slot));
    complete(request);
    return;
  }
  if (node == nullptr) {
    waiting_for_map_.push_back(request);
    return;
  }
  node->send(request);
}

void ClusterClient::on_done(RedisRequest& r) {
  RedisRequest* request = &r;
  request->asking = false;
  if (closing_) {
    complete(request);
    return;
  }
  if (request->failed()) {
    stale_ = true;  // the node may have failed over: read the map before the next call
    complete(request);
    return;
  }
  const Redirection redirect = redirection_of(*request);
  if (redirect.kind == Redirection::none || request->redirections >= kMaxRedirections) {
    complete(request);
    return;
  }
  const int attempt = request->redirections++;
  request->clear_result();
  RedisNode* target = redirect.kind == Redirection::moved || redirect.kind == Redirection::ask
                          ? announced(redirect.host, redirect.port)
                          : nullptr;
  if ((redirect.kind == Redirection::moved || redirect.kind == Redirection::ask) && target == nullptr) {
    request->fail(ErrorCode::store_unavailable, name_ + ": redirected to " + describe_host(redirect.host, redirect.port) +
                                                    ", whose Unix socket is not in the URL");
    complete(request);
    return;
  }
  switch (redirect.kind) {
    case Redirection::moved:
      slots_[static_cast<size_t>(request->slot)] = target;
      // A slot that has just moved: until every node has heard, they may send the call back and forth.
      if (attempt >= 2)
        retry_later(request, attempt - 2);
      else
        dispatch(request);
      return;
    case Redirection::ask:
      // This one command goes to the importing node, announced by ASKING on the same connection.
      request->asking = true;
      target->send(request);
      return;
    case Redirection::try_again:  // a multi-key call during a slot migration, its keys split between two nodes
      retry_later(request, attempt);
      return;
    case Redirection::none:
      return;
  }
}

// Sends the request again after 1, 2, 4 ... 32 ms (within its deadline: dispatch checks it).
void ClusterClient::retry_later(RedisRequest* request, int attempt) {
  delayed_.insert(request);
  std::shared_ptr<bool> alive = alive_;
  loop_.run_at(loop_.now_us() + 1000 * (int64_t{1} << std::min(attempt, 5)), [this, alive, request] {
    if (!*alive || delayed_.erase(request) == 0) return;
    dispatch(request);
  });
}

void ClusterClient::complete(RedisRequest* request) {
  request->owner = request->next_owner;
  request->owner->on_done(*request);
}

void ClusterClient::want_map() {
  if (reading_map_ || map_read_scheduled_) return;
  const int64_t at = last_map_read_us_ + kMapReadIntervalUs;
  if (at > loop_.now_us()) {
    map_read_scheduled_ = true;
    std::shared_ptr<bool> alive = alive_;
    loop_.run_at(at, [this, alive] {
      if (!*alive) return;
      map_read_scheduled_ = false;
      if (stale_ && !closing_) want_map();
    });
    return;
  }
  reading_map_ = true;
  last_map_read_us_ = loop_.now_us();
  if (unix_ && socket_of_id_.size() < seeds_.size()) {
    (new IdsReader(*this, seeds_))->send();
    return;
  }
  std::vector<std::pair<std::string, int>> candidates;
  for (const auto& entry : nodes_) candidates.push_back(entry.first);
  for (const auto& seed : seeds_)
    if (std::find(candidates.begin(), candidates.end(), seed) == candidates.end()) candidates.push_back(seed);
  read_map(std::move(candidates), 0);
}

void ClusterClient::read_map(std::vector<std::pair<std::string, int>> candidates, size_t next) {
  if (next >= candidates.size()) {
    map_read(false);
    return;
  }
  auto* reader = new SlotsReader(*this, std::move(candidates), next);
  reader->send();
}

void ClusterClient::map_read(bool ok) {
  reading_map_ = false;
  if (ok) stale_ = false;
  std::vector<RedisRequest*> waiting;
  waiting.swap(waiting_for_map_);
  for (RedisRequest* r : waiting) {
    if (slots_[static_cast<size_t>(r->slot)] != nullptr) {
      dispatch(r);
    } else {
      r->fail(ErrorCode::store_unavailable,
              name_ + ": no reachable node serves slot " + std::to_string(r->slot));
      complete(r);
    }
  }
}

// CLUSTER SLOTS: [[start, end, [host, port, id...], replicas...], ...]. Slots no entry covers map to nothing.
bool ClusterClient::install_map(const redisReply* reply, const std::string& asked_host) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) return false;
  std::vector<std::pair<RedisNode*, std::pair<long long, long long>>> ranges;
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* range = reply->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return false;
    const redisReply* master = range->element[2];
    if (range->element[0]->type != REDIS_REPLY_INTEGER || range->element[1]->type != REDIS_REPLY_INTEGER ||
        master->type != REDIS_REPLY_ARRAY || master->elements < 2 || master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER)
      return false;
    const long long first = range->element[0]->integer, last = range->element[1]->integer;
    if (first < 0 || last >= kClusterSlots || first > last) return false;
    // An empty host means "the node you asked".
    const std::string host = master->element[0]->len == 0 ? asked_host : master->element[0]->str;
    const int port = static_cast<int>(master->element[1]->integer);
    if (unix_) {  // the node's id says which socket it is; a master without a listed socket stays unreachable
      auto id = master->elements >= 3 && master->element[2]->type == REDIS_REPLY_STRING
                    ? socket_of_id_.find(std::string(master->element[2]->str, master->element[2]->len))
                    : socket_of_id_.end();
      if (id != socket_of_id_.end()) socket_of_address_[describe_host(host, port)] = id->second;
    }
    ranges.push_back({announced(host, port), {first, last}});
  }
  std::fill(slots_.begin(), slots_.end(), nullptr);
  for (const auto& [node, range] : ranges)
    for (long long slot = range.first; slot <= range.second; ++slot) slots_[static_cast<size_t>(slot)] = node;
  return true;
}

int64_t ClusterClient::next_deadline_us() const {
  int64_t next = INT64_MAX;
  for (const RedisRequest* r : waiting_for_map_) next = std::min(next, r->deadline_us);
  return next;
}

void ClusterClient::expire(int64_t now_us) {
  std::vector<RedisRequest*> waiting;
  waiting.swap(waiting_for_map_);
  for (RedisRequest* r : waiting) {
    if (r->deadline_us > now_us) {
      waiting_for_map_.push_back(r);
      continue;
    }
    r->fail(ErrorCode::store_timeout, name_ + ": no node answered for slot " + std::to_string(r->slot) +
                                          " within the timeout");
    complete(r);
  }
}

void ClusterClient::close() {
  closing_ = true;
  std::vector<RedisRequest*> pending(waiting_for_map_.begin(), waiting_for_map_.end());
  pending.insert(pending.end(), delayed_.begin(), delayed_.end());
  waiting_for_map_.clear();
  delayed_.clear();
  for (RedisRequest* r : pending) {
    r->fail(ErrorCode::store_unavailable, name_ + ": the store was closed");
    complete(r);
  }
  for (auto& entry : nodes_) entry.second->close("the store was closed");
}

}  // namespace ratewarden
