// One command on its way to a Redis server and back (internal). Requests live on the I/O thread once sent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <hiredis/hiredis.h>

#include "ratewarden/errors.hpp"
#include "ratewarden/decision.hpp"
#include "ratewarden/policy.hpp"

namespace ratewarden {

using ReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

struct RedisRequest;

// Told once when a request is done: it has a reply, or an error in error / error_message.
class RequestOwner {
 public:
  virtual ~RequestOwner() = default;
  virtual void on_done(RedisRequest& request) = 0;
};

struct RedisRequest {
  std::string command;  // RESP
  // For script calls: the body to send with EVAL when the server answers NOSCRIPT, the argument count, and where
  // the arguments after the SHA start in `command`.
  const std::string* script = nullptr;
  size_t argc = 0;
  size_t args_offset = 0;
  // A script call: the first policy, the cost and the mode, what its short replies leave out (commands.cpp,
  // to_decision); with several policies, all of them (their one-integer reply names the policy it reports on).
  Policy policy;
  std::vector<Policy> policies;
  int64_t cost = 0;
  Mode mode = Mode::hit;

  ReplyPtr reply{nullptr, freeReplyObject};
  ErrorCode error = ErrorCode::internal;
  std::string error_message;  // empty when a reply arrived

  // On the I/O thread.
  RequestOwner* owner = nullptr;
  RequestOwner* next_owner = nullptr;  // cluster: the exchange, told once the router is done with the request
  int64_t deadline_us = 0;  // fails with a timeout if not answered by then
  const void* batch = nullptr;  // the calls of one hit_many: their exchange (node.cpp keeps them on one connection)
  int slot = -1;            // cluster: the slot of its keys
  int redirections = 0;     // cluster: MOVED / ASK / TRYAGAIN followed so far
  bool asking = false;      // cluster ASK: preceded by ASKING on the same connection, and sent with its body
  bool as_eval = false;     // NOSCRIPT was answered: send EVAL with the body
  uint64_t wire_at = 0;     // where its bytes start in its connection's output (connection.cpp)
  bool retried = false;     // already sent again once after its connection died before it was written
  bool written = false;     // handed to a connection's output: the server may have run it
  bool probe = false;       // the one call let through a half-open circuit

  bool failed() const { return !error_message.empty(); }
  void fail(ErrorCode code, std::string message) {
    reply.reset();
    error = code;
    error_message = std::move(message);
  }
  // Makes the request ready to be sent again (after a cluster redirection).
  void clear_result() {
    reply.reset();
    error = ErrorCode::internal;
    error_message.clear();
  }
};

}  // namespace ratewarden
