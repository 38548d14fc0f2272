#include "node.hpp"

namespace ratewarden {

RedisNode::RedisNode(IoLoop& loop, RedisEndpoint endpoint, int pool, CircuitOptions circuit, bool retry_dropped)
    : loop_(loop), endpoint_(std::move(endpoint)), circuit_(circuit), retry_dropped_(retry_dropped) {
  for (int i = 0; i < pool; ++i) pool_.add(std::make_unique<RedisConnection>(loop_, endpoint_, *this));
}

RedisNode::~RedisNode() {
  if (watched_) loop_.remove_deadlines(this);
}

void RedisNode::send(RedisRequest* request) {
  if (!watched_) {  // here, on the I/O thread: a node may be made on any thread
    watched_ = true;
    loop_.add_deadlines(this);
  }
  if (request->deadline_us <= loop_.now_us()) {
    request->fail(ErrorCode::store_timeout, endpoint_.name + ": no reply within the timeout");
    request->owner->on_done(*request);
    return;
  }
  if (!circuit_lets_through(request)) return;
  pool_.pick(request->batch).send(request);
}

bool RedisNode::circuit_lets_through(RedisRequest* request) {
  const int64_t now = loop_.now_us();
  if (circuit_.lets_through(now, request->probe)) return true;
  request->fail(ErrorCode::store_unavailable, endpoint_.name + ": " + circuit_.refusal(now));
  request->owner->on_done(*request);
  return false;
}

void RedisNode::on_reply(RedisRequest* request) {
  circuit_.answered();
  request->probe = false;
  request->owner->on_done(*request);
}

// What a failure's message says after the node's name.
std::string RedisNode::without_name(const std::string& message) const {
  return message.rfind(endpoint_.name + ": ", 0) == 0 ? message.substr(endpoint_.name.size() + 2) : message;
}

void RedisNode::on_failure(RedisRequest* request, bool server_failed, bool unsent) {
  const bool probe = request->probe;
  request->probe = false;
  if (probe && server_failed) circuit_.failed(loop_.now_us(), true, without_name(request->error_message));
  else if (probe) circuit_.probe_ended();
  // A request that never left (its connection died before a byte of it was written: connection.hpp) gets one more
  // chance on a fresh connection, within its deadline, unless the node's owner re-routes such requests itself (the
  // Sentinel store: the master may have moved). One that was written is never sent again: the server may have run
  // it, and a second run would charge twice (docs/deployment.md, "A hostile network").
  if (unsent && retry_dropped_ && !request->retried && !closing_) {
    request->retried = true;
    request->clear_result();
    send(request);
    return;
  }
  if (server_failed && !probe) circuit_.failed(loop_.now_us(), false, without_name(request->error_message));
  request->owner->on_done(*request);
}

void RedisNode::close(const std::string& message) {
  closing_ = true;
  pool_.fail_all(ErrorCode::store_unavailable, endpoint_.name + ": " + message);
}

int64_t RedisNode::next_deadline_us() const { return pool_.next_deadline_us(); }

void RedisNode::expire(int64_t now_us) { pool_.expire(now_us); }

}  // namespace ratewarden
