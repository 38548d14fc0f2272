#include "node.hpp"

#include "ratewarden/errors.hpp"

namespace ratewarden {

RedisNode::RedisNode(const RedisClientOptions& options, std::string host, int port, int db, std::string name) {
  endpoint_.host = std::move(host);
  endpoint_.port = port;
  endpoint_.user = options.user;
  endpoint_.password = options.password;
  endpoint_.db = db;
  endpoint_.connect_timeout_us = options.connect_timeout_us;
  endpoint_.timeout_us = options.timeout_us;
  endpoint_.name = std::move(name);
  for (int i = 0; i < options.pool; ++i) connections_.push_back(std::make_unique<RedisConnection>(endpoint_));
}

void RedisNode::execute(RedisRequest* const* requests, size_t n) {
  connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()]->execute(requests, n);
}

void validate_client_options(const RedisClientOptions& options) {
  if (options.pool < 1 || options.pool > 64) throw InvalidArgument("pool must be between 1 and 64");
  if (options.timeout_us < 1000 || options.connect_timeout_us < 1000)
    throw InvalidArgument("timeouts must be at least 1 ms");
}

std::string describe_auth(const RedisClientOptions& options) {
  if (options.user.empty() && !options.password) return "";
  return options.user + (options.password ? ":***" : "") + "@";
}

std::string describe_query(const RedisClientOptions& options) {
  return "?timeout=" + std::to_string(options.timeout_us / 1000) + "ms&connect_timeout=" +
         std::to_string(options.connect_timeout_us / 1000) + "ms&pool=" + std::to_string(options.pool);
}

std::string describe_host(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace ratewarden
