// From a store's options to what its connections use (internal).
#pragma once

#include <memory>
#include <string>

#include "endpoint.hpp"
#include "net/network_url.hpp"
#include "node.hpp"
#include "ratewarden/redis_store.hpp"

namespace ratewarden {

// The TLS context of a rediss:// store (null without TLS). Throws InvalidArgument for files it cannot load.
std::shared_ptr<TlsContext> make_tls(const RedisClientOptions& options);
RedisEndpoint make_endpoint(const RedisClientOptions& options, std::shared_ptr<TlsContext> tls, std::string host,
                            int port, std::string name);

// "user:***@" (or "") and "?timeout=..ms&...": the parts of describe() every Redis store shares. The password
// never appears.
std::string describe_auth(const RedisClientOptions& options);
std::string describe_query(const RedisClientOptions& options);
std::string describe_host(const std::string& host, int port);

}  // namespace ratewarden
