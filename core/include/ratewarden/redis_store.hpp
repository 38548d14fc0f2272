// redis://[user:password@]host:port[/db][?options], rediss:// (TLS) and redis+unix:///path — the shared store.
//
// Every decision is one EVALSHA of the algorithm's Lua script: atomic, one round trip, time from the server's
// clock. Calls are requests on the library's I/O thread (docs/threading.md): concurrent ones share pipelined
// connections, and none of them holds a thread while it waits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ratewarden/clock.hpp"
#include "ratewarden/network_options.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

struct RedisTlsOptions {
  bool enabled = false;   // rediss://
  std::string ca_file;    // tls_ca: PEM CA bundle; the system's when empty
  std::string cert_file;  // tls_cert: client certificate (PEM)
  std::string key_file;   // tls_key: its private key (PEM)
  std::string sni;        // tls_sni: the server name to send and verify; the host when empty
  bool verify = true;     // tls_verify=0 turns off certificate and name checks (tests only)
};

// What every Redis store (single node or cluster) needs to talk to a server: the network options (timeout 250 ms,
// pool 4, the circuit breaker) and these.
struct RedisClientOptions : NetworkOptions {
  std::string user;                     // ACL user (Redis 6+); empty for the default user
  std::optional<std::string> password;  // AUTH when set
  RedisTlsOptions tls;
  // Tests only: pass this clock's time to the scripts instead of the server's TIME.
  Clock clock;
};

struct RedisStoreOptions : RedisClientOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;  // redis+unix://: the socket instead of host:port
  int db = 0;
};

class CallMetrics;
class RedisCalls;

// What the single-node and the cluster store are alike: their calls go to the Redis client of this process
// (RedisCalls, on the I/O thread); each sets it up from its options.
class RedisCallsStore : public Store {
 public:
  ~RedisCallsStore() override;

  void decide_async(const StoreCall& call, DecisionCallback done) override;
  void decide_many_async(const StoreCall* calls, size_t n, DecisionsCallback done) override;
  void reset_async(const std::string* keys, size_t count, std::string_view tag, DoneCallback done) override;
  void read_resets_async(int64_t cursor, ResetLogCallback done) override;
  void check_async(DoneCallback done) override;
  void close() override;
  StoreTraits traits() const override { return StoreTraits::network(); }
  StoreStats stats() const override;
  std::string describe() const override { return name_; }

 protected:
  // Makes the store's calls from its name and its figures (which its servers' circuits count in).
  using MakeCalls =
      std::function<std::unique_ptr<RedisCalls>(const std::string& name, const std::shared_ptr<CallMetrics>& metrics)>;
  RedisCallsStore(std::string name, const MakeCalls& make_calls);

 private:
  std::string name_;
  std::shared_ptr<CallMetrics> metrics_;
  std::unique_ptr<RedisCalls> calls_;
};

class RedisStore final : public RedisCallsStore {
 public:
  explicit RedisStore(RedisStoreOptions options);
};

}  // namespace ratewarden
