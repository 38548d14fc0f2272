#include "ratewarden/sentinel_store.hpp"

#include "client_options.hpp"
#include "metrics/call_metrics.hpp"
#include "ratewarden/errors.hpp"
#include "redis_calls.hpp"
#include "sentinel_client.hpp"

namespace ratewarden {
namespace {

// The store's name: its URL, the password masked.
std::string url_of(const SentinelStoreOptions& o) {
  std::string hosts;
  for (const auto& [host, port] : o.sentinels) hosts += (hosts.empty() ? "" : ",") + describe_host(host, port);
  return std::string(o.tls.enabled ? "rediss+sentinel://" : "redis+sentinel://") + describe_auth(o) + hosts + "/" +
         o.service + describe_query(o) + (o.db != 0 ? "&db=" + std::to_string(o.db) : "") +
         (o.sentinel_auth ? "" : "&sentinel_auth=none");
}

std::unique_ptr<RedisCalls> sentinel_calls(const SentinelStoreOptions& o, const std::string& name,
                                           const std::shared_ptr<CallMetrics>& metrics) {
  validate_network_options(o);
  if (o.sentinels.empty()) throw InvalidArgument("a Sentinel store needs at least one sentinel host:port");
  if (o.service.empty()) throw InvalidArgument("a Sentinel store needs the service name of its master");
  for (const auto& sentinel : o.sentinels)
    if (sentinel.second < 1 || sentinel.second > 65535) throw InvalidArgument("port must be between 1 and 65535");
  if (o.db < 0) throw InvalidArgument("db must be >= 0");
  std::shared_ptr<TlsContext> tls = make_tls(o);
  return std::make_unique<RedisCalls>(
      [options = o, tls, name, metrics](IoLoop& loop) {
        return std::make_unique<SentinelClient>(loop, options, tls, name, metrics);
      },
      name, o.timeout_us, o.clock, false);
}

}  // namespace

SentinelStore::SentinelStore(SentinelStoreOptions options)
    : RedisCallsStore(url_of(options), [&options](const std::string& name, const std::shared_ptr<CallMetrics>& m) {
        return sentinel_calls(options, name, m);
      }) {}

}  // namespace ratewarden
