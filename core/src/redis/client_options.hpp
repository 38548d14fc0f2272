// From a store's options to what its connections use (internal).
#pragma once

#include <memory>
#include <string>

#include "endpoint.hpp"
#include "node.hpp"
#include "ratewarden/redis_store.hpp"

namespace ratewarden {

// Throws InvalidArgument for options no store accepts.
void validate_client_options(const RedisClientOptions& options);
// The TLS context of a rediss:// store (null without TLS). Throws InvalidArgument for files it cannot load.
std::shared_ptr<TlsContext> make_tls(const RedisClientOptions& options);
RedisEndpoint make_endpoint(const RedisClientOptions& options, std::shared_ptr<TlsContext> tls, std::string host,
                            int port, std::string name);
CircuitOptions circuit_of(const RedisClientOptions& options);

// "user:***@" (or "") and "?timeout=..ms&...": the parts of describe() every Redis store shares. The password
// never appears.
std::string describe_auth(const RedisClientOptions& options);
std::string describe_query(const RedisClientOptions& options);
std::string describe_host(const std::string& host, int port);

}  // namespace ratewarden
