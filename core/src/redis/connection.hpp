// One pipelined connection to a Redis server (internal).
//
// Callers queue their commands; whichever caller finds the connection idle becomes the leader: it takes every queued
// command (its own and other callers'), writes them in one batch, reads the replies in order and hands them out. So
// concurrent callers share write and read syscalls, and a lone caller pays one round trip with no thread hop.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <hiredis/hiredis.h>

#include "ratewarden/errors.hpp"

namespace ratewarden {

struct RedisEndpoint {
  std::string host;
  int port = 6379;
  std::string user;
  std::optional<std::string> password;
  int db = 0;
  int64_t connect_timeout_us = 1000000;
  int64_t timeout_us = 1000000;
  std::string name;  // the URL with its password masked, for messages
};

using ReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

struct RedisRequest {
  std::string command;  // RESP
  // For script calls: the body to send with EVAL when the server answers NOSCRIPT, the argument count, and where
  // the arguments after the SHA start in `command`.
  const std::string* script = nullptr;
  size_t argc = 0;
  size_t args_offset = 0;
  // Send EVAL with the body at once: after ASKING, a NOSCRIPT retry would arrive without it.
  bool send_body = false;

  ReplyPtr reply{nullptr, freeReplyObject};
  ErrorCode error = ErrorCode::internal;
  std::string error_message;  // empty when a reply arrived
  bool done = false;          // guarded by the connection's mutex
  std::condition_variable* waiter = nullptr;  // whom to wake when done (the caller of execute)

  // Makes the request ready to be sent again (after a cluster redirection).
  void clear_result() {
    reply.reset();
    error = ErrorCode::internal;
    error_message.clear();
    done = false;
  }
};

class RedisConnection {
 public:
  explicit RedisConnection(const RedisEndpoint& endpoint) : endpoint_(endpoint) {}
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends the requests in one pipeline (shared with other callers') and waits for their replies or errors.
  void execute(RedisRequest* const* requests, size_t n);

 private:
  void run_batch(const std::vector<RedisRequest*>& batch);
  bool connect(ErrorCode& code, std::string& message);
  bool send_all(const std::string& data, ErrorCode& code, std::string& message);
  bool exchange(const std::vector<RedisRequest*>& batch, bool as_eval);
  void drop_connection();

  const RedisEndpoint& endpoint_;
  std::mutex mu_;
  std::vector<RedisRequest*> queue_;
  bool busy_ = false;
  redisContext* ctx_ = nullptr;  // used only by the current leader
};

}  // namespace ratewarden
