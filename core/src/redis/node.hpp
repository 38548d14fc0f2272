// One Redis server as the stores see it: a pool of connections behind a circuit breaker (net/circuit.hpp: the calls
// that fail for want of the server count) (internal). Made on any thread, used and destroyed on the I/O thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "connection.hpp"
#include "endpoint.hpp"
#include "io/io_loop.hpp"
#include "net/circuit.hpp"
#include "net/pool.hpp"

namespace ratewarden {

class RedisNode final : public ConnectionListener, public Deadlines {
 public:
  // `retry_dropped`: a request whose connection died before a byte of it was written is sent once more on a fresh
  // one (the server cannot have run it); a Sentinel master's requests are not: that store re-routes them itself, to
  // wherever the master is now (sentinel_client.hpp).
  RedisNode(IoLoop& loop, RedisEndpoint endpoint, int pool, CircuitOptions circuit, bool retry_dropped = true);
  ~RedisNode() override;

  // Sends the request on one of the node's connections; request->owner is told when it is done.
  void send(RedisRequest* request);
  // Fails every request in flight (the store is closing) and closes the connections.
  void close(const std::string& message);
  const std::string& name() const { return endpoint_.name; }

  void on_reply(RedisRequest* request) override;
  void on_failure(RedisRequest* request, bool server_failed, bool unsent) override;
  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;

 private:
  bool circuit_lets_through(RedisRequest* request);
  std::string without_name(const std::string& message) const;

  IoLoop& loop_;
  const RedisEndpoint endpoint_;
  Circuit circuit_;
  Pool<RedisConnection, false> pool_;
  const bool retry_dropped_;
  bool closing_ = false;
  bool watched_ = false;  // registered with the loop's deadlines
};

}  // namespace ratewarden
