// redis://[user:password@]host:port[/db][?timeout=..&connect_timeout=..&pool=..&prefix=..] — the shared store.
//
// Every decision is one EVALSHA of the algorithm's Lua script: atomic, one round trip, time from the server's
// clock. Concurrent decisions are pipelined onto a small pool of connections.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ratewarden/clock.hpp"
#include "ratewarden/store.hpp"

namespace ratewarden {

// What every Redis store (single node or cluster) needs to talk to a server.
struct RedisClientOptions {
  std::string user;                     // ACL user (Redis 6+); empty for the default user
  std::optional<std::string> password;  // AUTH when set
  int64_t connect_timeout_us = 1000000;
  // The longest the server may stay silent while a call writes or waits for a reply. A call queued behind other
  // callers' batch on its connection may wait for that batch too, so its total can reach a few timeouts.
  int64_t timeout_us = 1000000;
  int pool = 4;  // connections (per node)
  // Tests only: pass this clock's time to the scripts instead of the server's TIME.
  Clock clock;
};

struct RedisStoreOptions : RedisClientOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
};

class RedisNode;

class RedisStore final : public Store {
 public:
  explicit RedisStore(RedisStoreOptions options);
  ~RedisStore() override;

  Decision decide(const StoreCall& call) override;
  void decide_many(const StoreCall* calls, size_t n, Decision* out, std::optional<StoreError>* errors) override;
  void reset(const std::string* keys, size_t count, std::string_view tag) override;
  std::string describe() const override;

 private:
  RedisStoreOptions options_;
  std::unique_ptr<RedisNode> node_;
};

}  // namespace ratewarden
