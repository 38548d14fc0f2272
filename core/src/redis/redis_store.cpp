#include "ratewarden/redis_store.hpp"

#include <vector>

#include "client.hpp"
#include "client_options.hpp"
#include "node.hpp"
#include "metrics/call_metrics.hpp"
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

// The store's name: its URL, the password masked.
std::string url_of(const RedisStoreOptions& o) {
  if (!o.unix_path.empty())
    return "redis+unix://" + describe_auth(o) + o.unix_path + describe_query(o) +
           (o.db != 0 ? "&db=" + std::to_string(o.db) : "");
  return std::string(o.tls.enabled ? "rediss://" : "redis://") + describe_auth(o) + describe_host(o.host, o.port) +
         "/" + std::to_string(o.db) + describe_query(o);
}

std::unique_ptr<RedisCalls> single_node_calls(const RedisStoreOptions& o, const std::string& name,
                                              const std::shared_ptr<CallMetrics>& metrics) {
  validate_network_options(o);
  if (o.unix_path.empty() && (o.port < 1 || o.port > 65535)) throw InvalidArgument("port must be between 1 and 65535");
  RedisEndpoint endpoint = make_endpoint(o, make_tls(o), o.host, o.port, name);
  endpoint.metrics = metrics;
  endpoint.unix_path = o.unix_path;
  endpoint.db = o.db;
  const int pool = o.pool;
  const CircuitOptions circuit = circuit_of(o, metrics, name);
  return std::make_unique<RedisCalls>(
      [endpoint, pool, circuit](IoLoop& loop) { return std::make_unique<SingleNodeClient>(loop, endpoint, pool, circuit); },
      name, o.timeout_us, o.clock, false);
}

}  // namespace

RedisCallsStore::RedisCallsStore(std::string name, const MakeCalls& make_calls)
    : name_(std::move(name)), metrics_(std::make_shared<CallMetrics>(name_)), calls_(make_calls(name_, metrics_)) {}

RedisCallsStore::~RedisCallsStore() = default;

void RedisCallsStore::decide_async(const StoreCall& call, DecisionCallback done) {
  calls_->decide(call, metrics_->timed(std::move(done)));
}

void RedisCallsStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  calls_->decide_many(calls, n, metrics_->timed(n, std::move(done)));
}

void RedisCallsStore::reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) {
  calls_->reset(keys, count, tag, key_prefix(), metrics_->timed(std::move(done)));
}

void RedisCallsStore::read_resets_async(int64_t cursor, ResetLogCallback done) {
  calls_->read_resets(key_prefix(), cursor, std::move(done));
}

void RedisCallsStore::check_async(DoneCallback done) { calls_->check(metrics_->timed(std::move(done))); }

StoreStats RedisCallsStore::stats() const {
  StoreStats s = Store::stats();
  s.network = true;
  metrics_->fill(s);
  return s;
}

void RedisCallsStore::close() { calls_->close(); }

RedisStore::RedisStore(RedisStoreOptions options)
    : RedisCallsStore(url_of(options), [&options](const std::string& name, const std::shared_ptr<CallMetrics>& m) {
        return single_node_calls(options, name, m);
      }) {}

}  // namespace ratewarden
