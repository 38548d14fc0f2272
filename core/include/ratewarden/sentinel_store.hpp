// redis+sentinel://[user:password@]host:port[,host:port...]/service[?db=N&options] and rediss+sentinel:// (TLS) —
// a Redis master watched by Sentinel.
//
// The same scripts as the single-node store, sent to the master that the sentinels name: SENTINEL
// get-master-addr-by-name, then ROLE on that server to check that it is the master. The master is found again when
// a call meets a replica (-READONLY), when its connection drops, and when a sentinel announces +switch-master (one
// pub/sub connection to one sentinel, made again to the next when it drops). Everything happens on the library's
// I/O thread: calls routed while the master is being found wait for it (up to their own deadline) or fail with a
// StoreError that says why. docs/deployment.md, "Redis Sentinel", says what a failover costs a limit.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ratewarden/redis_store.hpp"

namespace ratewarden {

struct SentinelStoreOptions : RedisClientOptions {
  std::vector<std::pair<std::string, int>> sentinels;  // host, port: asked in turn
  std::string service;                                 // the name the sentinels monitor the master under
  int db = 0;
  // Whether the sentinels are sent the URL's user and password too (?sentinel_auth=url, the default, as `limits`
  // does) or nothing (?sentinel_auth=none: sentinels without requirepass, in front of a master that has one).
  bool sentinel_auth = true;
};

class SentinelStore final : public RedisCallsStore {
 public:
  explicit SentinelStore(SentinelStoreOptions options);
};

}  // namespace ratewarden
