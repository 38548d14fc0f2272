#include "ratewarden/cluster_store.hpp"

#include "client_options.hpp"
#include "cluster_client.hpp"
#include "ratewarden/errors.hpp"
#include "redis_calls.hpp"

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
  calls_ = std::make_unique<RedisCalls>(
      [options = options_, tls, name = name_](IoLoop& loop) {
        return std::make_unique<ClusterClient>(loop, options, tls, name);
      },
      name_, options_.timeout_us, options_.clock, true);
}

ClusterStore::~ClusterStore() = default;

void ClusterStore::decide_async(const StoreCall& call, DecisionCallback done) { calls_->decide(call, std::move(done)); }

void ClusterStore::decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) {
  calls_->decide_many(calls, n, std::move(done));
}

void ClusterStore::reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) {
  calls_->reset(keys, count, tag, key_prefix(), std::move(done));
}

void ClusterStore::read_resets_async(int64_t cursor, ResetLogCallback done) {
  calls_->read_resets(key_prefix(), cursor, std::move(done));
}

void ClusterStore::check_async(DoneCallback done) { calls_->check(std::move(done)); }

void ClusterStore::close() { calls_->close(); }

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
