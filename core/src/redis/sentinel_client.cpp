#include "sentinel_client.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "client_options.hpp"
#include "resp.hpp"

namespace ratewarden {
namespace {

constexpr int64_t kRoundIntervalUs = 100000;
constexpr int64_t kPingIntervalUs = 1000000;       // the subscription's connection is checked this often
constexpr int64_t kResubscribeDelayUs = 200000;    // after it dropped, before the next sentinel is tried

bool is_string(const redisReply* r) { return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS; }

bool starts_with(const redisReply* r, const char* prefix) {
  return r != nullptr && (is_string(r) || r->type == REDIS_REPLY_ERROR) && r->len >= std::strlen(prefix) &&
         std::strncmp(r->str, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

// One command of a round (SENTINEL get-master-addr-by-name, ROLE); hands its request to `then` unless the client
// closed or went meanwhile.
class SentinelClient::Query final : public RequestOwner {
 public:
  using Then = std::function<void(const RedisRequest& request)>;
  Query(SentinelClient& client, Then then) : client_(client), alive_(client.alive_), then_(std::move(then)) {
    request_.owner = this;
    request_.deadline_us = client.loop_.now_us() + client.options_.timeout_us;
  }
  std::string& command() { return request_.command; }
  void send(RedisNode& node) { node.send(&request_); }

  void on_done(RedisRequest& request) override {
    std::unique_ptr<Query> self(this);
    if (!*alive_ || client_.closing_) return;
    then_(request);
  }

 private:
  SentinelClient& client_;
  std::shared_ptr<bool> alive_;
  Then then_;
  RedisRequest request_;
};

// SUBSCRIBE +switch-master on one sentinel (the next one when its connection drops), and a PING every second so
// that a sentinel that hangs is noticed. Each connection is made once, used only while its sentinel is the one.
class SentinelClient::Subscriber final : public ConnectionListener, public Deadlines {
 public:
  explicit Subscriber(SentinelClient& client) : client_(client), alive_(client.alive_) {
    for (const RedisEndpoint& e : client.sentinel_endpoints_)
      connections_.push_back(std::make_unique<RedisConnection>(client.loop_, e, *this));
    RespWriter(subscribe_.command, 2).arg("SUBSCRIBE").arg("+switch-master");
    RespWriter(ping_.command, 1).arg("PING");
  }
  ~Subscriber() override {
    if (watched_) client_.loop_.remove_deadlines(this);
  }

  void start() {
    if (watched_) return;
    watched_ = true;
    client_.loop_.add_deadlines(this);
    subscribe();
  }

  void close() {
    closing_ = true;
    for (auto& c : connections_) c->fail_all(ErrorCode::store_unavailable, "the store was closed");
  }

  void on_reply(RedisRequest* request) override {
    const bool refused = request->reply->type == REDIS_REPLY_ERROR;
    consider(request->reply.get());
    request->clear_result();
    if (request == &ping_) return;
    if (refused) {  // NOAUTH, say: try the next sentinel
      resubscribe_later();
      return;
    }
    subscribed_ = true;
    // A switch may have been announced while no sentinel was listened to: check the master once (in the background).
    client_.want_master(false);
    ping_later();
  }
  void on_failure(RedisRequest*, bool, bool) override { resubscribe_later(); }
  bool on_push(redisReply* reply) override {
    consider(reply);
    freeReplyObject(reply);
    return true;
  }
  void on_dropped() override { resubscribe_later(); }

  int64_t next_deadline_us() const override {
    int64_t next = INT64_MAX;
    for (const auto& c : connections_) next = std::min(next, c->next_deadline_us());
    return next;
  }
  void expire(int64_t now_us) override {
    for (auto& c : connections_) c->expire(now_us);
  }

 private:
  void subscribe() {
    subscribed_ = false;
    ++generation_;
    send(subscribe_);
  }
  void send(RedisRequest& request) {
    request.clear_result();
    request.deadline_us = client_.loop_.now_us() + client_.options_.timeout_us;
    connections_[current_]->send(&request);
  }
  void ping_later() {
    std::shared_ptr<bool> alive = alive_;
    client_.loop_.run_at(client_.loop_.now_us() + kPingIntervalUs, [this, alive, generation = generation_] {
      if (!*alive || closing_ || !subscribed_ || generation != generation_) return;
      if (connections_[current_]->in_flight() == 0) send(ping_);
      ping_later();
    });
  }
  void resubscribe_later() {
    if (closing_ || switching_ || resubscribe_scheduled_) return;
    subscribed_ = false;
    resubscribe_scheduled_ = true;
    std::shared_ptr<bool> alive = alive_;
    client_.loop_.run_at(client_.loop_.now_us() + kResubscribeDelayUs, [this, alive] {
      if (!*alive) return;
      resubscribe_scheduled_ = false;
      if (closing_) return;
      switching_ = true;  // what the old connection still has fails now, without scheduling another switch
      connections_[current_]->fail_all(ErrorCode::store_unavailable, "moved to another sentinel");
      switching_ = false;
      current_ = (current_ + 1) % connections_.size();
      subscribe();
    });
  }
  // ["message", "+switch-master", "<service> <old ip> <old port> <new ip> <new port>"]: find the master again.
  void consider(const redisReply* r) {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !starts_with(r->element[0], "message") ||
        !is_string(r->element[2]))
      return;
    const std::string data(r->element[2]->str, r->element[2]->len);
    if (data.rfind(client_.options_.service + " ", 0) == 0) client_.want_master(true);
  }

  SentinelClient& client_;
  std::shared_ptr<bool> alive_;
  std::vector<std::unique_ptr<RedisConnection>> connections_;  // one per sentinel
  size_t current_ = 0;
  uint64_t generation_ = 0;  // of the subscription: a PING timer of an older one stops
  RedisRequest subscribe_, ping_;
  bool subscribed_ = false;
  bool resubscribe_scheduled_ = false;
  bool switching_ = false;
  bool closing_ = false;
  bool watched_ = false;
};

SentinelClient::SentinelClient(IoLoop& loop, const SentinelStoreOptions& options, std::shared_ptr<TlsContext> tls,
                               std::string name, std::shared_ptr<CallMetrics> metrics)
    : loop_(loop), options_(options), tls_(std::move(tls)), name_(std::move(name)), metrics_(std::move(metrics)) {
  for (const auto& [host, port] : options_.sentinels) {
    RedisEndpoint e = make_endpoint(options_, tls_, host, port, "redis+sentinel sentinel " + describe_host(host, port));
    if (!options_.sentinel_auth) {
      e.user.clear();
      e.password.reset();
    }
    sentinel_endpoints_.push_back(e);
    // Its own circuit, out of the store's figures: a sentinel down is not the store down.
    sentinels_.push_back(std::make_unique<RedisNode>(loop_, e, 1, circuit_of(options_, nullptr, e.name)));
  }
  subscriber_ = std::make_unique<Subscriber>(*this);
}

SentinelClient::~SentinelClient() {
  *alive_ = false;
  if (watched_) loop_.remove_deadlines(this);
}

RedisNode& SentinelClient::data_node(const std::string& host, int port) {
  auto& node = nodes_[{host, port}];
  if (!node) {
    RedisEndpoint e = make_endpoint(options_, tls_, host, port, "redis+sentinel master " + describe_host(host, port));
    e.db = options_.db;
    e.metrics = metrics_;
    const std::string server = e.name;
    node = std::make_unique<RedisNode>(loop_, std::move(e), options_.pool, circuit_of(options_, metrics_, server),
                                       /*retry_dropped=*/false);
  }
  return *node;
}

void SentinelClient::route(RedisRequest* request) {
  if (!watched_) {  // here, on the I/O thread
    watched_ = true;
    loop_.add_deadlines(this);
    subscriber_->start();
  }
  request->next_owner = request->owner;
  request->owner = this;
  dispatch(request);
}

void SentinelClient::dispatch(RedisRequest* request) {
  if (closing_) {
    request->fail(ErrorCode::store_unavailable, name_ + ": the store was closed");
    complete(request);
    return;
  }
  if (request->deadline_us <= loop_.now_us()) {
    request->fail(ErrorCode::store_timeout, name_ + ": no master found within the timeout" +
                                                (failure_.empty() ? "" : " (" + failure_ + ")"));
    complete(request);
    return;
  }
  if (master_ == nullptr || suspect_) {
    waiting_.push_back(request);
    want_master(true);
    return;
  }
  master_->send(request);
}

void SentinelClient::complete(RedisRequest* request) {
  request->owner = request->next_owner;
  request->owner->on_done(*request);
}

void SentinelClient::on_done(RedisRequest& r) {
  RedisRequest* request = &r;
  if (closing_) {
    complete(request);
    return;
  }
  const bool readonly = !request->failed() && starts_with(request->reply.get(), "READONLY");
  if (!request->failed() && !readonly) {
    complete(request);
    return;
  }
  want_master(true);  // a master that failed or turned replica: find it again before the next call goes
  // Sent again only when the master cannot have run it (module comment); once.
  if ((readonly || !request->written) && !request->retried) {
    request->retried = true;
    request->written = false;
    request->clear_result();
    dispatch(request);
    return;
  }
  complete(request);
}

void SentinelClient::want_master(bool suspect) {
  if (suspect) suspect_ = true;
  if (closing_) return;
  if (in_round_) {
    round_again_ = true;
    return;
  }
  if (round_scheduled_) return;
  const int64_t at = last_round_us_ + kRoundIntervalUs;
  if (at <= loop_.now_us()) {
    start_round();
    return;
  }
  round_scheduled_ = true;
  std::shared_ptr<bool> alive = alive_;
  loop_.run_at(at, [this, alive] {
    if (!*alive) return;
    round_scheduled_ = false;
    if (!closing_) start_round();
  });
}

void SentinelClient::start_round() {
  in_round_ = true;
  round_again_ = false;
  last_round_us_ = loop_.now_us();
  unknown_ = 0;
  last_error_.clear();
  ask_sentinel(0);
}

void SentinelClient::ask_sentinel(size_t attempt) {
  const size_t n = sentinels_.size();
  if (attempt == n) {
    const std::string service = "\"" + options_.service + "\"";
    if (unknown_ == n)
      round_done(nullptr, "no sentinel knows the service " + service + " (SENTINEL get-master-addr-by-name: nil)");
    else if (unknown_ > 0 && last_error_.empty())
      round_done(nullptr, "no master for the service " + service + ": " + std::to_string(unknown_) + " of " +
                              std::to_string(n) + " sentinels do not know it");
    else
      round_done(nullptr, "no master for the service " + service + " (" + last_error_ + ")");
    return;
  }
  const size_t i = (first_sentinel_ + attempt) % n;
  auto* query = new Query(*this, [this, attempt](const RedisRequest& r) { on_sentinel_reply(attempt, r); });
  RespWriter(query->command(), 3).arg("SENTINEL").arg("get-master-addr-by-name").arg(options_.service);
  query->send(*sentinels_[i]);
}

void SentinelClient::on_sentinel_reply(size_t attempt, const RedisRequest& request) {
  const size_t i = (first_sentinel_ + attempt) % sentinels_.size();
  const redisReply* r = request.reply.get();
  if (request.failed()) {
    last_error_ = request.error_message;
  } else if (r->type == REDIS_REPLY_NIL) {
    ++unknown_;
  } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && is_string(r->element[0]) &&
             is_string(r->element[1])) {
    const int port = std::atoi(r->element[1]->str);
    if (port > 0 && port <= 65535) {
      first_sentinel_ = i;
      check_role(attempt, std::string(r->element[0]->str, r->element[0]->len), port);
      return;
    }
    last_error_ = sentinels_[i]->name() + ": an address that is not host, port";
  } else if (r->type == REDIS_REPLY_ERROR) {
    last_error_ = sentinels_[i]->name() + ": " + std::string(r->str, r->len);
  } else {
    last_error_ = sentinels_[i]->name() + ": an unexpected reply to SENTINEL get-master-addr-by-name";
  }
  ask_sentinel(attempt + 1);
}

void SentinelClient::check_role(size_t attempt, const std::string& host, int port) {
  RedisNode& node = data_node(host, port);
  auto* query = new Query(*this, [this, attempt, &node](const RedisRequest& r) { on_role_reply(attempt, node, r); });
  RespWriter(query->command(), 1).arg("ROLE");
  query->send(node);
}

// ROLE: ["master", offset, replicas] on the master; "slave" (or "sentinel") first elsewhere.
void SentinelClient::on_role_reply(size_t attempt, RedisNode& node, const RedisRequest& request) {
  const redisReply* r = request.reply.get();
  if (!request.failed() && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && is_string(r->element[0]) &&
      std::strcmp(r->element[0]->str, "master") == 0) {
    round_done(&node, "");
    return;
  }
  std::string what;
  if (request.failed())
    what = "does not answer: " + request.error_message;
  else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 && is_string(r->element[0]))
    what = "says it is a " + std::string(r->element[0]->str, r->element[0]->len);
  else if (r->type == REDIS_REPLY_ERROR)
    what = "answers ROLE with " + std::string(r->str, r->len);
  else
    what = "answers ROLE with an unexpected reply";
  last_error_ = "the sentinels name " + node.name() + ", which " + what + " (a failover may be under way)";
  ask_sentinel(attempt + 1);
}

void SentinelClient::round_done(RedisNode* master, const std::string& error) {
  in_round_ = false;
  failure_ = error;
  if (master != nullptr) {
    master_ = master;
    suspect_ = false;
  }
  std::vector<RedisRequest*> waiting;
  waiting.swap(waiting_);
  for (RedisRequest* r : waiting) {
    if (master != nullptr) {
      dispatch(r);
    } else {
      r->fail(ErrorCode::store_unavailable, name_ + ": " + error);
      complete(r);
    }
  }
  if (round_again_ && !closing_) want_master(false);
}

int64_t SentinelClient::next_deadline_us() const {
  int64_t next = INT64_MAX;
  for (const RedisRequest* r : waiting_) next = std::min(next, r->deadline_us);
  return next;
}

void SentinelClient::expire(int64_t now_us) {
  std::vector<RedisRequest*> waiting;
  waiting.swap(waiting_);
  for (RedisRequest* r : waiting) {
    if (r->deadline_us > now_us) {
      waiting_.push_back(r);
      continue;
    }
    r->fail(ErrorCode::store_timeout,
            name_ + ": no master found within the timeout" + (failure_.empty() ? "" : " (" + failure_ + ")"));
    complete(r);
  }
}

void SentinelClient::close() {
  closing_ = true;
  std::vector<RedisRequest*> waiting;
  waiting.swap(waiting_);
  for (RedisRequest* r : waiting) {
    r->fail(ErrorCode::store_unavailable, name_ + ": the store was closed");
    complete(r);
  }
  subscriber_->close();
  for (auto& s : sentinels_) s->close("the store was closed");
  for (auto& entry : nodes_) entry.second->close("the store was closed");
}

}  // namespace ratewarden
