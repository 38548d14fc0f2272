#include "ratewarden/cluster_store.hpp"

#include "client_options.hpp"
#include "cluster_client.hpp"
#include "metrics/call_metrics.hpp"
#include "ratewarden/errors.hpp"
#include "redis_calls.hpp"

namespace ratewarden {
namespace {

// The store's name: its URL, the password masked.
std::string url_of(const ClusterStoreOptions& o) {
  if (!o.unix_paths.empty()) {
    std::string paths;
    for (const std::string& p : o.unix_paths) paths += (paths.empty() ? "" : ",") + p;
    return "redis+cluster+unix://" + describe_auth(o) + paths + describe_query(o);
  }
  std::string hosts;
  for (const auto& [host, port] : o.seeds) hosts += (hosts.empty() ? "" : ",") + describe_host(host, port);
  return std::string(o.tls.enabled ? "rediss+cluster://" : "redis+cluster://") + describe_auth(o) + hosts +
         describe_query(o);
}

std::unique_ptr<RedisCalls> cluster_calls(const ClusterStoreOptions& o, const std::string& name,
                                          const std::shared_ptr<CallMetrics>& metrics) {
  validate_network_options(o);
  if (o.seeds.empty() && o.unix_paths.empty()) throw InvalidArgument("a cluster store needs at least one host:port");
  if (!o.unix_paths.empty() && o.tls.enabled) throw InvalidArgument("a cluster on Unix sockets takes no TLS");
  for (const auto& seed : o.seeds)
    if (seed.second < 1 || seed.second > 65535) throw InvalidArgument("port must be between 1 and 65535");
  std::shared_ptr<TlsContext> tls = make_tls(o);
  return std::make_unique<RedisCalls>(
      [options = o, tls, name, metrics](IoLoop& loop) {
        return std::make_unique<ClusterClient>(loop, options, tls, name, metrics);
      },
      name, o.timeout_us, o.clock, true);
}

}  // namespace

ClusterStore::ClusterStore(ClusterStoreOptions options)
    : RedisCallsStore(url_of(options), [&options](const std::string& name, const std::shared_ptr<CallMetrics>& m) {
        return cluster_calls(options, name, m);
      }) {}

}  // namespace ratewarden
