#include "ratewarden/redis_store.hpp"

#include <vector>

#include "client.hpp"
#include "client_options.hpp"
#include "node.hpp"
#include "ratewarden/errors.hpp"
#include "redis_calls.hpp"

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
  calls_ = std::make_unique<RedisCalls>(
      [endpoint, pool, circuit](IoLoop& loop) { return std::make_unique<SingleNodeClient>(loop, endpoint, pool, circuit); },
      name_, options_.timeout_us, options_.clock, false);
}

RedisStore::~RedisStore() = default;

void RedisStore::decide_async(const StoreCall& call, DecisionCallback done) { calls_->decide(call, std::move(done)); }

void RedisStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  calls_->decide_many(calls, n, std::move(done));
}

void RedisStore::reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) {
  calls_->reset(keys, count, tag, key_prefix(), std::move(done));
}

void RedisStore::read_resets_async(int64_t cursor, ResetLogCallback done) {
  calls_->read_resets(key_prefix(), cursor, std::move(done));
}

void RedisStore::check_async(DoneCallback done) { calls_->check(std::move(done)); }

void RedisStore::close() { calls_->close(); }

std::string RedisStore::describe() const {
  if (!options_.unix_path.empty())
    return "redis+unix://" + describe_auth(options_) + options_.unix_path + describe_query(options_) +
           (options_.db != 0 ? "&db=" + std::to_string(options_.db) : "");
  return std::string(options_.tls.enabled ? "rediss://" : "redis://") + describe_auth(options_) +
         describe_host(options_.host, options_.port) + "/" + std::to_string(options_.db) + describe_query(options_);
}

}  // namespace ratewarden
