// ratewarden-server's command line and environment (internal).
#pragma once

#include <cstdint>
#include <string>

#include "rls_service.hpp"
#include "tls.hpp"

namespace ratewarden::server {

struct ServerOptions {
  std::string config = "/etc/ratewarden";  // --config, RATEWARDEN_CONFIG
  std::string store = "memory://";         // --store, RATEWARDEN_STORE
  std::string grpc_listen = "0.0.0.0:8081";  // --grpc-listen, RATEWARDEN_GRPC_LISTEN (envoyproxy/ratelimit's port)
  std::string http_listen = "0.0.0.0:8080";  // --http-listen, RATEWARDEN_HTTP_LISTEN ("off": none)
  std::string metrics_listen;  // --metrics-listen, RATEWARDEN_METRICS_LISTEN: /metrics, /healthcheck, plaintext
  TlsOptions tls;              // --tls-cert, --tls-key, --tls-client-ca, --tls-refresh-s (RATEWARDEN_TLS_*)
  int64_t max_message_bytes = 1 << 20;     // --max-message-bytes: a bigger request is refused RESOURCE_EXHAUSTED
  int64_t max_concurrent_streams = 1000;   // --max-concurrent-streams, per connection
  int64_t drain_ms = 5000;                 // --drain-timeout-ms: how long calls in flight may take at SIGTERM
  ServiceOptions service;  // --max-descriptors, --max-entries, --max-in-flight, --no-limit-headers
  bool help = false;
};

extern const char* const kUsage;

// Throws InvalidArgument naming the flag or variable and what it takes.
ServerOptions parse_options(int argc, char** argv);

}  // namespace ratewarden::server
