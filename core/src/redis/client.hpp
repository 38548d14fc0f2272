// What the Redis stores share: the I/O-thread side of a store (one per process: a forked child makes its own,
// net/client_holder.hpp), and the exchanges that turn a store call into requests and their replies into the
// caller's answer (internal).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/io_loop.hpp"
#include "net/client_holder.hpp"
#include "ratewarden/store.hpp"
#include "request.hpp"

namespace ratewarden {

// Lives on the I/O thread: routes requests to servers.
class RedisClient {
 public:
  virtual ~RedisClient() = default;
  virtual void route(RedisRequest* request) = 0;
  // The store is closing: fail everything in flight, close the connections, and fail what is routed later.
  virtual void close() = 0;
};

// The client of the calling process; requests are submitted with their owner and deadline set.
using RedisClientHolder = ClientHolder<RedisClient, RedisRequest>;
// How a request of a closed store fails: at once, back to its owner.
void reject_request(RedisRequest* request, const std::string& message);

// Turns one store call into requests and their replies into the caller's answer; deletes itself when done.
class Exchange final : public RequestOwner {
 public:
  // Reads a request's reply into a decision; throws StoreError for an error or anything unexpected.
  using Reader = Decision (*)(const RedisRequest& request, const std::string& name);

  static Exchange* for_decision(DecisionCallback done);
  static Exchange* for_decisions(size_t n, DecisionsCallback done);
  // A command whose answer is only "done": a reply of `reply_type` (REDIS_REPLY_INTEGER for DEL, _STATUS for PING).
  static Exchange* for_done(DoneCallback done, int reply_type);
  // A command whose reply the caller reads: done(reply, nullptr) — the reply valid during the call, never an error
  // reply — or done(nullptr, error).
  using ReplyCallback = std::function<void(const redisReply* reply, const Error* error)>;
  static Exchange* for_reply(ReplyCallback done);

  RedisRequest& request(size_t i) { return requests_[i]; }
  size_t size() const { return requests_.size(); }
  // Owner and deadline of every request (now + timeout), and the name for messages.
  std::vector<RedisRequest*> prepare(int64_t timeout_us, std::string name);

  void on_done(RedisRequest& request) override;

 private:
  explicit Exchange(size_t n) : requests_(n), left_(n) {}
  void finish();

  std::vector<RedisRequest> requests_;
  size_t left_;
  std::string name_;
  DecisionCallback one_;
  DecisionsCallback many_;
  DoneCallback done_;
  ReplyCallback reply_;
  int reply_type_ = 0;
};

}  // namespace ratewarden
