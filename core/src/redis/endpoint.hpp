// Where and how to reach one Redis server (internal).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ratewarden {

class CallMetrics;

class TlsContext;

struct RedisEndpoint {
  std::string host;       // empty for a Unix socket
  int port = 6379;
  std::string unix_path;  // redis+unix://
  std::string user;
  std::optional<std::string> password;
  int db = 0;
  int64_t connect_timeout_us = 1000000;
  int64_t timeout_us = 250000;
  std::shared_ptr<TlsContext> tls;  // rediss://: null for plain TCP
  std::string tls_sni;              // the name to send and to verify; the host when empty
  std::string name;                 // the URL with its password masked, for messages
  std::shared_ptr<CallMetrics> metrics;  // the store's figures: its connections count there
};

}  // namespace ratewarden
