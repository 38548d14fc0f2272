// Real redis-server processes for the tests: started on a free loopback port in a fresh directory, stopped by PID.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <hiredis/hiredis.h>

namespace ratewarden::testing {

class RedisServer {
 public:
  // Extra redis-server arguments, e.g. {"--requirepass", "secret"}. A cluster node also needs port + 10000 free
  // (its cluster bus).
  explicit RedisServer(std::vector<std::string> args = {}, bool cluster_node = false);
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

// Three masters on loopback in fresh directories, joined by `redis-cli --cluster create`; stopped on destruction.
class RedisCluster {
 public:
  RedisCluster();
  std::string url() const;  // redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
  RedisServer& node(size_t i) { return *nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // The index of the master serving `key`'s slot, and each master's node id.
  size_t master_of(const std::string& key) const;
  std::string node_id(size_t i) const;

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace ratewarden::testing
