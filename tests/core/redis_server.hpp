// Real redis-server processes for the tests: started on a free loopback port in a fresh directory, stopped by PID.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <hiredis/hiredis.h>

namespace ratewarden::testing {

class RedisServer {
 public:
  // Extra redis-server arguments, e.g. {"--requirepass", "secret"}.
  explicit RedisServer(std::vector<std::string> args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  void start();  // on the same port as before; waits until it answers PING
  void kill();   // SIGKILL: the abrupt death of a server
  bool running() const { return pid_ > 0; }

  // An admin command on a fresh connection; returns the reply as text (arrays joined by '\n'). Throws on failure.
  std::string command(const std::vector<std::string>& args, const std::string& password = "") const;

 private:
  std::vector<std::string> args_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A loopback TCP port nobody listens on right now.
int free_port();

}  // namespace ratewarden::testing
