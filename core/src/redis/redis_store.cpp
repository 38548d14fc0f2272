#include "ratewarden/redis_store.hpp"

#include <vector>

#include "client.hpp"
#include "client_options.hpp"
#include "commands.hpp"
#include "node.hpp"
#include "ratewarden/errors.hpp"
#include "resp.hpp"

namespace ratewarden {
namespace {

// The I/O-thread side of a single-node store: one node.
class SingleNodeClient final : public RedisClient {
 public:
  SingleNodeClient(IoLoop& loop, RedisEndpoint endpoint, int pool, CircuitOptions circuit)
      : node_(loop, std::move(endpoint), pool, circuit) {}
  void route(RedisRequest* request) override {
    if (!closed_) return node_.send(request);
    request->fail(ErrorCode::store_unavailable, node_.name() + ": the store was closed");
    request->owner->on_done(*request);
  }
  void close() override {
    closed_ = true;
    node_.close("the store was closed");
  }

 private:
  RedisNode node_;
  bool closed_ = false;
};

}  // namespace

RedisStore::RedisStore(RedisStoreOptions options) : options_(std::move(options)) {
  validate_client_options(options_);
  if (options_.unix_path.empty() && (options_.port < 1 || options_.port > 65535))
    throw InvalidArgument("port must be between 1 and 65535");
  name_ = describe();
  RedisEndpoint endpoint = make_endpoint(options_, make_tls(options_), options_.host, options_.port, name_);
  endpoint.unix_path = options_.unix_path;
  endpoint.db = options_.db;
  const int pool = options_.pool;
  const CircuitOptions circuit = circuit_of(options_);
  client_ = std::make_unique<ClientHolder>(
      [endpoint, pool, circuit](IoLoop& loop) { return std::make_unique<SingleNodeClient>(loop, endpoint, pool, circuit); },
      name_);
}

RedisStore::~RedisStore() = default;

void RedisStore::decide_async(const StoreCall& call, DecisionCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_decision(1, std::move(done)));
  build_script_call(e->request(0), call, script_now(options_.clock));
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

// One pipeline for the whole batch; each call gets its own answer or error.
void RedisStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  if (n == 0) {
    done(nullptr, nullptr);
    return;
  }
  std::unique_ptr<Exchange> e(Exchange::for_decisions(n, std::move(done)));
  const std::string now = script_now(options_.clock);
  for (size_t i = 0; i < n; ++i) build_script_call(e->request(i), calls[i], now);
  std::vector<RedisRequest*> requests = e->prepare(options_.timeout_us, name_);
  e.release();
  client_->submit(std::move(requests));
}

void RedisStore::reset_async(const std::string* keys, size_t count, std::string_view, DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_INTEGER));
  build_delete(e->request(0), keys, count);
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

void RedisStore::check_async(DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_STATUS));
  RespWriter(e->request(0).command, 1).arg("PING");
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

void RedisStore::close() { client_->close(); }

std::string RedisStore::describe() const {
  if (!options_.unix_path.empty())
    return "redis+unix://" + describe_auth(options_) + options_.unix_path + describe_query(options_) +
           (options_.db != 0 ? "&db=" + std::to_string(options_.db) : "");
  return std::string(options_.tls.enabled ? "rediss://" : "redis://") + describe_auth(options_) +
         describe_host(options_.host, options_.port) + "/" + std::to_string(options_.db) + describe_query(options_);
}

}  // namespace ratewarden
