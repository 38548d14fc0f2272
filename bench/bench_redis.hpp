// The Redis of a benchmark: REDIS_URL's (redis://host:port) when set, else a redis-server of its own from
// tests/servers/launch.py (test_servers), gone with the process however it ends.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "redis_server.hpp"  // tests/core

struct BenchRedis {
  std::string host = "127.0.0.1";
  int port = 0;
  std::optional<ratewarden::testing::RedisServer> server;  // ours, unless REDIS_URL is set

  BenchRedis() {
    if (const char* url = std::getenv("REDIS_URL")) {
      const std::string u = url;
      const size_t colon = u.rfind(':');
      host = u.substr(8, colon - 8);
      port = std::atoi(u.c_str() + colon + 1);
    } else {
      server.emplace();
      port = server->port();
    }
  }
  BenchRedis(const BenchRedis&) = delete;
  BenchRedis& operator=(const BenchRedis&) = delete;
};
