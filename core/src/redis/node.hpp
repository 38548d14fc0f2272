// One Redis server as the stores see it: its endpoint and a pool of pipelined connections (internal).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "connection.hpp"
#include "ratewarden/redis_store.hpp"

namespace ratewarden {

class RedisNode {
 public:
  RedisNode(const RedisClientOptions& options, std::string host, int port, int db, std::string name);

  // Sends the requests as one pipeline on one of the node's connections and waits for them.
  void execute(RedisRequest* const* requests, size_t n);
  void execute(RedisRequest& request) {
    RedisRequest* p = &request;
    execute(&p, 1);
  }
  const std::string& name() const { return endpoint_.name; }

 private:
  RedisEndpoint endpoint_;
  std::vector<std::unique_ptr<RedisConnection>> connections_;
  std::atomic<uint32_t> next_{0};
};

// Throws InvalidArgument for options no store accepts.
void validate_client_options(const RedisClientOptions& options);

// "user:***@" (or "") and "?timeout=..ms&connect_timeout=..ms&pool=N": the parts of describe() every Redis store
// shares. The password never appears.
std::string describe_auth(const RedisClientOptions& options);
std::string describe_query(const RedisClientOptions& options);
std::string describe_host(const std::string& host, int port);

}  // namespace ratewarden
