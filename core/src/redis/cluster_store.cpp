#include "ratewarden/cluster_store.hpp"

#include "client.hpp"
#include "client_options.hpp"
#include "cluster_client.hpp"
#include "commands.hpp"
#include "key_slot.hpp"
#include "resp.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden {

ClusterStore::ClusterStore(ClusterStoreOptions options) : options_(std::move(options)) {
  validate_client_options(options_);
  if (options_.seeds.empty() && options_.unix_paths.empty())
    throw InvalidArgument("a cluster store needs at least one host:port");
  if (!options_.unix_paths.empty() && options_.tls.enabled)
    throw InvalidArgument("a cluster on Unix sockets takes no TLS");
  for (const auto& seed : options_.seeds)
    if (seed.second < 1 || seed.second > 65535) throw InvalidArgument("port must be between 1 and 65535");
  name_ = describe();
  std::shared_ptr<TlsContext> tls = make_tls(options_);
  client_ = std::make_unique<ClientHolder>(
      [options = options_, tls, name = name_](IoLoop& loop) {
        return std::make_unique<ClusterClient>(loop, options, tls, name);
      },
      name_);
}

ClusterStore::~ClusterStore() = default;

void ClusterStore::decide_async(const StoreCall& call, DecisionCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_decision(1, std::move(done)));
  build_script_call(e->request(0), call, script_now(options_.clock));
  e->request(0).slot = key_slot(call.keys[0]);
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

// Every call routed on its own: each node gets its calls as one pipeline, all nodes at the same time.
void ClusterStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  if (n == 0) {
    done(nullptr, nullptr);
    return;
  }
  std::unique_ptr<Exchange> e(Exchange::for_decisions(n, std::move(done)));
  const std::string now = script_now(options_.clock);
  for (size_t i = 0; i < n; ++i) {
    build_script_call(e->request(i), calls[i], now);
    e->request(i).slot = key_slot(calls[i].keys[0]);
  }
  std::vector<RedisRequest*> requests = e->prepare(options_.timeout_us, name_);
  e.release();
  client_->submit(std::move(requests));
}

void ClusterStore::reset_async(const std::string* keys, size_t count, std::string_view, DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_INTEGER));
  build_delete(e->request(0), keys, count);
  e->request(0).slot = key_slot(keys[0]);
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

void ClusterStore::check_async(DoneCallback done) {
  std::unique_ptr<Exchange> e(Exchange::for_done(std::move(done), REDIS_REPLY_STATUS));
  RespWriter(e->request(0).command, 1).arg("PING");
  e->request(0).slot = 0;
  RedisRequest* r = e->prepare(options_.timeout_us, name_)[0];
  e.release();
  client_->submit(r);
}

void ClusterStore::close() { client_->close(); }

std::string ClusterStore::describe() const {
  if (!options_.unix_paths.empty()) {
    std::string paths;
    for (const std::string& p : options_.unix_paths) paths += (paths.empty() ? "" : ",") + p;
    return "redis+cluster+unix://" + describe_auth(options_) + paths + describe_query(options_);
  }
  std::string hosts;
  for (const auto& [host, port] : options_.seeds) hosts += (hosts.empty() ? "" : ",") + describe_host(host, port);
  return std::string(options_.tls.enabled ? "rediss+cluster://" : "redis+cluster://") + describe_auth(options_) +
         hosts + describe_query(options_);
}

}  // namespace ratewarden
