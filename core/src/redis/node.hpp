// One Redis server as the stores see it: a pool of connections behind a circuit breaker (internal). Made on any
// thread, used and destroyed on the I/O thread.
//
// The circuit: after `failures` calls in a row fail for want of the server (refused, cut, silent for a whole
// timeout — neither an error reply nor a call that ran out of time behind others on a busy server counts), it opens: calls fail at once for `backoff`; then one call is let through as a probe, and
// its answer closes the circuit again, or its failure opens it for another `backoff`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "connection.hpp"
#include "endpoint.hpp"
#include "io/io_loop.hpp"

namespace ratewarden {

struct CircuitOptions {
  int failures = 3;             // 0: never open
  int64_t backoff_us = 1000000;
};

class RedisNode final : public ConnectionListener, public Deadlines {
 public:
  RedisNode(IoLoop& loop, RedisEndpoint endpoint, int pool, CircuitOptions circuit);
  ~RedisNode() override;

  // Sends the request on one of the node's connections; request->owner is told when it is done.
  void send(RedisRequest* request);
  // Fails every request in flight (the store is closing) and closes the connections.
  void close(const std::string& message);
  const std::string& name() const { return endpoint_.name; }

  void on_reply(RedisRequest* request) override;
  void on_failure(RedisRequest* request, bool server_failed, bool after_use) override;
  int64_t next_deadline_us() const override;
  void expire(int64_t now_us) override;

 private:
  bool circuit_lets_through(RedisRequest* request);

  IoLoop& loop_;
  const RedisEndpoint endpoint_;
  const CircuitOptions circuit_;
  std::vector<std::unique_ptr<RedisConnection>> connections_;
  size_t next_ = 0;
  const void* batch_ = nullptr;                  // the batch of the last request sent (RedisRequest::batch)
  RedisConnection* batch_connection_ = nullptr;  // and its connection
  int failures_ = 0;
  int64_t open_until_us_ = 0;  // 0: closed
  bool probe_in_flight_ = false;
  std::string last_failure_;
  bool closing_ = false;
  bool watched_ = false;  // registered with the loop's deadlines
};

}  // namespace ratewarden
