// What the Redis stores share: the I/O-thread side of a store (one per process: a forked child makes its own), and
// the exchanges that turn a store call into requests and their replies into the caller's answer (internal).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/io_loop.hpp"
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

// The client of the calling process: made on first use, and again in a forked child, which never touches what
// the parent's client holds (its sockets were closed by the fork handler, its memory is left as it is).
class ClientHolder {
 public:
  using Factory = std::function<std::unique_ptr<RedisClient>(IoLoop& loop)>;
  ClientHolder(Factory factory, std::string name)
      : factory_(std::move(factory)), closed_message_(std::move(name) + ": the store was closed") {}
  ~ClientHolder();  // closes this process's client on its loop

  // Sends the requests (their owner and deadline set) to the client, on the loop thread; after close(), fails
  // them at once.
  void submit(std::vector<RedisRequest*> requests);
  void submit(RedisRequest* request);
  // Closes this process's client: its calls in flight fail, and so do later ones.
  void close();

 private:
  struct Generation {
    uint64_t fork_generation;
    IoLoop* loop;
    RedisClient* client;
  };
  Generation* current();
  RedisClient* dispatch_now(RedisRequest* const* requests, size_t n, IoLoop*& loop);

  Factory factory_;
  std::atomic<Generation*> current_{nullptr};
  std::atomic<bool> closed_{false};
  std::string closed_message_;  // set before closed_
};

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
